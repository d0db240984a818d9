--
-- The audit log: one row per attempt, secrets redacted.
--
TRUNCATE queryclaw.audit_log;

SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
SELECT (queryclaw.api_call(qc_test.url('/status/404')))->'status' AS status;
SELECT (queryclaw.api_call(qc_test.url('/chain/2')))->'status' AS status;
SELECT length(queryclaw.web_fetch(qc_test.url('/hello'), max_chars => 3)) AS chars;

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
SELECT qc_test.scrub(url) AS url, detail->'request_headers' AS headers
  FROM queryclaw.audit_log;
SELECT count(*) AS rows_with_secrets FROM queryclaw.audit_log
 WHERE (url || coalesce(final_url, '') || detail::text) ~ '(pa55word|K123|T456|S789|s3cret|sid=1)';

-- audit_query off: the statement text is not stored; audit off: no row
TRUNCATE queryclaw.audit_log;
SET queryclaw.audit_query = off;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
SET queryclaw.audit = off;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
RESET queryclaw.audit;
RESET queryclaw.audit_query;
SELECT count(*) AS rows, count(query) AS with_query FROM queryclaw.audit_log;

-- Rows are written in the caller's transaction (no background worker yet):
-- a rolled-back transaction takes its rows with it, and so does a call
-- whose own error (a refusal, a timeout) aborts the statement.
TRUNCATE queryclaw.audit_log;
BEGIN;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NOT NULL AS fetched;
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM queryclaw.audit_log;
