--
-- requests.waiting: why a queued or retrying request waits, in words a
-- DBA acts on, and NULL once it goes.  Times vary: "until ..." is shown
-- as "until T".
--
CREATE ROLE qc_waits;
GRANT USAGE ON SCHEMA qc_test TO qc_waits;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
    TO qc_waits;
CREATE TABLE qc_wait_ids (label text, id bigint);
GRANT INSERT ON qc_wait_ids TO qc_waits;
CREATE FUNCTION qc_test.waits(path text, label text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    SET ROLE qc_waits;
    INSERT INTO qc_wait_ids SELECT label, queryclaw.api_call_async(qc_test.url(path));
    RESET ROLE;
END
$$;
-- what the labelled requests say, once cond holds for all of them
CREATE FUNCTION qc_test.waiting(label_like text, cond text)
RETURNS TABLE (label text, state text, waiting text) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM qc_test.wait_until(format(
        'NOT EXISTS (SELECT FROM qc_wait_ids i JOIN queryclaw.requests r USING (id)
                      WHERE i.label LIKE %L AND NOT (%s))', label_like, cond));
    RETURN QUERY SELECT i.label, r.state, regexp_replace(r.waiting, 'until .*', 'until T')
                   FROM qc_wait_ids i JOIN queryclaw.requests r USING (id)
                  WHERE i.label LIKE label_like ORDER BY i.label;
END
$$;

-- A session with queryclaw.enabled off (as a role's is when it is
-- stored for it): its request says so from the enqueue on.  (Seen before
-- the commit: a worker goes by the role's stored settings, which here do
-- not pause it, and would send it.)
BEGIN;
SET LOCAL queryclaw.enabled = off;
SELECT qc_test.waits('/hello', 'paused at enqueue');
SELECT r.waiting FROM qc_wait_ids i JOIN queryclaw.requests r USING (id);
ROLLBACK;

-- Paused by ALTER ROLE (this session does not log in as the role): the
-- worker marks its waiting requests as it finds the pause.
ALTER ROLE qc_waits SET queryclaw.enabled = off;
SELECT qc_test.waits('/hello', 'paused ' || i) FROM generate_series(1, 3) i;
SELECT * FROM qc_test.waiting('paused%', 'r.waiting IS NOT NULL');
-- the pause ends: they go, and say nothing any more
ALTER ROLE qc_waits RESET queryclaw.enabled;
SELECT * FROM qc_test.waiting('paused%', $$r.state = 'done'$$);

-- A host rate limit: three requests to a host limited to 1/s, one of
-- them waiting for its token says which limit.
ALTER SYSTEM SET queryclaw.host_rate_limit = '127.0.0.1=1/s';
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT qc_test.waits('/hello', 'rate ' || i) FROM generate_series(1, 3) i;
SELECT qc_test.wait_until($$EXISTS (SELECT FROM qc_wait_ids i JOIN queryclaw.requests r USING (id)
                                     WHERE i.label LIKE 'rate%'
                                       AND r.waiting = 'host rate limit 127.0.0.1=1/s')$$) AS one_waited;
ALTER SYSTEM RESET queryclaw.host_rate_limit;
SELECT pg_reload_conf();
SELECT * FROM qc_test.waiting('rate%', $$r.state = 'done'$$);

-- A retry after a 503 that asked for 2 s.
SELECT qc_test.waits('/flaky?run=waiting&fail=1&retry_after=2', 'retry');
SELECT * FROM qc_test.waiting('retry', $$r.state = 'retrying'$$);
SELECT * FROM qc_test.waiting('retry', $$r.state = 'done'$$);

-- A spent max_calls_per_hour.
ALTER ROLE qc_waits SET queryclaw.max_calls_per_hour = 1;
SELECT qc_test.waits('/hello', 'budget ' || i) FROM generate_series(1, 2) i;
SELECT * FROM qc_test.waiting('budget%', $$r.state = 'done' OR r.waiting IS NOT NULL$$);

-- clean up
DELETE FROM queryclaw.requests WHERE id IN (SELECT id FROM qc_wait_ids);
DROP TABLE qc_wait_ids;
DROP FUNCTION qc_test.waits, qc_test.waiting;
DROP OWNED BY qc_waits;
ALTER ROLE qc_waits RESET ALL;
DROP ROLE qc_waits;
