--
-- llm_chat_tools against llama.cpp's llama-server (test/llama/run.sh), with
-- the crafted model of make_model.py.  Its replies are fixed, whatever the
-- prompt says: without tools "Hello from a tiny model."; with tools a
-- <tool_call> that the server's template parses into tool_calls, for the
-- tool whose name sorts first; after a tool result the same sentence;
-- under a grammar (a schema, tool arguments) the shortest JSON: strings
-- "ok", numbers 4, booleans false, the first enum value, optional keys
-- left out.  Token counts and the server's call ids vary between versions
-- of the server, so they are not shown.
--
SET queryclaw.retry_base_delay = '5ms';
-- what varies in a result: the usage counts (shown as whether each is
-- there), and the server's tool call ids
CREATE FUNCTION qc_test.llm(r jsonb) RETURNS jsonb LANGUAGE sql STABLE
AS $$ SELECT qc_test.scrub((r - 'usage' - 'messages'
                            || jsonb_build_object('usage', (SELECT jsonb_object_agg(k, v IS NOT NULL AND v <> 'null')
                                                              FROM jsonb_each(r->'usage') AS u(k, v)))
                            || jsonb_build_object('tool_calls', (SELECT coalesce(jsonb_agg(c - 'id'), '[]')
                                                                   FROM jsonb_array_elements(r->'tool_calls') AS c))
                           )::text)::jsonb $$;

-- a plain answer
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('What is six times seven?', tools => '{}')));

-- a tool call: parsed by the server from the model's <tool_call> text, run
-- under the policy, audited, and its result sent back as a "tool" message,
-- after which the model answers.  The model fills a free string with "ok",
-- so its url is "ok": refused before anything is sent, and the model is
-- told why.
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('Fetch ' || qc_test.url('/hello'),
                                                         tools => '{web_fetch}')));
SELECT qc_test.audit_flush();
SELECT func, method, qc_test.scrub(url) AS url, status, outcome, reason,
       detail->'round' AS round, detail->'tool_calls' AS tool_calls, detail->>'finish_reason' AS finish_reason
  FROM queryclaw.audit_log ORDER BY id;
-- the tool picked is the first by name: api_call before web_fetch
SELECT c->>'name' AS name, c->'arguments' AS arguments, c->>'error' AS error
  FROM queryclaw.llm_chat_tools('Look it up') AS r, jsonb_array_elements(r->'tool_calls') AS c;

-- a tool that answers: check_url says what the policy makes of "ok"; its
-- result goes back as the tool message, which the server's template reads
SELECT r->>'answer' AS answer, r->'rounds' AS rounds, c->>'name' AS name, c->'ok' AS ok,
       (SELECT m->>'content' FROM jsonb_array_elements(r->'messages') AS m
         WHERE m->>'role' = 'tool') AS tool_message
  FROM queryclaw.llm_chat_tools('[{"role": "user", "content": "Is it allowed?"}]'::jsonb,
                                tools => '{check_url,web_fetch}') AS r,
       jsonb_array_elements(r->'tool_calls') AS c;

-- a database tool: the model describes the table named "ok", and reads
-- its columns
CREATE TABLE ok (id int PRIMARY KEY, city text NOT NULL);
COMMENT ON TABLE ok IS 'Where each site is.';
SELECT r->>'answer' AS answer, c->>'name' AS name, c->'arguments' AS arguments, c->'ok' AS ok,
       (SELECT m->>'content' FROM jsonb_array_elements(r->'messages') AS m
         WHERE m->>'role' = 'tool') AS tool_message
  FROM queryclaw.llm_chat_tools('[{"role": "user", "content": "Where are the sites?"}]'::jsonb,
                                tools => '{sql_query,list_tables,describe_table}') AS r,
       jsonb_array_elements(r->'tool_calls') AS c;
DROP TABLE ok;

-- a model that calls tools in every round ends at max_rounds; the server
-- sends "" as the content beside its tool calls (OpenAI sends null)
SELECT r->'answer' AS answer, r->>'finish_reason' AS finish_reason, r->'rounds' AS rounds,
       r->'tool_calls'->0->>'error' AS error
  FROM queryclaw.llm_chat_tools('Fetch it', tools => '{web_fetch}', max_rounds => 1) AS r;

-- output_schema after tool rounds: the model browses without the schema,
-- then the same conversation goes once more with response_format, and
-- the server's grammar makes the answer fit; ours checks it again
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('Where is it?', tools => '{web_fetch}',
       output_schema => '{"type": "object", "properties": {"city": {"type": "string"},
                          "open": {"type": "boolean"}, "floors": {"type": "integer"},
                          "kind": {"enum": ["shop", "office", "factory"]}},
                          "required": ["city", "open", "floors", "kind"],
                          "additionalProperties": false}')));
-- without tools, the first request carries the schema; optional keys are
-- left out by the model, and an array gets its minItems
SELECT r->'answer' AS answer, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('Name one city.', tools => '{}',
       output_schema => '{"type": "object", "properties": {"cities": {"type": "array", "minItems": 2,
                          "items": {"type": "string"}}, "note": {"type": "string"}},
                          "required": ["cities"]}') AS r;
-- llama.cpp's grammar takes oneOf as anyOf: the answer fits both branches,
-- which our check refuses, once more after one retry
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('How many?', tools => '{}',
       output_schema => '{"type": "object", "properties": {"n": {"oneOf": [{"type": "integer"}, {"type": "number"}]}},
                          "required": ["n"]}')$$);

-- the messages form: a conversation in, the conversation out (with the
-- server's answer), continued by appending a user message
SELECT r->>'answer' AS answer, jsonb_array_length(r->'messages') AS messages,
       r->'messages'->-1 AS last
  FROM queryclaw.llm_chat_tools('[{"role": "system", "content": "Answer in one line."},
                                  {"role": "user", "content": "Hello?"}]'::jsonb, tools => '{}') AS r;
WITH first AS (SELECT queryclaw.llm_chat_tools('[{"role": "user", "content": "Hello?"}]'::jsonb,
                                               tools => '{web_fetch}') AS r)
SELECT r2->>'answer' AS answer,
       (SELECT string_agg(m->>'role' || CASE WHEN m ? 'tool_calls' THEN ' (tool call)' ELSE '' END, ', ')
          FROM jsonb_array_elements(r2->'messages') AS m) AS roles
  FROM first, queryclaw.llm_chat_tools(first.r->'messages' || '[{"role": "user", "content": "And now?"}]',
                                       tools => '{}') AS r2;

-- a reply cut at queryclaw.llm_max_tokens: finish_reason "length", the
-- answer as far as it went; a tool call cut short is text, not a call
SET queryclaw.llm_max_tokens = 3;
SELECT r->>'answer' AS answer, r->>'finish_reason' AS finish_reason, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('Say something long.', tools => '{}') AS r;
-- the server reads max_completion_tokens too (queryclaw.llm_token_param)
SET queryclaw.llm_token_param = 'max_completion_tokens';
SELECT r->>'answer' AS answer, r->>'finish_reason' AS finish_reason
  FROM queryclaw.llm_chat_tools('Say something long.', tools => '{}') AS r;
RESET queryclaw.llm_token_param;
SET queryclaw.llm_max_tokens = 2;
SELECT r->>'answer' AS answer, r->>'finish_reason' AS finish_reason,
       jsonb_array_length(r->'tool_calls') AS tool_calls
  FROM queryclaw.llm_chat_tools('Fetch it', tools => '{web_fetch}') AS r;
-- an answer in shape cut short is not JSON, even when asked again
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('Where?', tools => '{}',
       output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}')$$);
RESET queryclaw.llm_max_tokens;

-- web_fetch's extract_prompt: the page from the fixture server, then the
-- model; cut at the token limit, it is an error (38000)
SELECT queryclaw.web_fetch(qc_test.url('/about'), extract_prompt => 'Where is the company?') AS extracted;
SET queryclaw.llm_max_tokens = 2;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/about'), extract_prompt => 'Where is the company?')$$);
RESET queryclaw.llm_max_tokens;
