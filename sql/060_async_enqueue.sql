--
-- Asynchronous requests, the enqueue side: what web_fetch_async,
-- api_call_async and llm_chat_tools_async check before they queue
-- anything, what the row holds (secrets redacted), who sees and cancels
-- which rows, wait(), and queue_status.  (Without preload: test/nopreload.)
--
-- The requests here must stay queued whatever the async workers do, so
-- they are queued by roles for which queryclaw.enabled is off: a worker
-- keeps such requests waiting (README, "Asynchronous requests").
--
CREATE ROLE qc_alice;
CREATE ROLE qc_bob;
CREATE ROLE qc_carol;				-- a member of queryclaw_admin
GRANT queryclaw_admin TO qc_carol;
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['qc_alice', 'qc_bob', 'qc_carol'] LOOP
        EXECUTE format('ALTER ROLE %I SET queryclaw.enabled = off', r);
        EXECUTE format('GRANT USAGE ON SCHEMA qc_test TO %I', r);
        EXECUTE format('GRANT EXECUTE ON FUNCTION queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
                        queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                        queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
                        queryclaw.wait(bigint[], interval), queryclaw.cancel_requests(bigint[]),
                        queryclaw.web_fetch(text, text, integer, text),
                        queryclaw.api_call(text, text, jsonb, text, integer) TO %I', r);
    END LOOP;
END
$$;
-- a callback of the right shape, and one of another
CREATE SCHEMA qc_async;
GRANT USAGE ON SCHEMA qc_async TO PUBLIC;
CREATE PROCEDURE qc_async.done(id bigint, result jsonb, error text, context jsonb)
LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
CREATE FUNCTION qc_async.wrong(id bigint, result jsonb) RETURNS void
LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION qc_async.many(id bigint, result jsonb, error text, context jsonb)
RETURNS SETOF int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE PROCEDURE qc_async.private(id bigint, result jsonb, error text, context jsonb)
LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
REVOKE ALL ON PROCEDURE qc_async.private(bigint, jsonb, text, jsonb) FROM PUBLIC;

-- the functions exist, are not for PUBLIC, and say what they do
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public
  FROM pg_proc p
 WHERE p.pronamespace = 'queryclaw'::regnamespace
   AND p.proname IN ('web_fetch_async', 'api_call_async', 'llm_chat_tools_async', 'wait', 'cancel_requests')
 ORDER BY 1::text;

--
-- Refusals, each before anything is queued.
--
SET ROLE qc_alice;
-- no EXECUTE on the function
SELECT qc_test.try($$SELECT queryclaw.web_search('x')$$) AS no_execute;
-- invalid arguments: 22023, as the synchronous functions say
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async('not a url')$$) AS bad_url;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async('http://exa mple.com/')$$) AS bad_host;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), 'pdf')$$) AS bad_format;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), max_chars => 0)$$) AS bad_max_chars;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/echo'), 'FETCH')$$) AS bad_method;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/echo'), headers => '["a"]')$$) AS headers_not_object;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/echo'), headers => '{"X-A": "1\r\nX-B: 2"}')$$) AS crlf_header;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/echo'), headers => '{"Host": "x"}')$$) AS host_header;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/echo'), 'POST', idempotency_key => E'k\n1')$$) AS bad_key;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools_async('hi', '{web_fetch,telnet}')$$) AS bad_tool;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools_async('hi', '{web_search}')$$) AS tool_not_granted;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools_async('hi', max_rounds => 0)$$) AS bad_rounds;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools_async('hi', output_schema => '[1]')$$) AS bad_schema;
-- the callback: the caller may execute it, and it takes (bigint, jsonb, text, jsonb)
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'),
       callback => 'qc_async.private(bigint, jsonb, text, jsonb)')$$) AS callback_not_granted;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'),
       callback => 'qc_async.wrong(bigint, jsonb)')$$) AS callback_wrong_shape;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'),
       callback => 'pg_catalog.now()')$$) AS callback_not_one;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/hello'),
       callback => 'qc_async.many(bigint, jsonb, text, jsonb)')$$) AS callback_returns_a_set;
-- a role cannot write the queue itself
SELECT qc_test.try($$INSERT INTO queryclaw.requests (role, func, request)
       VALUES (current_user::regrole, 'web_fetch_async', '{}')$$) AS insert;
SELECT qc_test.try($$UPDATE queryclaw.requests SET state = 'done'$$) AS update;
SELECT qc_test.try($$DELETE FROM queryclaw.requests$$) AS delete;
SELECT qc_test.try($$SELECT * FROM queryclaw.request_secrets$$) AS read_secrets;
RESET ROLE;
-- nothing was queued
SELECT count(*) AS queued FROM queryclaw.requests;

-- host_rate_limit's syntax is checked when it is set
ALTER SYSTEM SET queryclaw.host_rate_limit = 'api.example.com=5';
ALTER SYSTEM SET queryclaw.host_rate_limit = 'api.example.com=0/s';
ALTER SYSTEM SET queryclaw.host_rate_limit = 'bad/host=5/s';

-- the queue lives in queryclaw.database only
CREATE DATABASE qc_async_other;
\c qc_async_other
CREATE EXTENSION queryclaw_ext;
SELECT queryclaw.web_fetch_async('http://127.0.0.1/');
SELECT * FROM queryclaw.wait('{1}');
\c queryclaw_regression
DROP DATABASE qc_async_other;

--
-- Enqueueing is part of the caller's transaction: rolled back, no row.
--
SET ROLE qc_alice;
BEGIN;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello')) > 0 AS queued;
ROLLBACK;
SELECT count(*) AS after_rollback FROM queryclaw.requests;

-- Queued: the row is the caller's, its arguments with secrets redacted.
SELECT queryclaw.web_fetch_async(qc_test.url('/hello'), 'markdown', 100,
       'qc_async.done(bigint, jsonb, text, jsonb)', '{"row": 1}') AS fetch_id \gset
SELECT queryclaw.api_call_async(qc_test.url('/echo?api_key=s3cr3tvalue&page=2'), 'post',
       '{"Authorization": "Bearer abc.def.ghi", "X-Trace": 7, "Accept": "application/json"}',
       '{"password": "hunter2", "name": "x"}', callback => 'qc_async.done(bigint, jsonb, text, jsonb)',
       idempotency_key => 'order-17') AS api_id \gset
SELECT queryclaw.llm_chat_tools_async('Summarise ' || qc_test.url('/hello'), '{web_fetch}',
       'Be brief.', output_schema => '{"type": "object"}') AS llm_id \gset
SELECT id = :fetch_id AS fetch, role, func, state, attempts, finished_at, callback, context,
       idempotency_key, result, error, sqlstate, qc_test.scrub(request::text) AS request
  FROM queryclaw.requests ORDER BY id;
RESET ROLE;
-- the secrets are kept apart, for the worker alone, only where redaction
-- changed something
SELECT s.id = :api_id AS api_call, qc_test.scrub(s.request::text) AS given
  FROM queryclaw.request_secrets s;

--
-- Each role sees its own rows; queryclaw_admin sees all.
--
SET ROLE qc_bob;
SELECT queryclaw.web_fetch_async(qc_test.url('/bob')) AS bob_id \gset
SELECT role, func FROM queryclaw.requests;
SELECT id FROM queryclaw.wait(ARRAY[:fetch_id, :api_id]::bigint[], '0');
SELECT queryclaw.cancel_requests(ARRAY[:fetch_id, :api_id]::bigint[]) AS cancelled_by_bob;
SET ROLE qc_carol;
SELECT role, func, state FROM queryclaw.requests ORDER BY id;
SELECT role, state, requests, oldest_waiting IS NOT NULL AS waiting, last_minute, eta
  FROM queryclaw.queue_status ORDER BY 1::text, 2;
SET ROLE qc_bob;
SELECT role, state, requests FROM queryclaw.queue_status;
RESET ROLE;

--
-- wait(): rows already final come back at once; others when the timeout
-- passes, as they are.
--
SET ROLE qc_alice;
SELECT clock_timestamp() AS t0 \gset
SELECT id = :llm_id AS llm, state FROM queryclaw.wait(ARRAY[:llm_id]::bigint[], '0.3 s');
SELECT clock_timestamp() - :'t0' >= interval '0.3 s' AS waited_the_timeout;
-- not in the transaction that queued it, nor under a snapshot that never changes
BEGIN;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello')) AS own_id \gset
SELECT regexp_replace(qc_test.try(format('SELECT queryclaw.wait(%L)', ARRAY[:own_id])),
                      'request \d+', 'request N') AS own_transaction;
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT qc_test.try(format('SELECT queryclaw.wait(%L)', ARRAY[:llm_id])) AS repeatable_read;
ROLLBACK;

--
-- cancel_requests(): the caller's unfinished requests.  The secrets go at
-- once; a request with a callback keeps finished_at empty until a worker
-- has called the callback.
--
SELECT queryclaw.cancel_requests(ARRAY[:fetch_id, :api_id, :llm_id, :bob_id]::bigint[]) AS cancelled;
SELECT queryclaw.cancel_requests(ARRAY[:fetch_id]::bigint[]) AS again;
SELECT func, state, error, sqlstate, callback IS NOT NULL AS callback,
       CASE WHEN callback IS NULL THEN finished_at IS NOT NULL END AS finished
  FROM queryclaw.wait(ARRAY[:fetch_id, :api_id, :llm_id]::bigint[], '5 s') ORDER BY id;
RESET ROLE;
SELECT count(*) AS secrets_left FROM queryclaw.request_secrets;
SELECT role, state FROM queryclaw.requests WHERE id = :bob_id;

--
-- queryclaw.max_queued_per_role: past it, 53400; finished requests do not count.
--
SET queryclaw.max_queued_per_role = 2;
SET ROLE qc_alice;
SELECT queryclaw.web_fetch_async(qc_test.url('/1')) > 0 AS first;
SELECT queryclaw.web_fetch_async(qc_test.url('/2')) > 0 AS second;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/3'))$$) AS third;
-- qc_bob has his own count
SET ROLE qc_bob;
SELECT queryclaw.web_fetch_async(qc_test.url('/bob2')) > 0 AS bob_first;
RESET ROLE;
RESET queryclaw.max_queued_per_role;

--
-- The statements the queue functions run as the table's owner name every
-- operator's schema: a caller's search_path that puts an operator of its
-- own before pg_catalog is never called by them (else it would run as
-- the owner).  Each call below would raise the NOTICE if it were.  In a
-- new session, whose statements are prepared under that search_path.
--
SELECT qc_test.hostile_schema('qc_evil', 'qc_alice');
\c queryclaw_regression
SET queryclaw.max_queued_per_role = 100;	-- so that the enqueue counts
SET ROLE qc_alice;
SET search_path = qc_evil, pg_catalog, public;
SELECT queryclaw.web_fetch_async(qc_test.url('/4')) AS evil_id \gset
SELECT count(*) AS rows FROM queryclaw.wait(ARRAY[:evil_id]::bigint[], '0 seconds');
SELECT queryclaw.cancel_requests(ARRAY[:evil_id]::bigint[]) AS cancelled;
RESET search_path;
RESET ROLE;
RESET queryclaw.max_queued_per_role;
DROP SCHEMA qc_evil CASCADE;

-- clean up
SET ROLE qc_alice;
SELECT queryclaw.cancel_requests(array_agg(id)) AS cancelled FROM queryclaw.requests;
RESET ROLE;
DELETE FROM queryclaw.requests WHERE role IN ('qc_alice', 'qc_bob', 'qc_carol');
DROP SCHEMA qc_async CASCADE;
DROP OWNED BY qc_alice, qc_bob, qc_carol;
DROP ROLE qc_alice, qc_bob, qc_carol;
