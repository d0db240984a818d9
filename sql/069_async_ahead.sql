--
-- async_ahead: while a backlog lasts, the worker claims a few requests
-- beyond its free slots for a quick host (one whose responses take less
-- than 100 ms), and a slot that comes free takes one at once.  The host's
-- cap still holds on the wire: the transport holds every role's calls to
-- a host to the worker's max_host_concurrency, and a role whose own cap is
-- lower is held to it by the worker's count alone, which then admits none
-- beyond it.
--
-- qc_ahead_low's cap is 2, below the worker's 8; qc_ahead_full has the
-- worker's.
--
CREATE ROLE qc_ahead_low;
CREATE ROLE qc_ahead_full;
GRANT USAGE ON SCHEMA qc_test TO qc_ahead_low, qc_ahead_full;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.wait(bigint[], interval)
    TO qc_ahead_low, qc_ahead_full;
ALTER ROLE qc_ahead_low SET queryclaw.max_host_concurrency = 2;
TRUNCATE queryclaw.requests CASCADE;
SHOW queryclaw.max_host_concurrency;
-- /stats counts the most /slow requests in progress at once
CREATE FUNCTION qc_test.slow_peak_reset() RETURNS int LANGUAGE sql
AS $$ SELECT ((queryclaw.api_call(qc_test.url('/stats/reset')))->'body'->>'slow_peak')::int $$;
-- n requests to a quick host, as the caller
CREATE FUNCTION qc_test.quick_burst(n int) RETURNS bigint[] LANGUAGE sql
AS $$ SELECT array_agg(queryclaw.api_call_async(qc_test.url('/slow?ms=30')))
        FROM generate_series(1, n) $$;

-- a quick host, a role below the worker's cap: never more than 2 at once
SELECT qc_test.slow_peak_reset() AS reset;
SET ROLE qc_ahead_low;
SELECT qc_test.quick_burst(60) AS ids \gset
SELECT state, count(*) FROM queryclaw.wait(:'ids', '60 s') GROUP BY 1;
RESET ROLE;
SELECT qc_test.slow_peak() BETWEEN 1 AND 2 AS at_most_2_at_once;

-- the worker's cap: never more than 8 at once
SELECT qc_test.slow_peak_reset() AS reset;
SET ROLE qc_ahead_full;
SELECT qc_test.quick_burst(150) AS ids \gset
SELECT state, count(*) FROM queryclaw.wait(:'ids', '60 s') GROUP BY 1;
RESET ROLE;
SELECT qc_test.slow_peak() BETWEEN 2 AND 8 AS at_most_8_at_once;

-- Requests claimed ahead are running, not on the wire: more are running
-- than the host's cap of 8, never more on the wire.  Cancelled before they
-- go out, they end cancelled; none is left running.
GRANT EXECUTE ON FUNCTION queryclaw.cancel_requests(bigint[]) TO qc_ahead_full;
SELECT qc_test.slow_peak_reset() AS reset;
SET ROLE qc_ahead_full;
SELECT qc_test.quick_burst(300) AS ids \gset
RESET ROLE;
SELECT qc_test.wait_until(format('(SELECT count(*) > 8 FROM queryclaw.requests
                                    WHERE id = ANY (%L) AND state = %L)', :'ids', 'running'))
       AS more_running_than_on_the_wire;
SET ROLE qc_ahead_full;
SELECT queryclaw.cancel_requests(:'ids') > 0 AS cancelled_some;
SELECT count(*) AS requests,
       bool_and(state IN ('done', 'cancelled')) AS all_done_or_cancelled,
       bool_and(state <> 'cancelled' OR (error = 'cancelled' AND sqlstate = '57014')) AS as_cancels_end,
       count(*) FILTER (WHERE state = 'cancelled') > 0 AS some_cancelled
  FROM queryclaw.wait(:'ids', '60 s');
RESET ROLE;
SELECT qc_test.slow_peak() BETWEEN 2 AND 8 AS at_most_8_at_once;
-- a request queued after the cancel goes out after every request claimed
-- before it was sent or dropped: once it is done, the burst is over, and
-- the next test's requests are the fixture's only ones
SET ROLE qc_ahead_full;
SELECT qc_test.quick_burst(1) AS last_ids \gset
SELECT state FROM queryclaw.wait(:'last_ids', '30 s');
RESET ROLE;

-- The worker's cap of 1: a quick host admits no more calls claimed ahead
-- than its cap, so at most 2 of a burst are running at once, one on the
-- wire and one claimed ahead (before, 16 more waited in the worker, and
-- another role's call to the host would have queued behind them).  The
-- fixture's peak shows the worker applied the cap.
ALTER SYSTEM SET queryclaw.max_host_concurrency = 1;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT qc_test.slow_peak_reset() AS reset;
SELECT qc_test.reset_requests();
SET ROLE qc_ahead_full;
SELECT qc_test.quick_burst(40) AS ids \gset
RESET ROLE;
SELECT qc_test.wait_until('qc_test.requests_served() >= 5') AS some_served;
SELECT count(*) <= 2 AS at_most_2_running
  FROM queryclaw.requests WHERE id = ANY (:'ids') AND state = 'running';
SET ROLE qc_ahead_full;
SELECT state, count(*) FROM queryclaw.wait(:'ids', '60 s') GROUP BY 1;
RESET ROLE;
SELECT qc_test.slow_peak() AS at_once;
ALTER SYSTEM RESET queryclaw.max_host_concurrency;
SELECT pg_reload_conf();

-- clean up
DROP FUNCTION qc_test.slow_peak_reset(), qc_test.quick_burst(int);
TRUNCATE queryclaw.requests CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_ahead_low, qc_ahead_full;
REVOKE USAGE ON SCHEMA qc_test FROM qc_ahead_low, qc_ahead_full;
ALTER ROLE qc_ahead_low RESET ALL;
DROP ROLE qc_ahead_low, qc_ahead_full;
