--
-- The async queue's remaining rules: budgets make requests wait (never
-- fail), callbacks rerun on 40001/40P01, a request cancelled while it
-- runs, and retention applied by the worker.
CREATE ROLE qc_rules_carol;
CREATE ROLE qc_rules_dave;
GRANT USAGE ON SCHEMA qc_test TO qc_rules_carol, qc_rules_dave;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.cancel_requests(bigint[])
    TO qc_rules_carol, qc_rules_dave;
ALTER ROLE qc_rules_carol SET queryclaw.retry_base_delay = '10ms';

-- (as 061_async_run.sql has it)
CREATE OR REPLACE FUNCTION qc_test.async_settled() RETURNS boolean LANGUAGE sql
AS $$ SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                                     WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0$c$) $$;
TRUNCATE queryclaw.requests CASCADE;

-- 1. Budgets make requests wait, never fail: with max_calls_per_hour = 1
-- for dave, of two GETs queued together one is done and the other waits,
-- queued, no error, not attempted, its next attempt towards when the first
-- call leaves the hour's window: five minutes on (not one, to be read
-- again then; not the hour, so that a raised limit is soon seen).
ALTER ROLE qc_rules_dave SET queryclaw.max_calls_per_hour = 1;
SET ROLE qc_rules_dave;
SELECT count(queryclaw.web_fetch_async(qc_test.url('/hello'))) FROM generate_series(1, 2);
RESET ROLE;
SELECT qc_test.wait_until($$(SELECT count(*) FROM queryclaw.requests
                              WHERE state = 'done' OR next_attempt_at > now() + interval '30 s') = 2$$);
SELECT state, attempts, error, sqlstate,
       CASE WHEN state = 'queued' THEN next_attempt_at > now() + interval '30 s' END AS waits_ahead,
       CASE WHEN state = 'queued' THEN next_attempt_at > now() + interval '4 minutes' END AS five_minutes
  FROM queryclaw.requests ORDER BY state;
TRUNCATE queryclaw.requests CASCADE;
ALTER ROLE qc_rules_dave RESET queryclaw.max_calls_per_hour;

-- The same for max_tokens_per_day with an LLM request: the first spends
-- the day's tokens (the scripted model reports its usage), the second waits.
ALTER ROLE qc_rules_dave SET queryclaw.max_tokens_per_day = 1;
SET ROLE qc_rules_dave;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:plain', tools => '{}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SET ROLE qc_rules_dave;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:plain', tools => '{}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.wait_until($$(SELECT next_attempt_at > now() + interval '30 s' FROM queryclaw.requests
                              ORDER BY id DESC LIMIT 1)$$);
SELECT state, attempts, result->>'answer' AS answer, error, sqlstate,
       CASE WHEN state = 'queued' THEN next_attempt_at > now() + interval '30 s' END AS waits_ahead
  FROM queryclaw.requests ORDER BY id;
TRUNCATE queryclaw.requests CASCADE;
ALTER ROLE qc_rules_dave RESET queryclaw.max_tokens_per_day;

-- 2. A callback that meets a serialization failure or a deadlock is run
-- again (its writes rolled back with it; a sequence counts its runs, as
-- nextval is not rolled back): one that fails twice then succeeds leaves
-- the request done, its row written once; one that always fails leaves it
-- failed with its error after three runs.
CREATE SEQUENCE qc_rules_runs;
CREATE TABLE qc_rules_seen (id bigint, run bigint);
GRANT USAGE ON SEQUENCE qc_rules_runs TO qc_rules_carol;
GRANT INSERT ON qc_rules_seen TO qc_rules_carol;
CREATE FUNCTION qc_rules_flaky_cb(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    run bigint;
BEGIN
    run := nextval('qc_rules_runs');
    IF run <= (context->>'fail')::int THEN
        RAISE EXCEPTION 'conflict at run %', run
            USING ERRCODE = CASE WHEN run % 2 = 1 THEN '40001' ELSE '40P01' END;
    END IF;
    INSERT INTO qc_rules_seen VALUES (id, run);
END $$;
REVOKE EXECUTE ON FUNCTION qc_rules_flaky_cb(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION qc_rules_flaky_cb(bigint, jsonb, text, jsonb) TO qc_rules_carol;
SET ROLE qc_rules_carol;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), callback => 'qc_rules_flaky_cb(bigint,jsonb,text,jsonb)'::regprocedure,
                                 context => '{"fail": 2}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT state, attempts, error, sqlstate FROM queryclaw.requests;
SELECT count(*) AS rows_written, max(run) AS at_run FROM qc_rules_seen;
SELECT last_value AS runs FROM qc_rules_runs;
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_rules_seen;
ALTER SEQUENCE qc_rules_runs RESTART;
SET ROLE qc_rules_carol;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), callback => 'qc_rules_flaky_cb(bigint,jsonb,text,jsonb)'::regprocedure,
                                 context => '{"fail": 99}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT state, attempts, error, sqlstate, result->'content' IS NOT NULL AS result_kept FROM queryclaw.requests;
SELECT count(*) AS rows_written, max(run) AS at_run FROM qc_rules_seen;
SELECT last_value AS runs FROM qc_rules_runs;
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_rules_seen;

-- 3. A request cancelled while it runs: another role's cancel counts 0;
-- the owner's counts 1, a second 0; it ends cancelled, no result, and its
-- callback gets the error 'cancelled' and no result.
CREATE TABLE qc_rules_called (id bigint, result jsonb, error text);
GRANT INSERT ON qc_rules_called TO qc_rules_carol;
CREATE FUNCTION qc_rules_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$ INSERT INTO qc_rules_called VALUES (id, result, error) $$;
GRANT EXECUTE ON FUNCTION qc_rules_note(bigint, jsonb, text, jsonb) TO qc_rules_carol;
SET ROLE qc_rules_carol;
SELECT queryclaw.web_fetch_async(qc_test.url('/slow?ms=3000'),
                                 callback => 'qc_rules_note(bigint,jsonb,text,jsonb)'::regprocedure) AS slow_id \gset
RESET ROLE;
SELECT qc_test.wait_until($$(SELECT state = 'running' FROM queryclaw.requests)$$) AS running;
SET ROLE qc_rules_dave;
SELECT queryclaw.cancel_requests(ARRAY[:slow_id]::bigint[]) AS cancelled_by_another_role;
SET ROLE qc_rules_carol;
SELECT queryclaw.cancel_requests(ARRAY[:slow_id]::bigint[]) AS cancelled;
SELECT queryclaw.cancel_requests(ARRAY[:slow_id]::bigint[]) AS cancelled_again;
RESET ROLE;
SELECT qc_test.wait_until('(SELECT count(*) = 1 FROM qc_rules_called)') AS callback_called;
SELECT state, result IS NULL AS no_result, finished_at IS NOT NULL AS finished FROM queryclaw.requests;
SELECT c.id = :slow_id AS same_id, c.result IS NULL AS no_result, c.error FROM qc_rules_called c;
TRUNCATE queryclaw.requests CASCADE;

-- 4. Retention as the worker applies it: with async_retention 1s,
-- finished requests disappear within seconds, unfinished ones (carol's,
-- paused) stay.
ALTER SYSTEM SET queryclaw.async_retention = '1s';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SET ROLE qc_rules_carol;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello')) AS done_id \gset
RESET ROLE;
SELECT qc_test.async_settled();
ALTER ROLE qc_rules_carol SET queryclaw.enabled = off;
SET ROLE qc_rules_carol;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello')) AS paused_id \gset
RESET ROLE;
SELECT qc_test.wait_until($$NOT EXISTS (SELECT FROM queryclaw.requests WHERE id = $$ || :done_id || ')')
    AS finished_purged;
SELECT pg_sleep(1.5);
SELECT state FROM queryclaw.requests WHERE id = :paused_id;
ALTER SYSTEM RESET queryclaw.async_retention;
SELECT pg_reload_conf();
ALTER ROLE qc_rules_carol RESET queryclaw.enabled;
TRUNCATE queryclaw.requests CASCADE;

DROP TABLE qc_rules_seen, qc_rules_called;
DROP SEQUENCE qc_rules_runs;
DROP FUNCTION qc_rules_flaky_cb(bigint, jsonb, text, jsonb), qc_rules_note(bigint, jsonb, text, jsonb);
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_rules_carol, qc_rules_dave;
REVOKE USAGE ON SCHEMA qc_test FROM qc_rules_carol, qc_rules_dave;
DROP ROLE qc_rules_carol, qc_rules_dave;
