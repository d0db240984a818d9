--
-- Cancel means not sent: a request cancelled after a worker claimed it is
-- never sent if it had not started, and one on the wire has its transfer
-- aborted within a second.  Both end cancelled, their callbacks called
-- with 'cancelled'.
--
-- qc_canceller's requests go to the fixture one at a time
-- (max_host_concurrency 1 for the role): of four 3-second requests, one
-- is on the wire and three wait their turn when they are cancelled.  Before, all four were sent, one after the other.
--
CREATE ROLE qc_canceller;
ALTER ROLE qc_canceller SET queryclaw.max_host_concurrency = 1;
GRANT USAGE ON SCHEMA qc_test TO qc_canceller;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.cancel_requests(bigint[]), queryclaw.wait(bigint[], interval)
    TO qc_canceller;
CREATE TABLE qc_cancel_seen (id bigint, error text);
GRANT INSERT ON qc_cancel_seen TO qc_canceller;
CREATE FUNCTION qc_cancel_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$ INSERT INTO public.qc_cancel_seen VALUES (id, error) $$;

SELECT qc_test.reset_requests();
SET ROLE qc_canceller;
SELECT array_agg(queryclaw.api_call_async(qc_test.url('/slow?ms=3000'),
                 callback => 'qc_cancel_note(bigint,jsonb,text,jsonb)'::regprocedure)) AS ids
  FROM generate_series(1, 4) \gset
RESET ROLE;
-- one is on the wire (the fixture served it), the others wait their turn
SELECT qc_test.wait_until('qc_test.requests_served() = 1') AS one_on_the_wire;
SELECT clock_timestamp() AS t0 \gset
SET ROLE qc_canceller;
SELECT queryclaw.cancel_requests(:'ids') AS cancelled;
RESET ROLE;
-- final at once; finished once a worker called the callback
SELECT qc_test.wait_until(format('(SELECT count(*) FROM queryclaw.requests
                                    WHERE id = ANY (%L) AND finished_at IS NOT NULL) = 4', :'ids'))
       AS finished;
SELECT clock_timestamp() - :'t0' < interval '10 s' AS before_they_would_have_ended;
SELECT state, error, result FROM queryclaw.requests WHERE id = ANY (:'ids') ORDER BY id;
-- the transfer on the wire is cut off as the worker sees the cancel (its
-- callback did not wait for that: a callback worker called it once the
-- cancel committed)
SELECT qc_test.wait_for_audit(1, format('func = ''api_call_async'' AND (detail->''request''->>''id'')::bigint = ANY (%L)',
                                        :'ids')) AS cut_off_audited;
SELECT qc_test.audit_flush() AS flushed;
-- the one on the wire was cut off, audited as cancelled; the others were
-- never sent (the fixture served no other, and they have no audit row)
SELECT qc_test.requests_served() - 1 AS other_requests_served;
SELECT outcome, elapsed_ms < 2000 AS cut_off, count(*)
  FROM queryclaw.audit_log
 WHERE func = 'api_call_async' AND (detail->'request'->>'id')::bigint = ANY (:'ids')
 GROUP BY 1, 2;
-- every callback got 'cancelled'
SELECT count(*) AS callbacks, count(*) FILTER (WHERE error = 'cancelled') AS cancelled
  FROM qc_cancel_seen;

-- Deleted is cancelled: a running request whose row is deleted, with no
-- cancel, is cut off as a cancelled one is (before, it ran its 3 s and
-- was audited ok), and none of the other three goes out: a request queued
-- after them is the only other one the fixture serves.
SELECT qc_test.reset_requests();
SET ROLE qc_canceller;
SELECT array_agg(queryclaw.api_call_async(qc_test.url('/slow?ms=3000'))) AS gone_ids
  FROM generate_series(1, 4) \gset
RESET ROLE;
SELECT qc_test.wait_until('qc_test.requests_served() = 1') AS one_on_the_wire;
DELETE FROM queryclaw.requests WHERE id = ANY (:'gone_ids');
SELECT qc_test.wait_for_audit(1, format('func = ''api_call_async'' AND (detail->''request''->>''id'')::bigint = ANY (%L)',
                                        :'gone_ids')) AS cut_off_audited;
SET ROLE qc_canceller;
SELECT queryclaw.api_call_async(qc_test.url('/hello')) AS after_id \gset
SELECT state FROM queryclaw.wait(ARRAY[:after_id]::bigint[], '30 s');
RESET ROLE;
SELECT qc_test.requests_served() - 2 AS deleted_requests_served;
SELECT qc_test.audit_flush() AS flushed;
SELECT outcome, elapsed_ms < 2000 AS cut_off, count(*)
  FROM queryclaw.audit_log
 WHERE func = 'api_call_async' AND (detail->'request'->>'id')::bigint = ANY (:'gone_ids')
 GROUP BY 1, 2;

-- max_queued_per_role counts a request on the wire as unfinished: it is
-- running (in requests_running_idx, not among the waiting requests)
SELECT qc_test.reset_requests();
SET ROLE qc_canceller;
SELECT queryclaw.api_call_async(qc_test.url('/slow?ms=3000')) AS slow_id \gset
RESET ROLE;
SELECT qc_test.wait_until('qc_test.requests_served() = 1') AS on_the_wire;
SELECT state, waiting FROM queryclaw.requests WHERE id = :slow_id;
SET queryclaw.max_queued_per_role = 1;
SET ROLE qc_canceller;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/hello'))$$) AS over_the_limit;
SELECT queryclaw.cancel_requests(ARRAY[:slow_id]::bigint[]) AS cancelled;
RESET ROLE;
RESET queryclaw.max_queued_per_role;
-- cut off as the worker sees the cancel: nothing is left on the wire
SELECT qc_test.wait_for_audit(1, format('func = ''api_call_async'' AND (detail->''request''->>''id'')::bigint = %s',
                                        :slow_id)) AS cut_off_audited;

-- clean up
DELETE FROM queryclaw.requests WHERE id = ANY (:'ids') OR id = :slow_id OR id = :after_id;
DROP TABLE qc_cancel_seen;
DROP FUNCTION qc_cancel_note;
DROP OWNED BY qc_canceller;
ALTER ROLE qc_canceller RESET ALL;
DROP ROLE qc_canceller;
