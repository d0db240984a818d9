--
-- queue_status's estimate of the time left, on requests written by hand
-- with known times (as 016_stats does with audit rows): the pace is that of
-- the last minute's ends, measured over the time since the first of them;
-- NULL when it says nothing.  Before, a run that had just begun showed
-- hours (its pace measured over a whole minute), a paused role's a few
-- milliseconds, and 10,000 requests just queued showed last_minute 0.
-- The rows are written and read in one transaction, whose now() they are
-- timed against, so the figures do not depend on how fast the test runs,
-- and which is rolled back: the async worker never sees them.  A request
-- due later (a retry after a 503) counts its wait: before, rows waiting
-- 30 s on a retry showed an eta of a second.
--
CREATE ROLE qc_status_busy;		-- 100 ended in the last 10 s, 1,000 queued
CREATE ROLE qc_status_paused;	-- 100 ended 50-40 s ago, none since, 1,000 queued
CREATE ROLE qc_status_new;		-- 10,000 just queued, none ended yet
CREATE ROLE qc_status_retrying;	-- 100 ended in the last 10 s, 10 due again in 30 s
CREATE FUNCTION qc_test.fake_requests(who regrole, state text, n int, ended_from interval,
                                      ended_to interval, due_in interval DEFAULT '0 s')
RETURNS void LANGUAGE sql AS $$
INSERT INTO queryclaw.requests (role, func, state, request, created_at, next_attempt_at, finished_at)
SELECT who, 'web_fetch_async', state, '{"url": "http://example.com/"}',
       now() - interval '2 minutes', now() + due_in,
       CASE WHEN state IN ('done', 'failed', 'cancelled')
            THEN now() - ended_from + (ended_from - ended_to) * i / n END
  FROM generate_series(1, n) i
$$;
BEGIN;
SELECT qc_test.fake_requests('qc_status_busy', 'done', 100, '10 s', '0 s');
SELECT qc_test.fake_requests('qc_status_busy', 'queued', 1000, NULL, NULL);
SELECT qc_test.fake_requests('qc_status_paused', 'done', 100, '50 s', '40 s');
SELECT qc_test.fake_requests('qc_status_paused', 'queued', 1000, NULL, NULL);
INSERT INTO queryclaw.requests (role, func, request)
SELECT 'qc_status_new', 'web_fetch_async', '{"url": "http://example.com/"}'
  FROM generate_series(1, 10000);
SELECT qc_test.fake_requests('qc_status_retrying', 'done', 100, '10 s', '0 s');
SELECT qc_test.fake_requests('qc_status_retrying', 'retrying', 10, NULL, NULL, '30 s');

-- busy: 100 in 10 s is 10/s, so 1,000 queued take about 100 s
SELECT role, state, requests, last_minute,
       eta BETWEEN interval '90 s' AND interval '110 s' AS eta_about_100_s, eta IS NULL AS no_eta
  FROM queryclaw.queue_status
 WHERE role::text LIKE 'qc_status_%' AND role::text <> 'qc_status_retrying'
 ORDER BY role::text, state;
-- retrying: at 10/s its 10 requests would take 1 s, but they are due in 30 s
SELECT state, requests, eta BETWEEN interval '29 s' AND interval '31 s' AS eta_is_the_retry
  FROM queryclaw.queue_status WHERE role::text = 'qc_status_retrying' ORDER BY state;
ROLLBACK;

DROP FUNCTION qc_test.fake_requests;
DROP ROLE qc_status_busy, qc_status_paused, qc_status_new, qc_status_retrying;
