--
-- Without shared_preload_libraries: everything works but what needs shared
-- memory, and audit rows are written in the caller's transaction.
--
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS works;

-- the settings that size shared memory or name the worker's database need
-- preload; the others exist
SELECT name, context FROM pg_settings
 WHERE name IN ('queryclaw.max_calls_per_hour', 'queryclaw.audit_retention',
                'queryclaw.database', 'queryclaw.audit_queue_size') ORDER BY name;
SHOW queryclaw.database;

-- what needs the worker says so
SELECT * FROM queryclaw.audit_status();

-- rows go with the caller's transaction: a rolled-back call loses its row,
-- and so does a refusal, even one a PL/pgSQL block catches (the block's
-- subtransaction is rolled back)
TRUNCATE queryclaw.audit_log;
BEGIN;
SELECT queryclaw.web_fetch(qc_test.url('/hello?in=rollback')) IS NOT NULL AS fetched;
ROLLBACK;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://10.0.0.1/caught')$$) AS caught;
SELECT queryclaw.web_fetch(qc_test.url('/hello?in=commit')) IS NOT NULL AS fetched;
SELECT split_part(url, '?', 2) AS query, outcome FROM queryclaw.audit_log;
SELECT role = current_user AS own, calls, ok FROM queryclaw.stats;

-- a rate limit cannot be enforced without the shared counters: every call
-- is refused, saying why
CREATE ROLE qc_gina;
GRANT USAGE ON SCHEMA qc_test TO qc_gina;
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text) TO qc_gina;
SET queryclaw.max_calls_per_hour = 100;
SET ROLE qc_gina;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
RESET ROLE;
RESET queryclaw.max_calls_per_hour;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS unlimited_works;
DROP OWNED BY qc_gina;
DROP ROLE qc_gina;

-- asynchronous requests need the workers: each function says so, before
-- it looks at its arguments
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'));
SELECT queryclaw.api_call_async(NULL);
SELECT queryclaw.llm_chat_tools_async('hi');
SELECT * FROM queryclaw.wait('{1}');
SELECT queryclaw.cancel_requests('{1}');
SELECT queryclaw.retry_requests('{1}');
SELECT * FROM queryclaw.wait(NULL, NULL);
SELECT name FROM pg_settings WHERE name = 'queryclaw.async_workers';
