--
-- Bytes from servers that are not valid text: invalid UTF-8, Latin-1 and
-- raw bytes in a Location, in header names and values, in a reason phrase,
-- in a Content-Type, in bodies.  None reaches the database as it is: text
-- gets U+FFFD, URLs are percent-encoded.  Each result and audit row is
-- checked with qc_test.valid(), then stored in a table and read back.
-- (test/hostile_dump.sh dumps and restores such rows with pg_dump.)
--
-- Also: the headers object is built in linear time, keeps at most 1000
-- headers (saying how many it dropped), and a cancel lands while it is
-- built.
--
SELECT qc_test.audit_flush() AS flushed;
SELECT coalesce(max(id), 0) AS audit_mark FROM queryclaw.audit_log \gset

-- Is t valid in the database encoding?  convert_to() checks it.
CREATE FUNCTION qc_test.valid(t text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM convert_to(t, current_setting('server_encoding'));
    RETURN true;
EXCEPTION WHEN character_not_in_repertoire THEN
    RETURN false;
END
$$;

-- a redirect whose Location holds raw bytes: followed, percent-encoded
SELECT r->'status' AS status, qc_test.scrub(r->>'url') AS final_url,
       r->>'body' AS body, qc_test.valid(r::text) AS valid
  FROM queryclaw.api_call(qc_test.url('/hostile/location')) AS r;
SELECT qc_test.scrub(queryclaw.web_fetch(qc_test.url('/hostile/location'))) AS fetched;
-- to a host name with a raw byte: an error, in valid text
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hostile/location-host'))$$) AS bad_host;

-- header names and values with invalid bytes
SELECT h.key, h.value, qc_test.valid(h.key) AND qc_test.valid(h.value) AS valid
  FROM queryclaw.api_call(qc_test.url('/hostile/headers')) AS r,
       jsonb_each_text(r->'headers') AS h
 WHERE h.key LIKE 'x-bad%' ORDER BY h.key;

-- a NUL byte in a header value (libcurl's reason, "Nul byte" up to 8.14,
-- "NUL byte" in 8.23)
SELECT replace(qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/hostile/nul-header'))$$),
               'Nul byte', 'NUL byte') AS nul_header;

-- a reason phrase with invalid bytes
SELECT r->'status' AS status, r->>'body' AS body, qc_test.valid(r::text) AS valid
  FROM queryclaw.api_call(qc_test.url('/hostile/reason')) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hostile/reason'))$$) AS reason;

-- a Content-Type with invalid bytes: in the result and in an error
SELECT r->>'content_type' AS content_type, qc_test.valid(r::text) AS valid
  FROM queryclaw.api_call(qc_test.url('/hostile/content-type')) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hostile/content-type'))$$) AS content_type;

-- JSON and an error page with invalid UTF-8
SELECT r->'body' AS body, qc_test.valid(r::text) AS valid
  FROM queryclaw.api_call(qc_test.url('/hostile/json')) AS r;
SELECT queryclaw.web_fetch(qc_test.url('/hostile/json'), 'json') AS json;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hostile/error-page'))$$) AS error_page;

-- a model told about them through a tool: the tool results are valid too
SELECT r->>'answer' AS answer, qc_test.valid(r::text) AS valid
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/hostile/content-type'),
                                '{web_fetch}') AS r;

-- all of it stored in a table and read back
CREATE TABLE qc_test.hostile AS
SELECT p AS path, queryclaw.api_call(qc_test.url('/hostile/' || p)) AS r
  FROM unnest(ARRAY['location', 'headers', 'reason', 'content-type', 'json', 'error-page']) AS p;
SELECT count(*) AS stored, bool_and(qc_test.valid(r::text)) AS valid FROM qc_test.hostile;

-- and their audit rows
SELECT qc_test.audit_flush() AS flushed;
SELECT count(*) AS audited,
       bool_and(qc_test.valid(concat_ws(' ', url, final_url, reason, detail::text))) AS valid
  FROM queryclaw.audit_log WHERE id > :audit_mark;
SELECT func, outcome, qc_test.scrub(final_url) AS final_url, qc_test.scrub(reason) AS reason
  FROM queryclaw.audit_log
 WHERE id > :audit_mark AND url LIKE '%/hostile/%' AND func <> 'llm'
   AND (outcome <> 'ok' OR final_url LIKE '%hello%')
 ORDER BY id;

-- the batch functions' rows too
SELECT count(*) AS fetched, bool_and(qc_test.valid(concat_ws(' ', url, content, error))) AS valid
  FROM queryclaw.web_fetch_many(ARRAY(SELECT qc_test.url('/hostile/' || p)
         FROM unnest(ARRAY['location', 'location-host', 'headers', 'nul-header', 'reason',
                           'content-type', 'json', 'error-page']) AS p));
SELECT count(*) AS called, bool_and(qc_test.valid(concat_ws(' ', url, response::text, error))) AS valid
  FROM queryclaw.api_call_many((SELECT jsonb_agg(jsonb_build_object('url', qc_test.url('/hostile/' || p)))
         FROM unnest(ARRAY['location', 'location-host', 'headers', 'nul-header', 'reason',
                           'content-type', 'json', 'error-page']) AS p));

-- 4,000 headers with distinct names (libcurl 8 refuses more than 5,000):
-- 1000 are kept, the result says how many were dropped
SELECT r->'truncated' AS truncated, r->'headers_dropped' AS dropped,
       (SELECT count(*) FROM jsonb_object_keys(r->'headers')) AS kept,
       r->'headers' ? 'h0' AS first_kept, r->'headers' ? 'h3e7' AS thousandth_kept,
       r->'headers' ? 'h3e8' AS next_dropped, r->>'body' AS body
  FROM queryclaw.api_call(qc_test.url('/hostile/many-headers?n=4000')) AS r;
-- and a cancel lands while they are read
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop(format('SELECT count(queryclaw.api_call(%L)) FROM generate_series(1, 500)',
       qc_test.url('/hostile/many-headers?n=4000'))) AS many_headers;
RESET statement_timeout;
