--
-- Names, resolved by the DNS fixture of the test network namespace
-- (test/fixture/dns.py): *.loopback.test is 127.0.0.1, *.hang.test is
-- never answered, any other name does not exist.  Run only in that
-- namespace (test/run.sh skips it elsewhere).
--

-- a session keeps at most 16 lookup threads, the ones it stopped waiting
-- for included, until the name server gives up on them (5 s here)
SET queryclaw.timeout = '50ms';
SELECT count(*) FILTER (WHERE r->>'detail' LIKE 'Name resolution timed out%') AS timed_out,
       count(*) FILTER (WHERE r->>'detail' LIKE 'Too many earlier name lookups%') AS refused
  FROM generate_series(1, 20) AS i,
       LATERAL queryclaw.check_url('http://t' || i || '.hang.test/') AS r;
RESET queryclaw.timeout;
SELECT qc_test.wait_until($$(queryclaw.check_url('http://www.loopback.test/')->>'detail')
                            NOT LIKE 'Too many%'$$) AS lookups_start_again;

-- a name is checked on the addresses it resolves to
SELECT jsonb_pretty(queryclaw.check_url('http://www.loopback.test/') - 'hint') AS resolved;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://www.loopback.test/')$$) AS refused_on_connect;
SELECT queryclaw.web_fetch('http://www.loopback.test:' || current_setting('qc_test.port') || '/hello')
    AS allowed_by_address;

-- a name that does not exist
SELECT queryclaw.check_url('http://nowhere.test/') - 'port' AS unknown;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://nowhere.test/')$$) AS unknown;

-- a name server that never answers: queryclaw.timeout ends the wait
SET queryclaw.timeout = '300ms';
SELECT queryclaw.check_url('http://slow.hang.test/') - 'port' AS lookup_timed_out;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://slow.hang.test/')$$) AS lookup_timed_out;
RESET queryclaw.timeout;

-- and a cancel stops a call during name resolution
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop($$SELECT queryclaw.web_fetch('http://a.hang.test/')$$) AS fetch;
SELECT qc_test.cancel_stop($$SELECT queryclaw.api_call('http://b.hang.test/')$$) AS api_call;
SELECT qc_test.cancel_stop($$SELECT count(*) FROM queryclaw.web_fetch_many(
       ARRAY['http://c.hang.test/', 'http://d.hang.test/', 'http://e.hang.test/'])$$) AS batch;
SELECT qc_test.cancel_stop($$SELECT queryclaw.check_url('http://f.hang.test/')$$) AS check_url;
SELECT qc_test.cancel_stop($$SELECT queryclaw.llm_chat_tools('SCENARIO:tool_call URL:http://g.hang.test/')$$)
    AS llm_tool;
RESET statement_timeout;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS next_call_works;

-- a name with several addresses is refused when any of them is refused,
-- by check_url and by the real call alike, whichever address libcurl would
-- have tried first; nothing is sent to them (the fixture listens on
-- 127.0.0.1, which is allowlisted; 127.0.0.2 is not)
CREATE FUNCTION pg_temp.sorted(a jsonb) RETURNS jsonb LANGUAGE sql
AS $$ SELECT jsonb_agg(e ORDER BY e) FROM jsonb_array_elements(a) AS e $$;
SELECT qc_test.reset_requests();
SELECT r->>'allowed' AS allowed, r->>'reason' AS reason, pg_temp.sorted(r->'addresses') AS addresses
  FROM queryclaw.check_url('http://www.multi.test:' || current_setting('qc_test.port') || '/hello') AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://www.multi.test:' || current_setting('qc_test.port') || '/hello')$$)
    AS multi;
SELECT r->>'allowed' AS allowed, r->>'reason' AS reason, pg_temp.sorted(r->'addresses') AS addresses
  FROM queryclaw.check_url('http://www.mixed.test/') AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://www.mixed.test/')$$) AS mixed;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://www.mixed.test/'))$$)
    AS mixed_on_redirect;
-- one request: the redirect's own
SELECT qc_test.requests_served() AS requests;
-- once every address is allowed, both agree again
DO $$ BEGIN EXECUTE format('SET queryclaw.local_allowlist = %L',
                           '127.0.0.1:' || current_setting('qc_test.port') || ', 127.0.0.2'); END $$;
SELECT queryclaw.check_url('http://www.multi.test:' || current_setting('qc_test.port') || '/hello')->>'allowed'
    AS allowed;
SELECT queryclaw.web_fetch('http://www.multi.test:' || current_setting('qc_test.port') || '/hello') AS fetched;
RESET queryclaw.local_allowlist;

-- names are looked up, and sent, as A-labels
SELECT qc_test.scrub(r->'body'->'headers'->>'host') AS host_sent
  FROM unnest(ARRAY['ｗｗｗ．ｌｏｏｐｂａｃｋ．ｔｅｓｔ', 'Bücher.loopback.test.']) AS h,
       LATERAL queryclaw.api_call('http://' || h || ':' || current_setting('qc_test.port') || '/echo') AS r;

-- check_url's lookups are audited
SELECT qc_test.audit_flush();
SELECT func, qc_test.scrub(url) AS url, outcome, reason, pg_temp.sorted(detail->'addresses') AS addresses
  FROM queryclaw.audit_log WHERE func = 'check_url' AND url ~ '(multi|mixed)\.test' ORDER BY id;
