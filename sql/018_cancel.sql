--
-- A cancel stops every kind of wait, with SQLSTATE 57014 (long before the
-- call would have ended by itself), and the session goes on (qc_test.cancel_stop(), in 001_setup;
-- test 019_dns does the same during name lookups, and 011_activity with
-- pg_cancel_backend from another session).
--
SELECT qc_test.audit_flush() AS flushed;
SELECT coalesce(max(id), 0) AS audit_mark FROM queryclaw.audit_log \gset

-- the blackhole port accepts no connection: a request waits in connect
SET queryclaw.local_allowlist = '127.0.0.1';
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop(format('SELECT queryclaw.web_fetch(%L)',
       'http://127.0.0.1:' || current_setting('qc_test.blackhole_port') || '/')) AS connecting;
SELECT qc_test.cancel_stop(format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/fault/silent'))) AS waiting;
SELECT qc_test.cancel_stop(format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/drip?n=30'))) AS dripping;
SELECT qc_test.cancel_stop(format('SELECT queryclaw.api_call(%L)', qc_test.url('/slow?ms=5000'))) AS api_call;
SELECT qc_test.cancel_stop(format('SELECT count(*) FROM queryclaw.web_fetch_many(%L::text[])',
       array_fill(qc_test.url('/fault/silent'), ARRAY[8]))) AS batch;
SELECT qc_test.cancel_stop(format('SELECT count(*) FROM queryclaw.api_call_many(%L::jsonb)',
       jsonb_build_array(jsonb_build_object('url', qc_test.url('/slow?ms=5000')),
                         jsonb_build_object('url', 'http://127.0.0.1:' || current_setting('qc_test.blackhole_port') || '/')))) AS api_batch;
SELECT qc_test.cancel_stop($$SELECT queryclaw.llm_chat_tools('SCENARIO:slow:5000')$$) AS llm_waiting_for_model;
SELECT qc_test.cancel_stop(format('SELECT queryclaw.llm_chat_tools(%L)',
       'SCENARIO:tool_call URL:' || qc_test.url('/slow?ms=5000'))) AS llm_waiting_for_tool;
RESET statement_timeout;

-- each was audited as cancelled, and the session works on
SELECT qc_test.audit_flush() AS flushed;
SELECT func, count(*) AS cancelled FROM queryclaw.audit_log
 WHERE id > :audit_mark AND outcome = 'cancelled'
 GROUP BY func ORDER BY func;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS next_call_works;
RESET queryclaw.local_allowlist;
