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

