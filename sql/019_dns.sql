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

-- and a cancel stops a call during name resolution within half a second
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
