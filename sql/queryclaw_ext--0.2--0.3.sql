/* queryclaw_ext 0.2 -> 0.3: every change to SQL objects since release 0.2 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.3'" to load this file. \quit

-- Release 0.2 (tag v0.2.0) is what users have installed; its scripts,
-- queryclaw_ext--0.1.sql and queryclaw_ext--0.1--0.2.sql, are never
-- changed again.  Every change to the extension's SQL objects from then on
-- goes here, and test/upgrade/ checks that a database updated from 0.1 and
-- one updated from 0.2 both end equal to a fresh install.

-- ---- Callbacks run apart from the requests (the callback workers) ----
--
-- An async worker no longer calls a request's callback in its own run: it
-- records the outcome and, when a callback is due, says so in waiting
-- ('callback queued'; the request stays 'running' until the callback has
-- run, a cancelled one 'cancelled' with finished_at unset), and a callback
-- worker calls the callback and makes the request final in one
-- transaction.  The callback workers find those requests role by role
-- through this index, round-robin between roles.
CREATE INDEX requests_callback_due_idx ON queryclaw.requests (role, id)
	WHERE waiting = 'callback queued';
-- cancelled requests whose callback 0.2's workers had still to call: the
-- callback workers find them by the same mark
UPDATE queryclaw.requests SET waiting = 'callback queued'
 WHERE state = 'cancelled' AND finished_at IS NULL AND callback IS NOT NULL;
DROP INDEX queryclaw.requests_cancelled_idx;

COMMENT ON COLUMN queryclaw.requests.state IS
'queued, running (on the wire; or answered, its callback due: waiting says callback queued), retrying, done, failed or cancelled.';
COMMENT ON COLUMN queryclaw.requests.waiting IS
'Why a request waits, in words a DBA acts on: for a queued or retrying one, a pause, a host rate limit, a spent budget, a retry after a status; callback queued for one whose outcome is recorded and whose callback has not run yet.  NULL when it does not wait.';

-- in_flight counts what is on the wire, not the requests answered whose
-- callback is due
CREATE OR REPLACE VIEW queryclaw.queue_hosts WITH (security_invoker = true) AS
	SELECT h.host, h.in_flight, h.queued, h.done_last_minute, h.failed_last_minute,
		   h.median_ms, l.rate_limit, l.max_concurrency
	  FROM (SELECT pg_catalog.lower(pg_catalog.substring(r.request ->> 'url', '^[^:/?#]+://([^/?#]*)'))
				   AS host,
				   count(*) FILTER (WHERE r.state = 'running' AND r.waiting IS NULL) AS in_flight,
				   count(*) FILTER (WHERE r.state IN ('queued', 'retrying')) AS queued,
				   count(*) FILTER (WHERE r.state = 'done') AS done_last_minute,
				   count(*) FILTER (WHERE r.state = 'failed') AS failed_last_minute,
				   percentile_cont(0.5) WITHIN GROUP (ORDER BY (r.result ->> 'elapsed_ms')::float8)
					   FILTER (WHERE r.state = 'done') AS median_ms
			  FROM queryclaw.requests r
			 WHERE r.request ? 'url'
			   AND (r.state IN ('queued', 'running', 'retrying')
					OR (r.state IN ('done', 'failed')
						AND r.finished_at > pg_catalog.now() - interval '1 minute'))
			 GROUP BY 1) h
	 CROSS JOIN LATERAL queryclaw.host_limits(h.host) l;
