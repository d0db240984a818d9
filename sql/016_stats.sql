--
-- queryclaw.stats: the last 24 hours by role and host, the DBA's first look.
--
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

-- rows with known latencies, written as the table's owner would (qc_frank's
-- role is gone: they have no role_id)
CREATE ROLE qc_erin;
INSERT INTO queryclaw.audit_log (at, role, role_id, pid, func, method, url, status, outcome, bytes, elapsed_ms)
SELECT now() - interval '1 hour', 'qc_erin', 'qc_erin', 1, 'api_call', 'GET',
       'https://api.example.com/v1/items/' || i, CASE WHEN i = 9 THEN 500 ELSE 200 END,
       CASE i WHEN 9 THEN 'http_error' WHEN 10 THEN 'timeout' ELSE 'ok' END, 1000, i
  FROM generate_series(1, 10) i;
INSERT INTO queryclaw.audit_log (at, role, role_id, pid, func, method, url, status, outcome, bytes, elapsed_ms)
VALUES (now() - interval '2 hours', 'qc_erin', 'qc_erin', 1, 'web_fetch', 'GET', 'https://Docs.Example.com:8443/guide?page=2', 200, 'ok', 5000, 40),
       (now() - interval '3 hours', 'qc_frank', NULL, 1, 'web_fetch', 'GET', 'http://10.0.0.1/admin', NULL, 'refused', 0, 0.1),
       (now() - interval '3 hours', 'qc_frank', NULL, 1, 'web_fetch', 'GET', 'https://api.example.com/', NULL, 'cancelled', 0, 250),
       -- outside the window
       (now() - interval '25 hours', 'qc_erin', 'qc_erin', 1, 'web_fetch', 'GET', 'https://old.example.com/', 200, 'ok', 99, 1);

SELECT role, host, calls, ok, http_error, refused, timeout, error, cancelled, bytes,
       p50_ms, p95_ms, last_call > now() - interval '24 hours' AS recent
  FROM queryclaw.stats ORDER BY role, host;

-- an ordinary role sees only its own calls; a role created later under a
-- gone role's name does not get its rows
CREATE ROLE qc_frank;
SET ROLE qc_erin;
SELECT role, host, calls FROM queryclaw.stats ORDER BY host;
SET ROLE qc_frank;
SELECT role, host, calls FROM queryclaw.stats ORDER BY host;
RESET ROLE;
DROP ROLE qc_erin, qc_frank;

-- real calls show up too
TRUNCATE queryclaw.audit_log;
SELECT count(queryclaw.web_fetch(qc_test.url('/hello'))) AS calls FROM generate_series(1, 4);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/status/404'))$$);
SELECT qc_test.audit_flush();
SELECT role = current_user AS own, qc_test.scrub(host) AS host, calls, ok, http_error, bytes,
       p50_ms >= 0 AS p50, p95_ms >= p50_ms AS p95
  FROM queryclaw.stats;
