--
-- llama-server's own error replies, as llm_chat_tools and llm_embed raise
-- them: 38000 with the provider's words in the detail.  A 4xx is not
-- tried again (DESIGN: only passing failures are).  The server ignores
-- the model name (it serves the one it loaded), so a bad model is no
-- error here.
--
SET queryclaw.retry_base_delay = '5ms';
-- An error as raised, without the server's own words, which change from
-- one llama.cpp release to the next (docs/llm-servers.md quotes them):
-- its first line, whether the detail quotes the provider, and whether
-- what it quotes names the cause.
CREATE FUNCTION qc_test.server_error(stmt text, cause text) RETURNS text LANGUAGE sql AS $$
SELECT split_part(e, E'\n', 1)
       || E'\n  quotes the provider: ' || (e ~ E'\nDETAIL: (\\d+ attempts were made\\. )?The (provider said|response began): ')
       || E'\n  names the cause (' || cause || '): ' || (e ILIKE '%' || cause || '%')
  FROM qc_test.try(stmt) AS e
$$;

-- any model name is served by the model loaded
SELECT r->>'answer' AS answer, r->>'model' AS model
  FROM queryclaw.llm_chat_tools('Hello?', tools => '{}', model => 'no-such-model') AS r;

-- a wrong API key (the server was started with --api-key)
SET queryclaw.llm_api_key = 'sk-wrong-0123456789';
SELECT qc_test.server_error($$SELECT queryclaw.llm_chat_tools('Hello?', tools => '{}')$$, 'key');
RESET queryclaw.llm_api_key;

-- a prompt longer than the context (4096 tokens)
SELECT qc_test.server_error($$SELECT queryclaw.llm_chat_tools(repeat('x', 6000), tools => '{}')$$, 'context');
-- requests the server refuses as malformed: a message whose content is
-- neither a string nor an array of parts (the messages form passes the
-- conversation as given), and an output schema it cannot make a grammar of
SELECT qc_test.server_error($$SELECT queryclaw.llm_chat_tools('[{"role": "user", "content": {"text": "Hello?"}}]'::jsonb, tools => '{}')$$, 'content');
SELECT qc_test.server_error($$SELECT queryclaw.llm_chat_tools('Pick one.', tools => '{}',
       output_schema => '{"type": "object", "properties": {"pick": {"enum": []}}, "required": ["pick"]}')$$, 'enum');
-- a tool call's arguments that are not JSON in a conversation given: the
-- server answers 500, which is tried again (a 500 may pass), then raised
SELECT qc_test.server_error($$SELECT queryclaw.llm_chat_tools('[{"role": "user", "content": "Hi"},
       {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "web_fetch", "arguments": "{not json"}}]},
       {"role": "tool", "tool_call_id": "c1", "content": "hello"}]'::jsonb, tools => '{web_fetch}')$$, 'JSON');

-- embeddings from the chat server, which was not started with --embeddings
SET queryclaw.embed_url = '';
SELECT qc_test.server_error($$SELECT queryclaw.llm_embed('hello')$$, 'embeddings');
RESET queryclaw.embed_url;
