--
-- queryclaw.audit_retention: the audit worker deletes rows older than it,
-- in batches, at most once a minute and right after a configuration reload.
--
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SHOW queryclaw.audit_retention;

-- 25,000 rows of two months ago, and one a day for the last 40 days (in
-- 24-hour days, as the retention counts them, whatever the time zone's
-- daylight saving time does)
INSERT INTO queryclaw.audit_log (at, role, pid, func, method, url, outcome)
SELECT now() - interval '60 days', 'qc_history', 1, 'web_fetch', 'GET', 'https://example.com/old', 'ok'
  FROM generate_series(1, 25000);
INSERT INTO queryclaw.audit_log (at, role, pid, func, method, url, outcome)
SELECT now() - make_interval(hours => 24 * d) + interval '1 minute', 'qc_history', 1, 'web_fetch', 'GET',
       'https://example.com/' || d, 'ok'
  FROM generate_series(0, 39) d;

-- it is the worker's setting: set in the server's configuration, checked
-- when set
SET queryclaw.audit_retention = '30 days';
ALTER SYSTEM SET queryclaw.audit_retention = 'a month or so';
ALTER SYSTEM SET queryclaw.audit_retention = '-1 day';
ALTER SYSTEM SET queryclaw.audit_retention = '30 days';
SELECT pg_reload_conf();
SELECT qc_test.wait_until('(SELECT count(*) FROM queryclaw.audit_log) = 31') AS applied;
SELECT count(*) AS kept, max(now() - at) < interval '720 hours' AS all_recent FROM queryclaw.audit_log;

-- intervals in any of PostgreSQL's spellings; 0 keeps rows forever
ALTER SYSTEM SET queryclaw.audit_retention = 'P1W';
ALTER SYSTEM SET queryclaw.audit_retention = '12 hours';
ALTER SYSTEM SET queryclaw.audit_retention = '0';
ALTER SYSTEM RESET queryclaw.audit_retention;
SELECT pg_reload_conf();
