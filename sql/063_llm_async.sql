--
-- llm_chat_tools_async: the worker runs each LLM request as a job of the
-- tool loop (src/requests/llmjob.c), many at once, their model requests and the
-- HTTP requests of their tool calls in one batch; the result is what
-- llm_chat_tools returns, the errors are its errors.
--
CREATE ROLE qc_llm_carol;
GRANT USAGE ON SCHEMA qc_test TO qc_llm_carol;
GRANT EXECUTE ON FUNCTION
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.web_fetch(text, text, integer, text),
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.check_url(text)
    TO qc_llm_carol;
-- the model's 503s are retried after a few ms, as the role's setting says
ALTER ROLE qc_llm_carol SET queryclaw.retry_base_delay = '5ms';

CREATE TABLE qc_llm_seen (id bigint, answer text, error text, context jsonb, by_role text);
GRANT INSERT ON qc_llm_seen TO qc_llm_carol;
CREATE FUNCTION qc_llm_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS $$ INSERT INTO qc_llm_seen VALUES (id, result->>'answer', error, context, current_user) $$;
GRANT EXECUTE ON FUNCTION qc_llm_note(bigint, jsonb, text, jsonb) TO qc_llm_carol;

-- Wait until every request is final (or 15 s passed).
CREATE FUNCTION qc_test.llm_settled() RETURNS boolean LANGUAGE sql
AS $$ SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                                     WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0$c$) $$;

TRUNCATE queryclaw.requests CASCADE;

SET ROLE qc_llm_carol;
-- a plain answer; a tool call whose page the model reads; three tools in
-- one reply (two of them HTTP requests sent with the other jobs' calls);
-- a refused tool call the model recovers from; a model that answers 503
-- twice (retried by the job, which waits without holding the worker); a
-- model that says 401 (the error llm_chat_tools raises); an output schema
SELECT count(queryclaw.llm_chat_tools_async(p, tools, output_schema => s,
                                            callback => 'qc_llm_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                            context => jsonb_build_object('n', n)))
  FROM (VALUES (1, 'SCENARIO:plain', '{}'::text[], NULL::jsonb),
               (2, 'SCENARIO:tool_call URL:' || qc_test.url('/hello'), '{web_fetch}', NULL),
               (3, 'SCENARIO:multi_tool URL:' || qc_test.url('/hello'), '{web_fetch,api_call,check_url}', NULL),
               (4, 'SCENARIO:refused URL:' || qc_test.url('/hello'), '{web_fetch}', NULL),
               (5, 'SCENARIO:flaky:503,2 async', '{}', NULL),
               (6, 'SCENARIO:http_error:401', '{}', NULL),
               (7, 'SCENARIO:json', '{}', '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}')
       ) AS t(n, p, tools, s);
RESET ROLE;
SELECT qc_test.llm_settled();
SELECT context->>'n' AS n, state, attempts, result->'answer' AS answer, result->'rounds' AS rounds,
       (SELECT string_agg((c->>'name') || CASE WHEN (c->>'ok')::boolean THEN '' ELSE ' (failed)' END, ', ')
          FROM jsonb_array_elements(result->'tool_calls') AS c) AS tools,
       qc_test.scrub(error) AS error, sqlstate
  FROM queryclaw.requests ORDER BY id;
-- the callback ran for each, as the role
SELECT context->>'n' AS n, answer, qc_test.scrub(error) AS error, by_role FROM qc_llm_seen ORDER BY id;

-- every request to the model and every tool call is an audit row of the
-- role, with the request id and its attempt in its detail (and, for a retried
-- model request, the model's own attempt beside them); the model's rows are
-- the async function's, the tool calls' their tools
SELECT qc_test.audit_flush();
SELECT r.context->>'n' AS n, a.func, a.outcome, a.status, a.detail->'round' AS round,
       a.detail->'request'->'attempt' AS attempt,
       a.detail->'attempt' AS model_attempt, a.detail ? 'tool_call_id' AS tool_call
  FROM queryclaw.audit_log a JOIN queryclaw.requests r ON (a.detail->'request'->>'id')::bigint = r.id
 WHERE a.role = 'qc_llm_carol'
 ORDER BY (r.context->>'n')::int, a.detail->'round', a.func, a.id;

-- The role's privileges are checked again when the request runs: a tool
-- whose function it may no longer execute fails the request (42501), before
-- any request to the model.
BEGIN;
SET LOCAL ROLE qc_llm_carol;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || qc_test.url('/hello'), '{web_fetch}',
                                      context => '{"n": 8}') IS NOT NULL AS queued;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text) FROM qc_llm_carol;
COMMIT;
SELECT qc_test.llm_settled();
SELECT qc_test.audit_flush();
SELECT context->>'n' AS n, state, qc_test.scrub(error) AS error, sqlstate,
       (SELECT count(*) FROM queryclaw.audit_log a WHERE (a.detail->'request'->>'id')::bigint = r.id) AS audit_rows
  FROM queryclaw.requests r WHERE context->>'n' = '8';
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text) TO qc_llm_carol;

-- The requests run at once, not one after another: ten requests to a model
-- that takes 300 ms each are in flight together (their audit rows' spans
-- overlap).
SET ROLE qc_llm_carol;
SELECT count(queryclaw.llm_chat_tools_async('SCENARIO:slow:300 ' || g, '{}')) FROM generate_series(1, 10) AS g;
RESET ROLE;
SELECT qc_test.llm_settled();
SELECT qc_test.audit_flush();
WITH spans AS (
    SELECT a.at - make_interval(secs => a.elapsed_ms / 1000) AS started, a.at AS ended
      FROM queryclaw.audit_log a
     WHERE a.role = 'qc_llm_carol' AND a.func = 'llm_chat_tools_async'
       AND a.status = 200 AND a.elapsed_ms >= 300)
SELECT count(*) AS slow_requests,
       (SELECT max(n) FROM (SELECT (SELECT count(*) FROM spans o WHERE o.started < s.ended AND o.ended > s.started) AS n
                              FROM spans s) AS x) >= 5 AS ran_at_once
  FROM spans;

TRUNCATE queryclaw.requests CASCADE;
DROP FUNCTION qc_llm_note(bigint, jsonb, text, jsonb), qc_test.llm_settled();
DROP TABLE qc_llm_seen;
-- the role's privileges go with it
DROP OWNED BY qc_llm_carol;
DROP ROLE qc_llm_carol;
