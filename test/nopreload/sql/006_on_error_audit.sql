--
-- queryclaw.on_error = 'return' where audit rows are written in the
-- caller's transaction: a failed call's work is rolled back (it runs in a
-- subtransaction), its audit row is not; a call that fails deep in a
-- model's loop keeps the rows of the rounds before it too.
--
TRUNCATE queryclaw.audit_log;
SET queryclaw.on_error = 'return';
SELECT queryclaw.api_call('http://10.0.0.1/on_error')->>'sqlstate' AS refused;
SELECT queryclaw.web_fetch(qc_test.url('/status/404?on_error')) AS not_found;
SELECT queryclaw.llm_chat_tools('SCENARIO:bad_json',
                                output_schema => '{"type": "object", "required": ["city"]}')->>'sqlstate' AS model;
SELECT func, outcome, qc_test.scrub(url) AS url FROM queryclaw.audit_log ORDER BY id;
-- in a transaction that commits, the rows stay; one that rolls back takes them
BEGIN;
SELECT queryclaw.api_call('http://10.0.0.1/kept')->>'sqlstate' AS refused;
COMMIT;
BEGIN;
SELECT queryclaw.api_call('http://10.0.0.1/rolled_back')->>'sqlstate' AS refused;
ROLLBACK;
SELECT url, outcome FROM queryclaw.audit_log WHERE url LIKE 'http://10.0.0.1/%' ORDER BY id;
RESET queryclaw.on_error;
