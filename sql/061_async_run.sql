--
-- The async worker runs the queue: final states, retries (statuses,
-- methods, Retry-After, idempotency keys), callbacks, the role's identity
-- and settings, audit rows, and the pauses that make requests wait.
--
-- Each request runs as the role that queued it, with its settings: the
-- retry delays are made short for the test's roles with ALTER ROLE, which
-- is itself a check that the worker applies them.
CREATE ROLE qc_async_alice;
CREATE ROLE qc_async_bob;
GRANT USAGE ON SCHEMA qc_test TO qc_async_alice, qc_async_bob;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb)
    TO qc_async_alice, qc_async_bob;
ALTER ROLE qc_async_alice SET queryclaw.retry_base_delay = '10ms';
ALTER ROLE qc_async_alice SET queryclaw.retry_max = 2;
ALTER ROLE qc_async_bob SET queryclaw.retry_base_delay = '10ms';
ALTER ROLE qc_async_bob SET queryclaw.read_only = on;

-- what the callbacks saw, and as whom they ran
CREATE TABLE qc_async_seen (id bigint, result jsonb, error text, context jsonb, by_role text);
GRANT INSERT ON qc_async_seen TO qc_async_alice, qc_async_bob;
CREATE FUNCTION qc_async_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS $$ INSERT INTO qc_async_seen VALUES (id, result, error, context, current_user) $$;
CREATE FUNCTION qc_async_raise(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'callback says no to %', context->>'n'; END $$;
REVOKE EXECUTE ON FUNCTION qc_async_note(bigint, jsonb, text, jsonb),
                           qc_async_raise(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION qc_async_note(bigint, jsonb, text, jsonb),
                          qc_async_raise(bigint, jsonb, text, jsonb)
    TO qc_async_alice, qc_async_bob;

-- Wait until every request the test queued is final (or 15 s passed).
CREATE FUNCTION qc_test.async_settled() RETURNS boolean LANGUAGE sql
AS $$ SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                                     WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0$c$) $$;
-- the requests /flaky had with a key
CREATE FUNCTION qc_test.flaky_count(key text) RETURNS int LANGUAGE sql
AS $$ SELECT (queryclaw.api_call(qc_test.url('/flaky/count?key=' || key))->'body'->>'count')::int $$;

-- (the requests of earlier tests are theirs)
TRUNCATE queryclaw.requests CASCADE;

-- A request whose transaction rolls back is never sent.
SET ROLE qc_async_alice;
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=rolled-back&fail=0')) IS NOT NULL AS queued;
ROLLBACK;

-- Final states: 200 and 404 through api_call_async are done (a 404 is
-- not retried: ok is false, as api_call returns it); through
-- web_fetch_async a 404 fails, as web_fetch raises.  The callback gets
-- the result (api_call's object, {"content": ...} for web_fetch) or the
-- error, and the context, as the role.
SELECT queryclaw.api_call_async(qc_test.url('/json'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "api-200"}') IS NOT NULL AS queued;
SELECT queryclaw.api_call_async(qc_test.url('/status/404'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "api-404"}') IS NOT NULL AS queued;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                 context => '{"n": "web-200"}') IS NOT NULL AS queued;
SELECT queryclaw.web_fetch_async(qc_test.url('/status/404'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                 context => '{"n": "web-404"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT context->>'n' AS n, r.state, r.attempts, r.result->'status' AS status,
       r.result->'ok' AS ok, r.result->'content' AS content,
       qc_test.scrub(r.error) AS error, r.sqlstate, r.finished_at IS NOT NULL AS finished
  FROM queryclaw.requests r ORDER BY r.id;
SELECT s.context->>'n' AS n, s.by_role, s.result->'status' AS status,
       s.result->'content' AS content, qc_test.scrub(s.error) AS error
  FROM qc_async_seen s ORDER BY s.id;
-- the rolled-back request was never sent
SELECT qc_test.flaky_count('rolled-back') AS rolled_back_sent;

-- Every attempt has its audit row: the role, func = the async function,
-- the request id and the attempt number in detail.
SELECT qc_test.audit_flush();
SELECT a.role, a.func, a.outcome, a.status,
       (a.detail->'request'->>'id')::bigint = r.id AS request_id, a.detail->'request'->'attempt' AS attempt
  FROM queryclaw.audit_log a JOIN queryclaw.requests r ON (a.detail->'request'->>'id')::bigint = r.id
 ORDER BY r.id, a.id;

TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_async_seen;

-- Retries: 503 twice then 200 is done at the third attempt (retry_max is
-- 2 for alice); 503 every time fails after retry_max + 1 attempts, the
-- last response kept; a Retry-After of 1 s is waited for.
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=twice&fail=2&status=503'),
                                context => '{"n": "503 twice"}') IS NOT NULL AS queued;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=always&fail=99&status=503'),
                                callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "503 always"}') IS NOT NULL AS queued;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=after&fail=1&status=429&retry_after=1'),
                                context => '{"n": "429 retry-after 1"}') IS NOT NULL AS queued;
-- a POST without an idempotency key is not retried on 500 (it may have
-- been processed), but is on 503; with a key it is retried on 500, the
-- key sent as Idempotency-Key, the same on every attempt
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=post500&fail=1&status=500'), 'POST',
                                body => '{}', context => '{"n": "POST 500"}') IS NOT NULL AS queued;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=post503&fail=1&status=503'), 'POST',
                                body => '{}', context => '{"n": "POST 503"}') IS NOT NULL AS queued;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=keyed500&fail=1&status=500'), 'POST',
                                body => '{}', context => '{"n": "keyed POST 500"}',
                                idempotency_key => 'order-42') IS NOT NULL AS queued;
-- a refusal by the policy fails at once (nothing was sent, nothing to retry)
SELECT queryclaw.api_call_async('http://127.0.0.1:1/nothing',
                                context => '{"n": "refused by policy"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT r.context->>'n' AS n, r.state, r.attempts, r.result->'status' AS status,
       r.result->'body'->'attempt' AS served_at, r.result->'body'->'idempotency_key' AS key,
       qc_test.scrub(r.error) AS error, r.sqlstate,
       CASE WHEN r.context->>'n' LIKE '429%' THEN r.finished_at - r.created_at >= interval '1 s' END
           AS waited_retry_after
  FROM queryclaw.requests r ORDER BY r.id;
SELECT qc_test.flaky_count('twice') AS twice, qc_test.flaky_count('always') AS always,
       qc_test.flaky_count('post500') AS post500, qc_test.flaky_count('keyed500') AS keyed500;
-- the callback of the request that failed for good got its error
SELECT s.context->>'n' AS n, s.result IS NULL AS no_result, s.error FROM qc_async_seen s;

TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_async_seen;

-- A callback that raises makes the request failed, with its error; the
-- HTTP result is kept, and the call is not made again.
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?key=cb&fail=0'),
                                callback => 'qc_async_raise(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "raising"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT r.state, r.attempts, r.result->'status' AS status, r.error, r.sqlstate
  FROM queryclaw.requests r;
SELECT qc_test.flaky_count('cb') AS cb_sent;

TRUNCATE queryclaw.requests CASCADE;

-- The role's settings apply: bob has queryclaw.read_only on (ALTER ROLE),
-- so his POST is refused, while alice's goes.
SET ROLE qc_async_bob;
SELECT queryclaw.api_call_async(qc_test.url('/echo'), 'POST', body => '{}',
                                context => '{"n": "bob POST"}') IS NOT NULL AS queued;
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/echo'), 'POST', body => '{}',
                                context => '{"n": "alice POST"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT r.role, r.context->>'n' AS n, r.state, r.result->'status' AS status,
       qc_test.scrub(r.error) AS error, r.sqlstate
  FROM queryclaw.requests r ORDER BY r.id;

TRUNCATE queryclaw.requests CASCADE;

-- A lost privilege fails the request with that reason: bob's EXECUTE on
-- the callback is revoked after he queued (in the same transaction, so
-- that the worker only sees the request once the privilege is gone).
BEGIN;
SET LOCAL ROLE qc_async_bob;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                 context => '{"n": "lost privilege"}') IS NOT NULL AS queued;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION qc_async_note(bigint, jsonb, text, jsonb) FROM qc_async_bob;
COMMIT;
SELECT qc_test.async_settled();
SELECT r.state, r.attempts, r.error, r.sqlstate FROM queryclaw.requests r;

TRUNCATE queryclaw.requests CASCADE;

-- A request whose arguments no longer build a call fails alone: the calls
-- of a claim are built together, and when one fails, each on its own.
-- The stored method of one of alice's three requests is made invalid
-- before they commit, as only a superuser could.
BEGIN;
SET LOCAL ROLE qc_async_alice;
SELECT count(queryclaw.api_call_async(qc_test.url('/hello'), context => jsonb_build_object('n', n)))
  FROM unnest(ARRAY['first', 'broken', 'last']) n;
RESET ROLE;
UPDATE queryclaw.requests SET request = jsonb_set(request, '{method}', '"BREW"')
 WHERE context->>'n' = 'broken';
COMMIT;
SELECT qc_test.async_settled();
SELECT r.context->>'n' AS n, r.state, r.result->'status' AS status, r.error, r.sqlstate
  FROM queryclaw.requests r ORDER BY r.id;

TRUNCATE queryclaw.requests CASCADE;

-- Pauses make requests wait, never fail: with queryclaw.enabled off for
-- alice, her requests stay queued, never claimed (not even for a moment:
-- read every 10 ms for 1.5 s, over the worker's re-checks, the states seen
-- are only queued, with no attempt) and never written (next_attempt_at is
-- still the time they were queued: a paused queue of any size costs no
-- writes); once it is on again, the requests go.
CREATE FUNCTION pg_temp.states_seen(ids bigint[]) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    seen text[] := '{}';
BEGIN
    FOR i IN 1..150 LOOP
        seen := seen || ARRAY(SELECT DISTINCT state || ', attempts ' || attempts
                                FROM queryclaw.requests WHERE id = ANY (ids));
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT s FROM unnest(seen) AS s ORDER BY 1);
END $$;
ALTER ROLE qc_async_alice SET queryclaw.enabled = off;
SET ROLE qc_async_alice;
SELECT queryclaw.web_fetch_async(qc_test.url('/flaky?key=paused&fail=0')) AS paused_id \gset
SELECT array_agg(queryclaw.web_fetch_async(qc_test.url('/flaky?key=paused&fail=0'))) AS more_paused
  FROM generate_series(1, 5) \gset
RESET ROLE;
SELECT pg_temp.states_seen(:'more_paused'::bigint[] || :paused_id::bigint) AS states_seen;
SELECT state = 'queued' AS waiting, error IS NULL AS no_error,
       next_attempt_at = created_at AS untouched
  FROM queryclaw.requests WHERE id = :paused_id;
SELECT qc_test.flaky_count('paused') AS paused_sent;
ALTER ROLE qc_async_alice RESET queryclaw.enabled;
SELECT qc_test.async_settled();
SELECT state, attempts FROM queryclaw.requests WHERE id = :paused_id;

TRUNCATE queryclaw.requests CASCADE;

-- queryclaw.host_rate_limit: six requests to a host limited to 2/s wait
-- for their tokens (one second's worth at once, then one every 0.5 s).
ALTER SYSTEM SET queryclaw.host_rate_limit = '127.0.0.1=2/s';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SET ROLE qc_async_alice;
SELECT count(queryclaw.web_fetch_async(qc_test.url('/flaky?key=rated&fail=0')))
  FROM generate_series(1, 6);
RESET ROLE;
SELECT qc_test.async_settled();
SELECT count(*) FILTER (WHERE state = 'done') AS done,
       max(finished_at) - min(finished_at) >= interval '1.4 s' AS spread_by_the_rate,
       sum(attempts) AS attempts
  FROM queryclaw.requests;
ALTER SYSTEM RESET queryclaw.host_rate_limit;
SELECT pg_reload_conf();

TRUNCATE queryclaw.requests CASCADE;

-- llm_chat_tools_async: the tool loop runs as the role, its tools under
-- its policy; the result is the loop's object, as llm_chat_tools returns it.
GRANT EXECUTE ON FUNCTION
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.web_fetch(text, text, integer, text) TO qc_async_alice;
SET ROLE qc_async_alice;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:plain', tools => '{}',
                                      context => '{"n": "llm plain"}') IS NOT NULL AS queued;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || qc_test.url('/hello'),
                                      tools => '{web_fetch}',
                                      context => '{"n": "llm tool call"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT r.context->>'n' AS n, r.state, r.attempts, r.result->>'answer' AS answer,
       r.result->'rounds' AS rounds, jsonb_array_length(r.result->'tool_calls') AS tool_calls, r.error
  FROM queryclaw.requests r ORDER BY r.id;
REVOKE ALL ON FUNCTION
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.web_fetch(text, text, integer, text) FROM qc_async_alice;

-- A secret stored for the role behind the checks' back (under 0.1, or by a
-- session without the library) is not applied to its requests, as it is not
-- to its sessions: here a proxy with credentials that, applied, would make
-- the request fail (it points at a loopback port nothing listens on).
SET allow_system_table_mods = on;
UPDATE pg_db_role_setting SET setconfig = setconfig || '{queryclaw.proxy=http://user:pw@127.0.0.1:1}'
 WHERE setdatabase = 0 AND setrole = 'qc_async_alice'::regrole;
RESET allow_system_table_mods;
TRUNCATE queryclaw.requests CASCADE;
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/hello')) IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT state, result->'status' AS status, error FROM queryclaw.requests;
ALTER ROLE qc_async_alice RESET queryclaw.proxy;

-- The worker in pg_stat_activity: while a request is in flight it waits on
-- the network, and once the queue is empty on the queue (named wait events
-- from PostgreSQL 17; "Extension" before).
TRUNCATE queryclaw.requests CASCADE;
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/slow?ms=3000')) IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.wait_until($c$EXISTS (SELECT FROM pg_stat_activity
                                  WHERE backend_type = 'queryclaw async worker'
                                    AND wait_event = CASE WHEN current_setting('server_version_num')::int >= 170000
                                                          THEN 'QueryclawHttp' ELSE 'Extension' END)$c$) AS waits_on_the_network;
SELECT qc_test.async_settled();
SELECT qc_test.wait_until($c$EXISTS (SELECT FROM pg_stat_activity
                                  WHERE backend_type = 'queryclaw async worker'
                                    AND wait_event = CASE WHEN current_setting('server_version_num')::int >= 170000
                                                          THEN 'QueryclawAsyncWorker' ELSE 'Extension' END)$c$) AS waits_on_the_queue;
SELECT backend_type, wait_event_type, datname = current_database() AS in_this_database
  FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker';

-- A callback dropped and created again between two requests (a new
-- function of the same signature) is the new one: the workers remember a
-- signature's function only until the catalogs change.
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_async_seen;
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/json'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "before"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
DROP FUNCTION qc_async_note(bigint, jsonb, text, jsonb);
CREATE FUNCTION qc_async_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS $$ INSERT INTO qc_async_seen VALUES (id, result, error, context || '{"again": true}', current_user) $$;
REVOKE EXECUTE ON FUNCTION qc_async_note(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION qc_async_note(bigint, jsonb, text, jsonb) TO qc_async_alice, qc_async_bob;
SET ROLE qc_async_alice;
SELECT queryclaw.api_call_async(qc_test.url('/json'), callback => 'qc_async_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                context => '{"n": "after"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.async_settled();
SELECT r.context->>'n' AS n, r.state, r.error FROM queryclaw.requests r ORDER BY r.id;
SELECT s.context->>'n' AS n, s.context->'again' AS again, s.by_role FROM qc_async_seen s ORDER BY s.id;

TRUNCATE queryclaw.requests CASCADE;
DROP TABLE qc_async_seen;
DROP FUNCTION qc_async_note(bigint, jsonb, text, jsonb), qc_async_raise(bigint, jsonb, text, jsonb);
REVOKE ALL ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb)
    FROM qc_async_alice, qc_async_bob;
REVOKE USAGE ON SCHEMA qc_test FROM qc_async_alice, qc_async_bob;
DROP ROLE qc_async_alice, qc_async_bob;
