--
-- queue_hosts: the asynchronous requests per host of their URLs, with the
-- host's limits (host_limits()).
--
-- qc_hosts_run's requests run; qc_hosts_paused's stay queued (queryclaw.
-- enabled is off for her); qc_hosts_admin is a member of queryclaw_admin.
--
CREATE ROLE qc_hosts_run;
CREATE ROLE qc_hosts_paused;
CREATE ROLE qc_hosts_admin;
GRANT queryclaw_admin TO qc_hosts_admin;
GRANT USAGE ON SCHEMA qc_test TO qc_hosts_run, qc_hosts_paused, qc_hosts_admin;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.wait(bigint[], interval), queryclaw.cancel_requests(bigint[])
    TO qc_hosts_run, qc_hosts_paused;
ALTER ROLE qc_hosts_paused SET queryclaw.enabled = off;
TRUNCATE queryclaw.requests CASCADE;

-- the view is for every role, host_limits too; both say what they are
SELECT has_table_privilege('public', 'queryclaw.queue_hosts', 'SELECT') AS view_public,
       has_function_privilege('public', 'queryclaw.host_limits(text)', 'EXECUTE') AS function_public,
       obj_description('queryclaw.queue_hosts'::regclass, 'pg_class') IS NOT NULL AS view_commented,
       obj_description('queryclaw.host_limits(text)'::regprocedure) IS NOT NULL AS function_commented;
-- host_rate_limit is read from the server's configuration: a new session
-- has what the reload gave the server
ALTER SYSTEM SET queryclaw.host_rate_limit = '127.0.0.1=5/s, *.example.com=30/min, api.example.org=2.5/s, *=1000/s';
SELECT pg_reload_conf();
\c queryclaw_regression
-- what host_limits shows, every role may read anyway
SET ROLE qc_hosts_paused;
SHOW queryclaw.host_rate_limit;
SHOW queryclaw.max_host_concurrency;
RESET ROLE;

-- the entry that applies to a host, as the workers pick it: its own, the
-- longest *.domain, then *; with or without a port, however written
SELECT h AS host, l.rate_limit, l.max_concurrency
  FROM unnest(ARRAY['127.0.0.1', '127.0.0.1:8080', 'api.example.com', 'API.Example.COM.:8443',
                    'example.com', 'api.example.org', 'other.net', '[2001:db8::1]:8080',
                    '2001:db8::1', 'not a host']) AS h,
       LATERAL queryclaw.host_limits(h) l;
-- the cap is this session's max_host_concurrency
SET queryclaw.max_host_concurrency = 3;
SELECT max_concurrency FROM queryclaw.host_limits('example.com');
RESET queryclaw.max_host_concurrency;

--
-- Requests that ran: web_fetch_async's results do not say how long the
-- response took, so a host that only they went to has no median; once an
-- api_call_async is done there, it has.
--
SET ROLE qc_hosts_run;
SELECT array[queryclaw.web_fetch_async(qc_test.url('/hello')),
             queryclaw.web_fetch_async(qc_test.url('/hello')),
             queryclaw.web_fetch_async(qc_test.url('/status/404'))] AS web_ids \gset
SELECT state, count(*) FROM queryclaw.wait(:'web_ids', NULL) GROUP BY 1 ORDER BY 1;
SELECT qc_test.scrub(host) AS host, in_flight, queued, done_last_minute, failed_last_minute,
       median_ms IS NOT NULL AS has_median, rate_limit, max_concurrency
  FROM queryclaw.queue_hosts;
SELECT queryclaw.api_call_async(qc_test.url('/json')) AS json_id \gset
SELECT state FROM queryclaw.wait(ARRAY[:json_id]::bigint[], NULL);
SELECT qc_test.scrub(host) AS host, done_last_minute, median_ms IS NOT NULL AS has_median,
       median_ms > 0 AS positive
  FROM queryclaw.queue_hosts;
-- a request in flight
SELECT queryclaw.api_call_async(qc_test.url('/slow?ms=3000')) AS slow_id \gset
RESET ROLE;
SELECT qc_test.wait_until(format('(SELECT state = %L FROM queryclaw.requests WHERE id = %s)',
                                 'running', :slow_id)) AS running;
SELECT qc_test.scrub(host) AS host, in_flight, queued FROM queryclaw.queue_hosts;
SET ROLE qc_hosts_run;
SELECT queryclaw.cancel_requests(ARRAY[:slow_id]::bigint[]) AS cancelled;
RESET ROLE;

--
-- Requests waiting: hosts of other APIs, with their limits.  A model's
-- request names no URL and is not counted.
--
SET ROLE qc_hosts_paused;
SELECT count(queryclaw.api_call_async(u)) AS queued
  FROM unnest(ARRAY['https://api.example.com/v1/a', 'https://API.example.com/v1/b',
                    'https://api.example.com:8443/c', 'http://[2001:DB8::1]:8080/d',
                    'https://api.example.org/e?api_key=s3cr3t']) AS u;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:plain', tools => '{}') > 0 AS model_request_queued;
-- each role sees the hosts of its own requests
SELECT host, in_flight, queued, done_last_minute, failed_last_minute, median_ms, rate_limit
  FROM queryclaw.queue_hosts ORDER BY host;
SET ROLE qc_hosts_run;
SELECT qc_test.scrub(host) AS host, queued FROM queryclaw.queue_hosts ORDER BY host;
-- queryclaw_admin sees all
SET ROLE qc_hosts_admin;
SELECT qc_test.scrub(host) AS host, queued, done_last_minute, failed_last_minute, rate_limit
  FROM queryclaw.queue_hosts ORDER BY host;
RESET ROLE;

-- finished requests older than a minute are no longer counted
UPDATE queryclaw.requests SET finished_at = finished_at - interval '2 minutes'
 WHERE state IN ('done', 'failed', 'cancelled');
SET ROLE qc_hosts_run;
SELECT count(*) AS hosts FROM queryclaw.queue_hosts;
RESET ROLE;

-- clean up
ALTER SYSTEM RESET queryclaw.host_rate_limit;
SELECT pg_reload_conf();
TRUNCATE queryclaw.requests CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_hosts_run, qc_hosts_paused;
REVOKE USAGE ON SCHEMA qc_test FROM qc_hosts_run, qc_hosts_paused, qc_hosts_admin;
DROP ROLE qc_hosts_run, qc_hosts_paused, qc_hosts_admin;
