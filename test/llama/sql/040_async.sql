--
-- llm_chat_tools_async against llama-server: the worker runs the same loop
-- (src/requests/llmjob.c), several requests at once; wait() returns each once it
-- is final, with what llm_chat_tools would have returned or raised.
--
SELECT queryclaw.llm_chat_tools_async('Hello?', tools => '{}') AS plain \gset
SELECT queryclaw.llm_chat_tools_async('Fetch ' || qc_test.url('/hello'), tools => '{web_fetch}') AS tool \gset
SELECT queryclaw.llm_chat_tools_async('Where is it?', tools => '{web_fetch}',
       output_schema => '{"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"], "additionalProperties": false}') AS schema \gset
SELECT queryclaw.llm_chat_tools_async(repeat('x', 6000), tools => '{}') AS too_long \gset
SELECT CASE id WHEN :plain THEN 'plain' WHEN :tool THEN 'tool' WHEN :schema THEN 'schema' ELSE 'too_long' END AS request,
       state, result->'answer' AS answer, result->'rounds' AS rounds,
       (SELECT string_agg(c->>'name' || CASE WHEN (c->>'ok')::boolean THEN '' ELSE ' (failed)' END, ', ')
          FROM jsonb_array_elements(result->'tool_calls') AS c) AS tools,
       regexp_replace(error, '\(\d+ tokens\) exceeds', '(N tokens) exceeds') AS error, sqlstate
  FROM queryclaw.wait(ARRAY[:plain, :tool, :schema, :too_long], '60 seconds')
 ORDER BY id;
-- every model request is audited under the async function's name, every
-- tool call under its tool's, each with its request id
SELECT qc_test.audit_flush();
SELECT func, outcome, count(*) AS n
  FROM queryclaw.audit_log
 WHERE (detail->'request'->>'id')::bigint IN (:plain, :tool, :schema, :too_long)
 GROUP BY func, outcome ORDER BY func, outcome;
