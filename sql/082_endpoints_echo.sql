--
-- Endpoints: a key the server echoes back.  A role with only USAGE on a
-- server whose user mapping is FOR PUBLIC may send the key but not read it
-- (pg_user_mappings shows it NULL), so it must not read it back from what
-- the server echoes either, in any form a server writes it: the header
-- value whole, its words alone (the token after "Bearer ") or spaced
-- otherwise, percent-encoded; Basic credentials decoded; a query value
-- raw, decoded, re-encoded with upper or lower case %XX or '+' for a
-- space; in the body, a response header, an error's message and DETAIL
-- (and so the server log), the batch functions' rows, the queue's result
-- and error and what a callback is given, the audit rows, and the tool
-- results a model is shown.  The fixture's /mirror/<status>/<form> echoes
-- the request in one form (all: every form).
--
-- Each secret is a word no other rule would hide (not shaped like a
-- token, under a name that does not look secret where it can); a word of
-- fewer than 8 characters is not searched for ("acct", "realm", "Bearer").
--
CREATE ROLE qc_echo;
GRANT USAGE ON SCHEMA qc_test TO qc_echo;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.web_fetch(text, text, integer, text),
    queryclaw.api_call_many(jsonb, integer),
    queryclaw.web_fetch_many(text[], text, integer),
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
    queryclaw.llm_chat_tools(jsonb, text[], text, integer, jsonb),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.wait(bigint[], interval)
    TO qc_echo;

DO $$
BEGIN
    EXECUTE format('CREATE SERVER fx_mirror FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   qc_test.url('/mirror'));
    EXECUTE format('CREATE SERVER fx_mirror_basic FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   qc_test.url('/mirror/401/basic'));
END
$$;
-- X-Account's name does not look secret; pk+live/7788aa needs encoding;
-- the Basic credentials are mirroruser:hunter2hunter
CREATE USER MAPPING FOR PUBLIC SERVER fx_mirror
  OPTIONS (headers '{"Authorization": "Bearer k7pubtoken91", "X-Account": "acct quietword7 realm",
                     "X-Api-Key": "pk+live/7788aa"}',
           query 'apikey=kq%2Fslash77&label=two+words99&v=2');
CREATE USER MAPPING FOR PUBLIC SERVER fx_mirror_basic
  OPTIONS (headers '{"Authorization": "Basic bWlycm9ydXNlcjpodW50ZXIyaHVudGVy"}');
GRANT USAGE ON FOREIGN SERVER fx_mirror, fx_mirror_basic TO qc_echo;

-- Which parts of the secrets a text holds ('none': not one).
CREATE FUNCTION pg_temp.leaks(t text) RETURNS text LANGUAGE sql
AS $$ SELECT coalesce(string_agg(k, ', '), 'none')
        FROM unnest(ARRAY['pubtoken', 'quietword', '7788aa', 'slash77', 'words99',
                          'mirroruser', 'hunter2', 'bWlycm9y']) AS k
       WHERE t LIKE '%' || k || '%' $$;

SELECT qc_test.audit_flush();
SELECT coalesce(max(id), 0) AS audit_mark FROM queryclaw.audit_log \gset

SET ROLE qc_echo;
-- the role cannot read the keys
SELECT srvname, umoptions FROM pg_user_mappings WHERE srvname LIKE 'fx_mirror%' ORDER BY 1;

-- api_call: the body, in every form, and the response headers
SELECT r->>'status' AS status, r->>'body' AS body, qc_test.scrub(r->>'url') AS url
  FROM queryclaw.api_call(qc_test.url('/mirror/200/all')) AS r;
SELECT h.key, h.value
  FROM queryclaw.api_call(qc_test.url('/mirror/200/words')) AS r,
       jsonb_each_text(r->'headers') AS h
 WHERE h.key LIKE 'x-mirror%' ORDER BY 1;
SELECT pg_temp.leaks(r::text) AS leaks, r->>'body' AS body
  FROM queryclaw.api_call(qc_test.url('/mirror/401/basic')) AS r;
-- every form again in UTF-16, and in HTML with character references
-- ("pk&#43;live&#x2F;7788aa"): found as the bytes are, and in the text
-- they convert to
SELECT f AS form, pg_temp.leaks(r::text) AS leaks,
       (length(r->>'body') - length(replace(r->>'body', 'REDACTED', ''))) / length('REDACTED') AS redacted
  FROM unnest(ARRAY['utf16', 'html']) AS f, queryclaw.api_call(qc_test.url('/mirror/200/' || f)) AS r;
SELECT f AS form, fmt AS format, pg_temp.leaks(t) AS leaks,
       (length(t) - length(replace(t, 'REDACTED', ''))) / length('REDACTED') AS redacted,
       substring(t FROM 'header Authorization: [^\n]*') AS authorization
  FROM unnest(ARRAY['utf16', 'html']) AS f, unnest(ARRAY['raw', 'text', 'markdown']) AS fmt,
       queryclaw.web_fetch(qc_test.url('/mirror/200/' || f), fmt) AS t
 ORDER BY 1, 2;

-- web_fetch's error: the message, and the DETAIL that quotes the body
SELECT f AS form, qc_test.try(format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/mirror/401/' || f))) AS error
  FROM unnest(ARRAY['header', 'words', 'spaced', 'header-encoded', 'query-raw', 'query-decoded',
                    'query-upper', 'query-lower', 'query-plus', 'query-partial', 'basic']) AS f;

-- the batch functions' rows
SELECT ord, status, pg_temp.leaks(content) AS leaks, pg_temp.leaks(error) AS error_leaks
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/mirror/200/all'), qc_test.url('/mirror/401/all'),
                                      qc_test.url('/mirror/401/basic')], 'raw');
SELECT ord, (response->>'status')::int AS status, pg_temp.leaks(response::text) AS leaks,
       position('REDACTED' IN response::text) > 0 AS redacted
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/mirror/200/all')),
         jsonb_build_object('url', qc_test.url('/mirror/401/all')),
         jsonb_build_object('url', qc_test.url('/mirror/401/basic'))));
RESET ROLE;

-- The queue: what is stored (requests.result, requests.error) and what a
-- callback is given
CREATE TABLE qc_echo_seen (id bigint, result jsonb, error text, context jsonb);
GRANT INSERT ON qc_echo_seen TO qc_echo;
CREATE FUNCTION qc_echo_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS $$ INSERT INTO qc_echo_seen VALUES (id, result, error, context) $$;
REVOKE EXECUTE ON FUNCTION qc_echo_note(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION qc_echo_note(bigint, jsonb, text, jsonb) TO qc_echo;
SET ROLE qc_echo;
SELECT array_agg(id ORDER BY id) AS ids FROM (VALUES
    (queryclaw.api_call_async(qc_test.url('/mirror/200/all'), callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.api_call_async(qc_test.url('/mirror/401/all'), callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.api_call_async(qc_test.url('/mirror/401/basic'), callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.web_fetch_async(qc_test.url('/mirror/200/all'), 'raw', callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.web_fetch_async(qc_test.url('/mirror/401/all'), callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.web_fetch_async(qc_test.url('/mirror/401/basic'), callback => 'qc_echo_note(bigint,jsonb,text,jsonb)')),
    (queryclaw.llm_chat_tools_async('SCENARIO:told URL:' || qc_test.url('/mirror/401/all'), '{api_call,web_fetch}',
                                    callback => 'qc_echo_note(bigint,jsonb,text,jsonb)'))
  ) AS q(id) \gset
SELECT func, state, pg_temp.leaks(result::text) AS result_leaks, pg_temp.leaks(error) AS error_leaks,
       position('REDACTED' IN coalesce(result::text, '') || coalesce(error, '')) > 0 AS redacted
  FROM queryclaw.wait(:'ids') ORDER BY id;
RESET ROLE;
SELECT qc_test.wait_until('(SELECT count(*) FROM qc_echo_seen) = 7') AS callbacks_ran;
SELECT count(*) AS callbacks, pg_temp.leaks(string_agg(s::text, ' ')) AS leaks,
       count(*) FILTER (WHERE s::text LIKE '%REDACTED%') AS redacted
  FROM qc_echo_seen s;
SELECT count(*) AS stored, pg_temp.leaks(string_agg(r::text, ' ')) AS leaks,
       count(*) FILTER (WHERE r::text LIKE '%REDACTED%') AS redacted
  FROM queryclaw.requests r WHERE r.role = 'qc_echo'::regrole;
-- the error of a web_fetch_async as stored
SELECT split_part(qc_test.scrub(error), E'\n', 1) AS error FROM queryclaw.requests
 WHERE role = 'qc_echo'::regrole AND func = 'web_fetch_async' AND state = 'failed' ORDER BY id LIMIT 1;

-- A model's tool calls: what the model is shown (the scripted model
-- answers with it), the tool calls and the conversation returned
SET ROLE qc_echo;
SELECT pg_temp.leaks(r::text) AS leaks, position('REDACTED' IN r->>'answer') > 0 AS redacted,
       jsonb_array_length(r->'tool_calls') AS tool_calls
  FROM queryclaw.llm_chat_tools('SCENARIO:told URL:' || qc_test.url('/mirror/401/all'),
                                '{api_call,web_fetch}') AS r;
SELECT pg_temp.leaks(r::text) AS leaks,
       jsonb_path_query_array(r->'messages', '$[*].role') AS roles
  FROM queryclaw.llm_chat_tools(jsonb_build_array(jsonb_build_object('role', 'user', 'content',
                                  'SCENARIO:told URL:' || qc_test.url('/mirror/200/all'))),
                                '{api_call,web_fetch}') AS r;
RESET ROLE;

-- the audit rows of all this
SELECT qc_test.audit_flush();
SELECT count(*) > 20 AS rows, pg_temp.leaks(string_agg(a::text, ' ')) AS leaks
  FROM queryclaw.audit_log a WHERE a.id > :audit_mark;

-- An error raised to the client is in the server log too, DETAIL and all
\set VERBOSITY sqlstate
SET ROLE qc_echo;
SELECT queryclaw.web_fetch(qc_test.url('/mirror/401/all'));
SELECT queryclaw.web_fetch(qc_test.url('/mirror/401/basic'));
RESET ROLE;
\set VERBOSITY default
SELECT l LIKE '%HTTP status 401 from %/mirror/401/basic%' AS logged, pg_temp.leaks(l) AS leaks
  FROM pg_read_file(current_setting('unix_socket_directories') || '/postgres.log') AS l;

DROP SERVER fx_mirror, fx_mirror_basic CASCADE;
DROP TABLE qc_echo_seen;
DROP FUNCTION qc_echo_note(bigint, jsonb, text, jsonb);
DROP OWNED BY qc_echo;
DROP ROLE qc_echo;
