--
-- Endpoints from the other paths: the queue (the mapping is read when the
-- request is sent, as the enqueuing role), a model's tool calls (the model
-- never sees the key), and the model's own endpoint as a server with a
-- key per role (queryclaw.llm_server).
--
CREATE ROLE qc_team_a;
CREATE ROLE qc_team_b;
GRANT USAGE ON SCHEMA qc_test TO qc_team_a, qc_team_b;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.wait(bigint[], interval),
    queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb)
    TO qc_team_a, qc_team_b;

DO $$
BEGIN
    EXECUTE format('CREATE SERVER fxq FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   qc_test.url('/echo/q'));
    EXECUTE format('CREATE SERVER fx_llm FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   current_setting('qc_test.llm_base') || '/v1');
    EXECUTE format('CREATE SERVER fx_tool FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   qc_test.url('/reflect'));
END
$$;
CREATE USER MAPPING FOR qc_team_a SERVER fxq
  OPTIONS (headers '{"Authorization": "Bearer queuekeya0001", "X-Srv": "a"}');
GRANT USAGE ON FOREIGN SERVER fxq TO qc_team_a;

-- what the fixture's /echo was sent, from a request's result
CREATE FUNCTION qc_test.sent_async(r jsonb) RETURNS text LANGUAGE sql
AS $$ SELECT format('%s x-srv=%s authorization=%s', r->'body'->>'path',
                    coalesce(r->'body'->'headers'->>'x-srv', '-'),
                    coalesce(r->'body'->'headers'->>'authorization', '-')) $$;

SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

-- queued and sent with the role's mapping
SET ROLE qc_team_a;
SELECT queryclaw.api_call_async(qc_test.url('/echo/q/one')) AS one_id \gset
SELECT state, qc_test.sent_async(result) FROM queryclaw.wait(ARRAY[:one_id], NULL);
RESET ROLE;

-- USAGE revoked between the enqueue and the send: nothing of the mapping
BEGIN;
SET LOCAL ROLE qc_team_a;
SELECT queryclaw.api_call_async(qc_test.url('/echo/q/two')) AS two_id \gset
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER fxq FROM qc_team_a;
COMMIT;
SET ROLE qc_team_a;
SELECT state, qc_test.sent_async(result) FROM queryclaw.wait(ARRAY[:two_id], NULL);
RESET ROLE;

-- a model's tool call under a server carries the mapping; what the
-- server echoes of it reaches the model REDACTED
CREATE USER MAPPING FOR PUBLIC SERVER fx_tool OPTIONS (query 'token=toolkey00001');
SELECT qc_test.scrub(r->>'answer') AS answer, r->'tool_calls'->0->'ok' AS ok
  FROM queryclaw.llm_chat_tools('Read ' || qc_test.url('/reflect/200'), '{web_fetch}') AS r;

-- the model's endpoint as a server: each role's mapping supplies its key
-- (the fixture's echo scenario says which scheme it was sent), in place
-- of queryclaw.llm_url and queryclaw.llm_api_key
CREATE USER MAPPING FOR qc_team_a SERVER fx_llm
  OPTIONS (headers '{"Authorization": "TeamA llmkeya00001"}');
CREATE USER MAPPING FOR qc_team_b SERVER fx_llm
  OPTIONS (headers '{"Authorization": "TeamB llmkeyb00001"}');
GRANT USAGE ON FOREIGN SERVER fx_llm TO qc_team_a, qc_team_b;
SET queryclaw.llm_server = 'fx_llm';
SET queryclaw.llm_url = '';
SET ROLE qc_team_a;
SELECT (queryclaw.llm_chat_tools('SCENARIO:echo', '{}')->>'answer')::jsonb->>'auth_scheme' AS team_a;
SELECT queryclaw.llm_chat_tools('SCENARIO:leak', '{}')->>'answer' AS leaked;
RESET ROLE;
SET ROLE qc_team_b;
SELECT (queryclaw.llm_chat_tools('SCENARIO:echo', '{}')->>'answer')::jsonb->>'auth_scheme' AS team_b;
RESET ROLE;
SET queryclaw.llm_server = 'no_such_server';
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$);
RESET queryclaw.llm_server;
RESET queryclaw.llm_url;

-- no key in the queue, the audit log, or the statements' text there
SELECT qc_test.audit_flush();
SELECT k AS key,
       (SELECT count(*) FROM queryclaw.requests r WHERE r::text LIKE '%' || k || '%') AS requests,
       (SELECT count(*) FROM queryclaw.audit_log a WHERE a::text LIKE '%' || k || '%') AS audit_rows
  FROM unnest(ARRAY['queuekeya', 'toolkey', 'llmkeya', 'llmkeyb']) AS k;
SELECT func, detail->>'server' AS server, count(*)
  FROM queryclaw.audit_log GROUP BY 1, 2 ORDER BY 1, 2;

DROP SERVER fxq, fx_llm, fx_tool CASCADE;
DROP FUNCTION qc_test.sent_async(jsonb);
DELETE FROM queryclaw.requests WHERE role IN ('qc_team_a'::regrole, 'qc_team_b'::regrole);
DROP OWNED BY qc_team_a, qc_team_b;
DROP ROLE qc_team_a, qc_team_b;

-- a queued model's tool call under a server whose one slot another request
-- holds waits for the slot, the job going on after it (it failed, as if
-- the audit queue were full)
DO $$
BEGIN
    EXECUTE format('CREATE SERVER fx_one FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, max_concurrency %L)',
                   qc_test.url('/slow'), '1');
END
$$;
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/slow?ms=1500')) AS slow_id \gset
SELECT queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || qc_test.url('/slow?ms=10'),
                                      '{web_fetch}') AS model_id \gset
COMMIT;
SELECT func, state, result->'tool_calls'->0->'ok' AS tool_ok,
       qc_test.scrub(result->'tool_calls'->0->>'error') AS tool_error
  FROM queryclaw.wait(ARRAY[:slow_id, :model_id], NULL) ORDER BY id;
-- cancelled while its tool call is held: it ends cancelled, and the held
-- call is never sent
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/slow?ms=1500')) AS slow2_id \gset
SELECT queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || qc_test.url('/slow?ms=11'),
                                      '{web_fetch}') AS model2_id \gset
COMMIT;
SELECT qc_test.wait_until(format('(SELECT count(*) FROM queryclaw.audit_log WHERE func = %L AND detail->''request''->>''id'' = %L) > 0',
                                 'llm_chat_tools_async', :model2_id)) AS model_answered;
SELECT queryclaw.cancel_requests(ARRAY[:model2_id]) AS cancelled;
SELECT func, state, error FROM queryclaw.wait(ARRAY[:slow2_id, :model2_id], NULL) ORDER BY id;
SELECT qc_test.audit_flush();
SELECT count(*) AS held_call_sent FROM queryclaw.audit_log WHERE url LIKE '%/slow?ms=11';
DELETE FROM queryclaw.requests WHERE id IN (:slow_id, :model_id, :slow2_id, :model2_id);
DROP SERVER fx_one;
