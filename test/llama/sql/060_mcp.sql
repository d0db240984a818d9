--
-- An MCP server's tools in the loop against llama-server: the fixture's
-- MCP server (test/fixture/mcp_fixture.py, /mcp/json on the fixture
-- server) offered as mcp:server/tool.  The crafted model calls the one tool
-- offered, fills its string argument with "ok", and answers its fixed
-- sentence once a tool result is in its prompt, so what is checked is what
-- went between them: the tool's name and schema as the server's template
-- and grammar read them, the tools/call sent and audited, and the tool's
-- result (or its error) sent back to the model as the tool message.
--
SET queryclaw.retry_base_delay = '5ms';
DO $$ BEGIN
    EXECUTE format('CREATE SERVER mcp_llama FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, protocol ''mcp'')',
                   qc_test.url('/mcp/json'));
END $$;

-- a run of the loop, one row per tool call: the answer, the call, and the
-- tool message the model was sent
CREATE FUNCTION qc_test.mcp_loop(prompt text, tools text[])
RETURNS TABLE (answer text, rounds jsonb, name text, arguments jsonb, ok jsonb, error text,
               tool_message text)
LANGUAGE sql AS $$
SELECT r->>'answer', r->'rounds', c->>'name', c->'arguments', c->'ok', c->>'error',
       (SELECT m->>'content' FROM jsonb_array_elements(r->'messages') AS m WHERE m->>'role' = 'tool')
  FROM queryclaw.llm_chat_tools(jsonb_build_array(jsonb_build_object('role', 'user', 'content', prompt)),
                                tools => tools) AS r,
       jsonb_array_elements(r->'tool_calls') AS c
$$;

-- echo's schema has $schema, $defs, a $ref to them and additionalProperties
-- false, as the fixture sent it: the server's grammar follows the $ref (a
-- string, so "ok"); the result goes back as the tool message, and the
-- model, its prompt now holding a tool response, answers
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT answer, rounds, name, arguments, ok, tool_message
  FROM qc_test.mcp_loop('Say something back.', '{mcp:mcp_llama/echo}');
-- the audit: the model's two rounds, and between them the MCP session's
-- requests (func 'mcp'): initialize, its notification, the tool list's two
-- pages, and the one tools/call, which names the tool
SELECT qc_test.audit_flush();
SELECT func, method, status, outcome, detail->>'server' AS server, detail->>'method' AS mcp_method,
       detail->>'tool' AS tool, detail->'round' AS round, detail->'tool_calls' AS tool_calls
  FROM queryclaw.audit_log ORDER BY id;

-- the tools the server offers (mcp:server), its tools option keeping one:
-- the model is offered mcp_llama__fail, which reports isError; the error
-- goes back to the model as a refused call's does, and it answers
ALTER SERVER mcp_llama OPTIONS (ADD tools 'fail');
SELECT answer, rounds, name, ok, error, tool_message
  FROM qc_test.mcp_loop('Try it.', '{mcp:mcp_llama}');

DROP FUNCTION qc_test.mcp_loop(text, text[]);
DROP SERVER mcp_llama;
