--
-- The audit log: one row per attempt, secrets redacted.
--
-- The test cluster preloads the library and its audit worker writes into
-- this database: rows are committed by the worker a moment after each
-- call, so the tests wait for it (qc_test.audit_flush) before they read.
SELECT durable, database FROM queryclaw.audit_status();
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
SELECT (queryclaw.api_call(qc_test.url('/status/404')))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/chain/2')))->'status' AS status;
-- a 3xx that is not followed is not ok: api_call says so, and so does its row
SELECT r->'status' AS status, r->'ok' AS ok
  FROM queryclaw.api_call(qc_test.url('/status/304')) AS r;
SELECT length(queryclaw.web_fetch(qc_test.url('/hello'), max_chars => 3)) AS chars;

SELECT qc_test.audit_flush();
SELECT role = current_user AS own_role, pid = pg_backend_pid() AS own_pid,
       func, method, qc_test.scrub(url) AS url, qc_test.scrub(final_url) AS final_url,
       status, outcome, reason, bytes, chars, truncated,
       elapsed_ms >= 0 AS timed, query IS NOT NULL AS has_query, detail->'redirects' AS redirects
  FROM queryclaw.audit_log ORDER BY id;

-- secrets never reach the log: userinfo, secret-looking query parameters,
-- Authorization, Cookie and key/token headers
TRUNCATE queryclaw.audit_log;
SELECT (queryclaw.api_call(
    replace(qc_test.url('/echo'), 'http://', 'http://alice:pa55word@')
      || '?q=shoes&api_key=K123&access_token=T456&X-Amz-Signature=S789&keyword=red#frag',
    headers => '{"Authorization": "Bearer s3cret", "Cookie": "sid=1", "X-Api-Key": "k", "X-Auth-Token": "t", "Accept": "text/plain"}'
  ))->'status' AS status;
SELECT qc_test.audit_flush();
SELECT qc_test.scrub(url) AS url, detail->'request_headers' AS headers
  FROM queryclaw.audit_log;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE (url || coalesce(final_url, '') || detail::text || query) ~ '(pa55word|K123|T456|S789|s3cret|sid=1)';

-- nor do secrets written into the statement itself, which audit_query
-- stores: userinfo and secret parameters in URLs and in parts of URLs,
-- and quoted values after secret-looking quoted names, escaped quotes
-- included (the rule errs on the side of hiding: "author" contains "auth")
TRUNCATE queryclaw.audit_log;
SELECT (queryclaw.api_call('http://bob:hunter22@127.0.0.1:' || current_setting('qc_test.port')
    || '/echo?q=1&token=T999&keyword=red',
    headers => jsonb_build_object('X-Api-Key', 'K7''xq', 'Accept', 'text/plain')
               || '{"Authorization": "Bearer B8\"yq", "author": "A. Writer"}'))->'status' AS status;
SELECT qc_test.audit_flush();
SELECT query FROM queryclaw.audit_log;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE (url || detail::text || query) ~ '(hunter22|T999|xq|yq)';

-- nor are the values of the secrets a call sends, however the statement
-- built them where the rules above cannot see it: format(), ||, a
-- prepared statement's parameter (its EXECUTE is the statement text), a
-- batch's requests
TRUNCATE queryclaw.audit_log;
SELECT (queryclaw.api_call(qc_test.url('/echo'), 'GET',
                           format('{"X-Nomad-Token": "%s"}', 'FORMATTED1')::jsonb))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/echo') || '?api_key=' || 'CONCAT2x'))->'status' AS status;
PREPARE qc_audit_p(text) AS
    SELECT (queryclaw.api_call(qc_test.url('/echo'), 'GET', jsonb_build_object('X-Api-Key', $1)))->'status' AS status;
EXECUTE qc_audit_p('PREPARED3');
DEALLOCATE qc_audit_p;
SELECT ord, status FROM queryclaw.api_call_many(jsonb_build_array(
    jsonb_build_object('url', qc_test.url('/echo?access_token=') || 'BATCHKEY4'),
    jsonb_build_object('url', qc_test.url('/echo'),
                       'headers', format('{"X-Nomad-Token": "%s"}', 'BATCHKEY5')::jsonb)));
SELECT qc_test.audit_flush();
SELECT func, query FROM queryclaw.audit_log ORDER BY id;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE audit_log::text ~ '(FORMATTED1|CONCAT2x|PREPARED3|BATCHKEY4|BATCHKEY5)';

-- every common spelling of a secret: header names in any case, vendors'
-- ones included; a token-like value under a plain header name; query
-- parameters with percent-encoded names and ";" parameters; path segments
-- that look like tokens (a well-known prefix, a Telegram bot token, a long
-- run mixing letters and digits); form and JSON bodies, at any depth and
-- in arrays.  None reaches url, final_url, reason, query or detail.
TRUNCATE queryclaw.audit_log;
SELECT (queryclaw.api_call(qc_test.url('/echo'), 'POST',
    headers => '{"X-Api-Key": "HDR001", "x-auth-token": "HDR002", "X-Goog-Api-Key": "HDR003",
                 "Ocp-Apim-Subscription-Key": "HDR004", "PRIVATE-TOKEN": "HDR005",
                 "X-Amz-Security-Token": "HDR006", "Session-Id": "HDR007", "X-Signature": "HDR008",
                 "PROXY-AUTHORIZATION": "Basic HDR009", "cookie": "sid=HDR010",
                 "X-Request-Id": "sk-HDR011abcdefgh", "Accept": "text/plain"}',
    body => 'password=BODY001&user=x'))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/echo'), 'POST',
    body => '{"a": [{"client_secret": "BODY002"}, {"keys": ["BODY003", 1]}], "n": 1}'))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/v1/sk-PATH001abcdefgh/bot123456:PATH002AAHdqTcvCH1vGWJxfSeo/ghp_PATH003abcdefghijklmnop'
    || '/PATH004a1b2c3d4e5f6a7b8c9d0/x;jsessionid=PATH005?api%5Fkey=QRY001&Access_Token=QRY002&keyword=red')))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/redirect?to=/hello%3Fsession_id%3DQRY003%26q%3D1')))->'status' AS status;
SELECT qc_test.audit_flush();
SELECT qc_test.scrub(url) AS url, qc_test.scrub(final_url) AS final_url
  FROM queryclaw.audit_log ORDER BY id;
SELECT detail->'request_headers' AS headers FROM queryclaw.audit_log ORDER BY id LIMIT 1;
SELECT query FROM queryclaw.audit_log ORDER BY id;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE (url || coalesce(final_url, '') || coalesce(reason, '') || detail::text || query)
       ~ '(HDR0|BODY0|PATH0|QRY0)';

-- what a server echoes back, JSON-escaped ("\u0073k-…", "http:\/\/…"),
-- and even without its name (the "values" list), is redacted in the error
-- raised (which the server log records) and the reason stored
TRUNCATE queryclaw.audit_log;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/reflect/401?api_key=ECHOs002&note=ghp_ECHO001sabcdefghijk'))$$);
SELECT qc_test.audit_flush();
SELECT qc_test.scrub(url) AS url, qc_test.scrub(reason) AS reason FROM queryclaw.audit_log;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE (url || coalesce(reason, '') || detail::text || query) ~ 'ECHO0';

-- long texts are stored cut to their bound (4 kB for URLs and the query),
-- on a character boundary, and marked
TRUNCATE queryclaw.audit_log;
SELECT format('SELECT /*%s*/ qc_test.try(%L) IS NOT NULL AS refused', repeat('é', 3000),
              format('SELECT queryclaw.web_fetch(%L)', 'http://10.0.0.1/?pad=' || repeat('x', 5000)))
       AS long_statement \gset
:long_statement;
SELECT qc_test.audit_flush();
-- "SELECT /*" is 9 bytes and é 2: a cut within 4082 bytes keeps 4081
SELECT octet_length(url) AS url_bytes, right(url, 20) AS url_end,
       octet_length(query) AS query_bytes, right(query, 16) AS query_end
  FROM queryclaw.audit_log;

-- audit_query off: the statement text is not stored; audit off: no row
TRUNCATE queryclaw.audit_log;
SET queryclaw.audit_query = off;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
SET queryclaw.audit = off;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
RESET queryclaw.audit;
RESET queryclaw.audit_query;
SELECT qc_test.audit_flush();
SELECT count(*) AS rows, count(query) AS with_query FROM queryclaw.audit_log;

-- a configured key is hidden wherever the statement holds it: the same
-- statement text, run before and after the key is set, is stored as it is
-- the first time and with the key hidden the second
TRUNCATE queryclaw.audit_log;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched, 'word plainword4321' AS note;
SET queryclaw.llm_api_key = 'plainword4321';
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched, 'word plainword4321' AS note;
RESET queryclaw.llm_api_key;
SELECT qc_test.audit_flush();
SELECT query LIKE '%plainword4321%' AS key_stored FROM queryclaw.audit_log ORDER BY id;

-- a header's value is redacted with the keys configured at the time of
-- the call: the same value shown, then hidden once it is a key, then
-- shown again (what was made of a value is remembered only with the keys
-- it was made with)
TRUNCATE queryclaw.audit_log;
SELECT (queryclaw.api_call(qc_test.url('/hello'), headers => '{"X-Note": "plainword8765"}'))->'status' AS status;
SET queryclaw.llm_api_key = 'plainword8765';
SELECT (queryclaw.api_call(qc_test.url('/hello'), headers => '{"X-Note": "plainword8765"}'))->'status' AS status;
RESET queryclaw.llm_api_key;
SELECT (queryclaw.api_call(qc_test.url('/hello'), headers => '{"X-Note": "plainword8765"}'))->'status' AS status;
SELECT qc_test.audit_flush();
SELECT detail->'request_headers'->>'X-Note' AS note FROM queryclaw.audit_log ORDER BY id;

-- Rows are committed by the worker, whatever becomes of the caller's
-- transaction: a call in a transaction that rolls back, a refusal that
-- aborts its transaction, an error caught by a PL/pgSQL block.
TRUNCATE queryclaw.audit_log;
BEGIN;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
ROLLBACK;
BEGIN;
SELECT queryclaw.web_fetch('http://10.0.0.1/refused-in-rollback');
ROLLBACK;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://10.0.0.2/caught')$$) AS caught;
DO $$
BEGIN
    PERFORM queryclaw.api_call(qc_test.url('/redirect?to=http://10.0.0.3/'));
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'refused redirect caught';
END
$$;
SELECT qc_test.audit_flush();
SELECT func, qc_test.scrub(url) AS url, qc_test.scrub(final_url) AS final_url,
       status, outcome, reason
  FROM queryclaw.audit_log ORDER BY id;

-- the row appears soon after the call: qc_test.wait_for_audit waits for
-- it (how soon is test/bench/audit_load.sh's figure, not a test's)
SELECT queryclaw.web_fetch(qc_test.url('/hello?within=1s')) IS NOT NULL AS fetched;
SELECT qc_test.wait_for_audit(1, $$url LIKE '%within=1s'$$) AS rows;

SELECT queued, in_flight, lost FROM queryclaw.audit_status();
