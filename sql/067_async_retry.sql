--
-- Waiting until every request is final (wait() with a NULL timeout), and
-- running failed and cancelled requests again (retry_requests()).
--
-- qc_retry_alice's requests run (a failure is final at once: no retry);
-- qc_retry_bob's stay queued (queryclaw.enabled is off for him), so that
-- a wait for them can only end by its statement_timeout.
--
CREATE ROLE qc_retry_alice;
CREATE ROLE qc_retry_bob;
CREATE ROLE qc_retry_carol;			-- no EXECUTE on retry_requests
GRANT USAGE ON SCHEMA qc_test TO qc_retry_alice, qc_retry_bob, qc_retry_carol;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.wait(bigint[], interval), queryclaw.cancel_requests(bigint[]),
    queryclaw.retry_requests(bigint[])
    TO qc_retry_alice, qc_retry_bob;
ALTER ROLE qc_retry_alice SET queryclaw.retry_max = 0;
ALTER ROLE qc_retry_bob SET queryclaw.enabled = off;
-- the requests /flaky had with a key (run=, which the redaction leaves
-- alone: a request whose URL says key= holds a secret)
CREATE FUNCTION pg_temp.flaky_count(run text) RETURNS int LANGUAGE sql
AS $$ SELECT (queryclaw.api_call(qc_test.url('/flaky/count?run=' || run))->'body'->>'count')::int $$;
TRUNCATE queryclaw.requests CASCADE;

-- retry_requests is not for PUBLIC, and says what it does; wait() now
-- sees a NULL argument
SELECT has_function_privilege('public', 'queryclaw.retry_requests(bigint[])', 'EXECUTE') AS public,
       obj_description('queryclaw.retry_requests(bigint[])'::regprocedure) IS NOT NULL AS commented,
       proisstrict AS wait_is_strict
  FROM pg_proc WHERE oid = 'queryclaw.wait(bigint[], interval)'::regprocedure;

--
-- Refusals first.
--
-- no EXECUTE
SET ROLE qc_retry_carol;
SELECT qc_test.try($$SELECT queryclaw.retry_requests('{1}')$$) AS no_execute;
RESET ROLE;

-- wait(ids, NULL) for a request that never becomes final ends only by
-- statement_timeout: 57014, at the timeout
SET ROLE qc_retry_bob;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=bob-paused&fail=0')) AS bob_queued \gset
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop(format('SELECT count(*) FROM queryclaw.wait(%L, NULL)',
                                  ARRAY[:bob_queued]::bigint[])) AS never_final;
RESET statement_timeout;

-- max_queued_per_role counts a request queued again as an enqueue: bob has
-- one queued, so with the limit at 1 his cancelled request cannot go back
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=bob-cancelled&fail=0')) AS bob_cancelled \gset
SELECT queryclaw.cancel_requests(ARRAY[:bob_cancelled]::bigint[]) AS cancelled;
COMMIT;
RESET ROLE;
SET queryclaw.max_queued_per_role = 1;
SET ROLE qc_retry_bob;
SELECT qc_test.try(format('SELECT queryclaw.retry_requests(%L)', ARRAY[:bob_cancelled]::bigint[]))
    AS over_max_queued;
SELECT state FROM queryclaw.requests WHERE id = :bob_cancelled;
RESET ROLE;
RESET queryclaw.max_queued_per_role;

--
-- Final rows, of each kind: failed (a 503, not retried), cancelled before
-- a worker saw it, done.  wait(ids, NULL) returns once they all are, and
-- at once when they already are.
--
SET ROLE qc_retry_alice;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=alice-failed&fail=1&status=503')) AS failed_id \gset
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=alice-cancelled&fail=0')) AS cancelled_id \gset
SELECT queryclaw.cancel_requests(ARRAY[:cancelled_id]::bigint[]) AS cancelled;
COMMIT;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=alice-done&fail=0')) AS done_id \gset
SELECT id = :failed_id AS failed, state, attempts, qc_test.scrub(error) AS error, sqlstate
  FROM queryclaw.wait(ARRAY[:failed_id, :cancelled_id, :done_id]::bigint[], NULL) ORDER BY id;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS final FROM queryclaw.wait(ARRAY[:failed_id, :cancelled_id, :done_id]::bigint[], NULL);
SELECT clock_timestamp() - :'t0' < interval '5 s' AS without_waiting;
-- NULL ids name no request
SELECT count(*) AS no_ids FROM queryclaw.wait(NULL, NULL);
SELECT count(*) AS no_ids_default_timeout FROM queryclaw.wait(NULL);

--
-- retry_requests(): the caller's failed and cancelled requests go back to
-- the queue under their ids, as if just queued; done ones, unfinished
-- ones and other roles' are left alone.
--
BEGIN;
SELECT queryclaw.retry_requests(ARRAY[:failed_id, :cancelled_id, :done_id, :bob_queued,
                                      :bob_cancelled]::bigint[]) AS retried;
SELECT id = :failed_id AS failed, state, attempts, result, error, sqlstate, finished_at,
       next_attempt_at <= now() AS due
  FROM queryclaw.requests WHERE id IN (:failed_id, :cancelled_id) ORDER BY id;
COMMIT;
-- the commit woke the workers: both are sent again and end done (the
-- first attempt at alice-failed had its 503)
SELECT id = :failed_id AS failed, state, attempts, result->'status' AS status,
       result->'body'->'attempt' AS served_at, error
  FROM queryclaw.wait(ARRAY[:failed_id, :cancelled_id]::bigint[], NULL) ORDER BY id;
-- done now: nothing to retry
SELECT queryclaw.retry_requests(ARRAY[:failed_id]::bigint[]) AS retried_done;
RESET ROLE;
SELECT pg_temp.flaky_count('alice-failed') AS failed_sent, pg_temp.flaky_count('alice-cancelled') AS cancelled_sent,
       pg_temp.flaky_count('alice-done') AS done_sent;
-- bob's were not touched
SELECT id = :bob_queued AS queued, state, attempts FROM queryclaw.requests
 WHERE id IN (:bob_queued, :bob_cancelled) ORDER BY id;
-- bob retries his own cancelled one (his queued one is not final)
SET ROLE qc_retry_bob;
SELECT queryclaw.retry_requests(ARRAY[:bob_queued, :bob_cancelled]::bigint[]) AS bob_retried;
SELECT state, attempts, error FROM queryclaw.requests WHERE id = :bob_cancelled;
RESET ROLE;

--
-- A request whose arguments held secrets: they were deleted when it
-- ended, so it cannot be sent again as it was queued; it is left as it
-- is, counted out, with a WARNING.  One without secrets in the same call
-- goes.
--
SET ROLE qc_retry_alice;
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=alice-secret&fail=1&status=503'),
       headers => '{"Authorization": "Bearer s3cr3t-t0ken-value"}') AS secret_id \gset
SELECT queryclaw.api_call_async(qc_test.url('/flaky?run=alice-plain&fail=1&status=503')) AS plain_id \gset
SELECT id = :secret_id AS secret, state, redacted
  FROM queryclaw.wait(ARRAY[:secret_id, :plain_id]::bigint[], NULL) ORDER BY id;
SELECT queryclaw.retry_requests(ARRAY[:secret_id, :plain_id]::bigint[]) AS retried;
SELECT id = :secret_id AS secret, state
  FROM queryclaw.wait(ARRAY[:secret_id, :plain_id]::bigint[], NULL) ORDER BY id;
SELECT queryclaw.retry_requests(ARRAY[:secret_id]::bigint[]) AS retried_secret_alone;
RESET ROLE;

--
-- The statements retry_requests runs as the table's owner name every
-- operator's schema: an operator of the caller's, first on its
-- search_path, is never called (it would raise the NOTICE).  In a new
-- session, whose statements are prepared under that search_path.
--
SET ROLE qc_retry_bob;
SELECT queryclaw.cancel_requests(ARRAY[:bob_cancelled]::bigint[]) AS cancelled;
RESET ROLE;
SELECT qc_test.hostile_schema('qc_evil', 'qc_retry_bob');
\c queryclaw_regression
SET queryclaw.max_queued_per_role = 100;	-- so that the retry counts
SET ROLE qc_retry_bob;
SET search_path = qc_evil, pg_catalog, public;
SELECT queryclaw.retry_requests(ARRAY[:bob_cancelled]::bigint[]) AS retried;
RESET search_path;
RESET ROLE;
RESET queryclaw.max_queued_per_role;
DROP SCHEMA qc_evil CASCADE;

-- clean up
TRUNCATE queryclaw.requests CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_retry_alice, qc_retry_bob, qc_retry_carol;
REVOKE USAGE ON SCHEMA qc_test FROM qc_retry_alice, qc_retry_bob, qc_retry_carol;
DROP ROLE qc_retry_alice, qc_retry_bob, qc_retry_carol;
