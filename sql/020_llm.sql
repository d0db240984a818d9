--
-- llm_chat_tools against the scripted model (test/fixture/llm_server.py):
-- a marker in the prompt, SCENARIO:<name>, picks what the model does.
--
-- The model's endpoint (queryclaw.llm_url, shown as LLM) is on 127.0.0.1
-- but not in queryclaw.local_allowlist: the DBA's endpoint is trusted,
-- while every URL the model asks a tool to reach is checked like any other.
--
CREATE FUNCTION qc_test.llm(r jsonb) RETURNS jsonb LANGUAGE sql STABLE
AS $$ SELECT qc_test.scrub(r::text)::jsonb $$;
-- failed requests are retried (023_llm_providers); here, after a few ms
SET queryclaw.retry_base_delay = '5ms';

-- a plain answer
SELECT jsonb_pretty(queryclaw.llm_chat_tools('SCENARIO:plain What is six times seven?'));

-- what the model receives: the offered tools with their parameters,
-- tool_choice auto, a bearer token; no tools at all when none are offered;
-- max_tokens when set; response_format for an output schema
SELECT jsonb_pretty(((queryclaw.llm_chat_tools('SCENARIO:echo',
       tools => '{web_fetch,api_call,check_url,web_search,web_fetch}'))->>'answer')::jsonb);
SET queryclaw.llm_max_tokens = 256;
SELECT jsonb_pretty((queryclaw.llm_chat_tools('SCENARIO:echo', tools => '{}', system => 'Be brief.',
       model => 'other-model', output_schema => '{"type": "object"}'))->'answer');
RESET queryclaw.llm_max_tokens;

-- one tool call: the model fetches a page and answers from it
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/hello'))));

-- several tool calls in one reply, each answered by its own tool message
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('SCENARIO:multi_tool URL:' || qc_test.url('/hello'),
       tools => '{web_fetch,api_call,check_url}')));

-- a tool call refused by policy goes back to the model, which recovers
SELECT jsonb_pretty(qc_test.llm(queryclaw.llm_chat_tools('SCENARIO:refused URL:' || qc_test.url('/hello'))));

-- the model's endpoint answers on 127.0.0.1, but a tool call to the same
-- address and port is refused: trust is for the endpoint, not its address
SELECT r->'tool_calls'->0->>'error' AS error, r->'tool_calls'->0->'arguments' AS arguments
  FROM qc_test.llm(queryclaw.llm_chat_tools('SCENARIO:tool_call URL:'
       || current_setting('qc_test.llm_base') || '/search?q=x&format=json')) AS r;

-- other tool failures reach the model as the tool's content: a tool that
-- was not offered, arguments that are not JSON, an HTTP error, a timeout
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:unknown_tool') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:bad_args') AS r;
SELECT r->>'answer' AS answer, r->'tool_calls'->0->'arguments' AS arguments
  FROM queryclaw.llm_chat_tools('SCENARIO:unknown_tool', tools => '{check_url}') AS r;
SELECT qc_test.scrub(r->>'answer') AS answer, r->'tool_calls'->0->'ok' AS ok
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/status/404')) AS r;
SET queryclaw.timeout = '300ms';
SELECT qc_test.scrub(r->>'answer') AS answer
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/slow?ms=3000')) AS r;
RESET queryclaw.timeout;

-- a tool result is capped at llm_tool_max_chars, and the model is told
SET queryclaw.llm_tool_max_chars = 100;
SELECT r->>'answer' AS answer, r->'tool_calls'->0->'chars' AS chars,
       r->'tool_calls'->0->'truncated' AS truncated
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/big?bytes=5000')) AS r;
RESET queryclaw.llm_tool_max_chars;

-- a model that never stops answering with tool calls ends at max_rounds;
-- the calls of its last reply are listed, not run
SELECT r->'answer' AS answer, r->>'finish_reason' AS finish_reason, r->'rounds' AS rounds,
       jsonb_array_length(r->'tool_calls') AS calls,
       (r->'tool_calls'->-1) - 'arguments' AS last_call, r->'usage' AS usage
  FROM queryclaw.llm_chat_tools('SCENARIO:loop URL:http://192.0.2.1/', tools => '{check_url}',
                                max_rounds => 3) AS r;
-- max_rounds can only lower queryclaw.llm_max_rounds
SET queryclaw.llm_max_rounds = 2;
SELECT r->'rounds' AS rounds FROM queryclaw.llm_chat_tools('SCENARIO:loop', tools => '{check_url}',
                                                          max_rounds => 50) AS r;
RESET queryclaw.llm_max_rounds;

-- a reply cut by the token limit
SELECT r->>'answer' AS answer, r->>'finish_reason' AS finish_reason
  FROM queryclaw.llm_chat_tools('SCENARIO:length') AS r;

-- output_schema: the answer is jsonb; a code fence around it is dropped;
-- an answer that is not JSON gets one retry, then a clear error
SELECT r->'answer' AS answer, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('SCENARIO:json', output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}}') AS r;
SELECT r->'answer'->>'city' AS city
  FROM queryclaw.llm_chat_tools('SCENARIO:json_fenced', output_schema => '{"type": "object"}') AS r;
SELECT r->'answer' AS answer, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('SCENARIO:bad_json_once', output_schema => '{"type": "object"}') AS r;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:bad_json', output_schema => '{"type": "object"}')$$);
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:json_array', output_schema => '{"type": "object"}')$$);
-- an answer cut at the token limit: the hint says to raise the limit
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:length', output_schema => '{"type": "object"}')$$);

-- replies that are not chat completions are errors (38000) saying why
SELECT k AS kind, qc_test.try(format('SELECT queryclaw.llm_chat_tools(%L)', 'SCENARIO:malformed:' || k)) AS error
  FROM unnest(ARRAY['not_json', 'html', 'no_choices', 'empty_choices', 'no_message',
                    'content_number', 'tool_calls_object', 'tool_call_no_name', 'error_200']) AS k;

-- HTTP errors carry the provider's message in errdetail, and the number
-- of attempts when they were retried; the 429 asks to wait 20 s, longer
-- than one request may take here
SET queryclaw.llm_timeout = '10s';
SELECT c AS status, qc_test.try(format('SELECT queryclaw.llm_chat_tools(%L)', 'SCENARIO:http_error:' || c)) AS error
  FROM unnest(ARRAY[401, 429, 500, 503]) AS c;
RESET queryclaw.llm_timeout;
-- a 404 says where requests go: the path is appended to llm_url, before
-- its query string
SELECT set_config('queryclaw.llm_url', qc_test.url('/nowhere/?api-version=1'), false) IS NOT NULL AS set;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('hello')$$);
RESET queryclaw.llm_url;

-- an endpoint that is not there, and one too slow for queryclaw.llm_timeout;
-- neither is refused by block_local: the endpoint is trusted
SET queryclaw.llm_url = 'http://127.0.0.1:1/v1';
SELECT split_part(qc_test.try($$SELECT queryclaw.llm_chat_tools('hello')$$), E'\n', 1) AS error;
RESET queryclaw.llm_url;
SET queryclaw.llm_timeout = '300ms';
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:slow:3000')$$);
RESET queryclaw.llm_timeout;
-- but trust does not bypass the master switch
SET queryclaw.enabled = off;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:plain')$$);
RESET queryclaw.enabled;

-- bad arguments and missing settings fail before any request
SELECT qc_test.audit_flush();
SELECT count(*) AS llm_requests_before FROM queryclaw.audit_log WHERE func = 'llm' \gset
SELECT queryclaw.llm_chat_tools('hello', tools => '{web_fetch,shell}');
SELECT queryclaw.llm_chat_tools('hello', tools => '{web_fetch,NULL}');
SELECT queryclaw.llm_chat_tools('hello', max_rounds => 0);
SELECT queryclaw.llm_chat_tools('hello', output_schema => '[1]');
SELECT queryclaw.llm_chat_tools('[]'::jsonb);
SELECT queryclaw.llm_chat_tools('{"role": "user"}'::jsonb);
SELECT queryclaw.llm_chat_tools('[{"content": "hi"}]'::jsonb);
SET queryclaw.search_url = '';
SELECT queryclaw.llm_chat_tools('hello', tools => '{web_search}');
RESET queryclaw.search_url;
SET queryclaw.llm_model = '';
SELECT queryclaw.llm_chat_tools('hello');
RESET queryclaw.llm_model;
SET queryclaw.llm_url = '';
SELECT queryclaw.llm_chat_tools('hello');
RESET queryclaw.llm_url;
SELECT queryclaw.llm_chat_tools(NULL::text) IS NULL AS null_in_null_out;
SELECT qc_test.audit_flush();
SELECT count(*) - :llm_requests_before AS llm_requests_made FROM queryclaw.audit_log WHERE func = 'llm';
-- with no queryclaw.llm_model, a call can name the model
SET queryclaw.llm_model = '';
SELECT r->>'model' AS model FROM queryclaw.llm_chat_tools('SCENARIO:plain', model => 'given-model') AS r;
RESET queryclaw.llm_model;

-- the messages form (chosen by a jsonb argument; text is a prompt): a
-- conversation in, the conversation out, to continue
SELECT queryclaw.llm_chat_tools(('[{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "SCENARIO:tool_call URL:' || qc_test.url('/hello') || '"}]')::jsonb)
       AS r \gset first_
SELECT jsonb_pretty(qc_test.llm(:'first_r'::jsonb - 'usage'));
SELECT r->>'answer' AS answer, jsonb_array_length(r->'messages') AS messages
  FROM queryclaw.llm_chat_tools((:'first_r'::jsonb)->'messages'
                                || '[{"role": "user", "content": "SCENARIO:plain And now?"}]') AS r;

-- web_fetch(..., extract_prompt => ...): the page's text, cut to
-- llm_tool_max_chars, goes to the model with the instruction
SELECT queryclaw.web_fetch(qc_test.url('/html'), extract_prompt => 'SCENARIO:extract the heading');
SET queryclaw.llm_tool_max_chars = 100;
SELECT queryclaw.web_fetch(qc_test.url('/big?bytes=5000'), extract_prompt => 'SCENARIO:extract the first line');
RESET queryclaw.llm_tool_max_chars;
-- max_chars cuts the answer; a page that cannot be fetched is the usual error
SELECT queryclaw.web_fetch(qc_test.url('/html'), max_chars => 10, extract_prompt => 'SCENARIO:extract');
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/status/404'), extract_prompt => 'SCENARIO:extract')$$);
SELECT queryclaw.web_fetch(qc_test.url('/html'), extract_prompt => '');

-- the audit trail of one run: one llm row per request (model, round,
-- tokens, finish reason), one row per tool call naming the run and round
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->>'answer' AS answer
  FROM queryclaw.llm_chat_tools('SCENARIO:refused URL:' || qc_test.url('/hello')) AS r;
SELECT qc_test.audit_flush();
SELECT func, method, qc_test.scrub(url) AS url, status, outcome, chars,
       detail - 'llm_run' - 'request_headers' - 'redirects' AS detail
  FROM queryclaw.audit_log ORDER BY id;
SELECT count(DISTINCT detail->>'llm_run') AS runs, min(length(detail->>'llm_run')) AS id_length
  FROM queryclaw.audit_log;
SELECT detail->'request_headers' AS llm_request_headers
  FROM queryclaw.audit_log WHERE func = 'llm' LIMIT 1;
-- The refused call's own row is queued from its subtransaction, which is
-- rolled back so the model can be told: the audit worker writes it all the
-- same (in the caller's transaction, without preload, it would be lost:
-- see README, Audit).
SELECT count(*) AS refused_rows FROM queryclaw.audit_log WHERE outcome = 'refused';

-- web_fetch's extract_prompt: the page's row, then the model's
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT length(queryclaw.web_fetch(qc_test.url('/html'), extract_prompt => 'SCENARIO:extract')) > 0 AS extracted;
SELECT qc_test.audit_flush();
SELECT func, outcome, detail->>'via' AS via, detail->'round' AS round FROM queryclaw.audit_log ORDER BY id;

-- the API key never shows: not in results (even when the endpoint echoes
-- it), errors, audit rows (the statement text included), nor to ordinary
-- roles' SHOW
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:leak') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:plain my key is sk-test-0123456789') AS r;
SELECT qc_test.audit_flush();
SELECT query FROM queryclaw.audit_log WHERE query LIKE '%my key is%';
SELECT count(*) AS rows_with_key FROM queryclaw.audit_log
 WHERE (url || coalesce(final_url, '') || coalesce(reason, '') || coalesce(query, '') || detail::text)
       LIKE '%sk-test-0123456789%';
SELECT count(*) AS listed FROM pg_settings WHERE name IN ('queryclaw.llm_api_key', 'queryclaw.search_api_key');
CREATE ROLE qc_carol;
SET ROLE qc_carol;
-- refused with 42501 (worded differently by each PostgreSQL major)
\set VERBOSITY sqlstate
SHOW queryclaw.llm_api_key;
SELECT current_setting('queryclaw.search_api_key');
SHOW queryclaw.llm_url;
\set VERBOSITY default
SHOW queryclaw.llm_model;
RESET ROLE;

-- privileges: the role needs EXECUTE on llm_chat_tools, and on the
-- function behind each tool it offers; extract_prompt needs both
GRANT USAGE ON SCHEMA qc_test TO qc_carol;
GRANT EXECUTE ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb) TO qc_carol;
SET ROLE qc_carol;
SELECT queryclaw.llm_chat_tools('SCENARIO:plain');
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:plain', tools => '{}') AS r;
RESET ROLE;
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text) TO qc_carol;
SET ROLE qc_carol;
SELECT r->>'answer' AS answer
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/hello'), tools => '{web_fetch}') AS r;
RESET ROLE;
SELECT qc_test.audit_flush();
SET ROLE qc_carol;
SELECT func, outcome FROM queryclaw.my_audit ORDER BY id;
RESET ROLE;

-- the endpoints' URLs may hold credentials: an ordinary role never reads
-- them whole, not through SHOW, current_setting or pg_settings, nor in an
-- error or its audit rows; and an endpoint that echoes the API key back
-- JSON-escaped does not bring it into the error
SELECT replace(current_setting('queryclaw.llm_url'), 'http://', 'http://user:URLPW001@')
       || '/sk-URL002abcdefgh?api-key=URL003' AS secret_llm_url \gset
SET queryclaw.llm_url = :'secret_llm_url';
-- such a URL is a secret: it cannot be kept for a role or a database
-- (pg_db_role_setting is readable by every role); one without credentials can
ALTER ROLE qc_carol SET queryclaw.llm_url = :'secret_llm_url';
ALTER ROLE qc_carol SET queryclaw.search_url = 'http://127.0.0.1/search?api_key=K1&q=';
ALTER ROLE qc_carol SET queryclaw.search_url = 'http://127.0.0.1/search';
ALTER ROLE qc_carol RESET queryclaw.search_url;
SELECT qc_test.audit_flush();
SET ROLE qc_carol;
-- refused with 42501 (worded differently by each PostgreSQL major)
\set VERBOSITY sqlstate
SELECT current_setting('queryclaw.llm_url', true);
SELECT current_setting('queryclaw.search_url');
\set VERBOSITY default
SELECT count(*) AS visible FROM pg_settings WHERE name IN ('queryclaw.llm_url', 'queryclaw.search_url');
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:plain', tools => '{}')$$) AS error;
RESET ROLE;
RESET queryclaw.llm_url;
SET ROLE qc_carol;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:leak_escaped', tools => '{}')$$) AS error;
RESET ROLE;
SELECT qc_test.audit_flush();
SET ROLE qc_carol;
SELECT qc_test.scrub(url) AS url, status, qc_test.scrub(reason) AS reason
  FROM queryclaw.my_audit WHERE func = 'llm' AND status IN (401, 404) ORDER BY id;
SELECT count(*) AS rows_with_secrets FROM queryclaw.my_audit
 WHERE (url || coalesce(final_url, '') || coalesce(reason, '') || coalesce(query, '') || detail::text)
       ~ '(URLPW|URL00|sk-test-0123456789)';
RESET ROLE;
REVOKE EXECUTE ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb) FROM qc_carol;
SET ROLE qc_carol;
SELECT queryclaw.web_fetch(qc_test.url('/html'), extract_prompt => 'SCENARIO:extract');
RESET ROLE;
DROP OWNED BY qc_carol;
DROP ROLE qc_carol;

-- a cancel (statement_timeout) stops the loop at once, whether the model
-- or a tool is being waited for: it is not handed to the model
SET statement_timeout = '300ms';
SELECT clock_timestamp() AS started \gset
SELECT queryclaw.llm_chat_tools('SCENARIO:slow:5000');
SELECT queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/slow?ms=5000'));
RESET statement_timeout;
SELECT clock_timestamp() - :'started'::timestamptz < interval '5 seconds' AS before_either_would_end;
SELECT r->>'answer' AS next_call_works FROM queryclaw.llm_chat_tools('SCENARIO:plain') AS r;
