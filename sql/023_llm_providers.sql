--
-- llm_chat_tools against replies shaped as real providers send them
-- (test/fixture/llm_server.py, one scenario per provider habit): retries,
-- output_schema with tools, refusals, reasoning, content parts, tool call
-- arguments and ids, missing usage, odd bytes; and the settings for
-- hosted endpoints.  Retries wait a few milliseconds here, not seconds.
--
SET queryclaw.retry_base_delay = '5ms';

-- retries: a 503, a 429 with Retry-After in seconds, a 409 with
-- Retry-After as an HTTP date, each ends in an answer; every attempt is
-- audited, the later ones with their number
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->>'answer' AS answer, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('SCENARIO:flaky:503,2 one') AS r;
SELECT clock_timestamp() AS started \gset
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:flaky:429,1,1 two') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:flaky:409,1,date three') AS r;
SELECT clock_timestamp() - :'started'::timestamptz >= interval '1 second' AS waited_as_asked;
SELECT qc_test.audit_flush();
SELECT status, outcome, regexp_replace(reason, '[0-9.]+ m?s$', '(a wait)') AS reason,
       detail->'attempt' AS attempt, detail->'round' AS round
  FROM queryclaw.audit_log WHERE func = 'llm' ORDER BY id;
-- out of retries: the error says how many attempts and what the provider
-- last said; retry_max = 0 sends once
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:500,9 four')$$);
SET queryclaw.retry_max = 0;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:503,1 five')$$);
RESET queryclaw.retry_max;
-- a Retry-After longer than one request may take fails at once, quoting it
SET queryclaw.llm_timeout = '10s';
SELECT clock_timestamp() AS started \gset
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:429,1,20 six')$$);
SELECT clock_timestamp() - :'started'::timestamptz < interval '10 seconds' AS failed_without_the_wait;
RESET queryclaw.llm_timeout;
SET queryclaw.retry_max_delay = '2s';
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:429,1,20 seven')$$);
RESET queryclaw.retry_max_delay;
-- 4xx other than 408, 409, 425 and 429 are not retried
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:401,1 eight')$$);
-- a connection refused is retried, then reported with the attempts
SET queryclaw.llm_url = 'http://127.0.0.1:1/v1';
SELECT regexp_replace(qc_test.try($$SELECT queryclaw.llm_chat_tools('hello')$$),
                      'DETAIL: .*(\d+ attempts)', 'DETAIL: ... \1') AS error;
RESET queryclaw.llm_url;
-- the search API is retried too
SELECT count(*) AS results FROM queryclaw.web_search('flaky-2-a', 3);
-- a cancel ends the wait between attempts at once
SET queryclaw.retry_base_delay = '10s';
SET statement_timeout = '300ms';
SELECT clock_timestamp() AS started \gset
SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:503,1 nine');
RESET statement_timeout;
SELECT clock_timestamp() - :'started'::timestamptz < interval '5 seconds' AS before_the_retry;
SET queryclaw.retry_base_delay = '5ms';
-- seen from another session, the wait between attempts is an Extension
-- wait event, and pg_cancel_backend ends it at once
CREATE EXTENSION dblink;
SELECT dblink_connect('waiter', format('host=%s port=%s dbname=%s',
       current_setting('unix_socket_directories'), current_setting('port'),
       current_database())) AS connected;
SELECT pid AS waiter_pid FROM dblink('waiter', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT dblink_exec('waiter', 'SET queryclaw.retry_base_delay = ''20s''') AS set;
SELECT dblink_send_query('waiter',
       format('SELECT queryclaw.llm_chat_tools(%L)', 'SCENARIO:flaky:503,1 ten')) AS sent;
-- once the first attempt's 503 is in the audit log, the session waits
SELECT qc_test.wait_for_audit(1, 'status = 503') AS first_attempt_rows;
SELECT qc_test.wait_until(format('EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s
                                          AND wait_event_type = %L)', :waiter_pid, 'Extension')) AS waiting;
SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = :waiter_pid;
SELECT pg_cancel_backend(:waiter_pid) AS cancelled;
SELECT clock_timestamp() AS cancel_sent \gset
SELECT * FROM dblink_get_result('waiter') AS t(r jsonb);
SELECT clock_timestamp() - :'cancel_sent'::timestamptz < interval '10 seconds' AS before_the_retry;
SELECT count(*) AS rest FROM dblink_get_result('waiter') AS t(r jsonb);
SELECT dblink_disconnect('waiter');
DROP EXTENSION dblink;

-- output_schema with tools, on a server that lets response_format govern
-- the reply: the tool rounds go without it, so the model browses; one
-- final request asks for the schema
SELECT r->'answer' AS answer, r->'rounds' AS rounds, jsonb_array_length(r->'tool_calls') AS calls
  FROM queryclaw.llm_chat_tools('SCENARIO:schema_tools URL:' || qc_test.url('/about'),
       output_schema => '{"type": "object", "properties": {"city": {"type": ["string", "null"]}}}') AS r;
-- the request: strict when every object is closed and fully required,
-- tool_choice none for the final one; max_completion_tokens when chosen
SET queryclaw.llm_max_tokens = 64;
SET queryclaw.llm_token_param = 'max_completion_tokens';
SELECT jsonb_pretty(a->'response_format') AS response_format, a->'max_tokens' AS max_tokens,
       a->'max_completion_tokens' AS max_completion_tokens, a->'tool_choice' AS tool_choice
  FROM (SELECT ((queryclaw.llm_chat_tools('SCENARIO:echo', tools => '{check_url}',
        output_schema => '{"type": "object", "properties": {"echo": {"type": "string"}},
                           "required": ["echo"], "additionalProperties": false}'))->'answer'->>'echo')::jsonb) AS t(a);
RESET queryclaw.llm_token_param;
RESET queryclaw.llm_max_tokens;
SET queryclaw.llm_token_param = 'max_output_tokens';
-- no strict for an open object, nor for a keyword strict mode lacks
SELECT s AS schema, ((r->'answer'->>'echo')::jsonb)->'response_format'->'json_schema' ? 'strict' AS strict
  FROM unnest(ARRAY['{"type": "object", "properties": {"echo": {"type": "string"}}}',
                    '{"type": "object", "properties": {"echo": {"type": "string", "maxLength": 5000}},
                      "required": ["echo"], "additionalProperties": false}']) AS s,
       LATERAL queryclaw.llm_chat_tools('SCENARIO:echo', tools => '{}', output_schema => s::jsonb) AS r;
-- the answer is checked against the whole schema: types, required, enums
SELECT r->'answer' AS answer, r->'rounds' AS rounds
  FROM queryclaw.llm_chat_tools('SCENARIO:wrong_shape_once', tools => '{}',
       output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}}') AS r;
SELECT s AS schema, qc_test.try(format('SELECT queryclaw.llm_chat_tools(%L, tools => ''{}'', output_schema => %L)',
                                       'SCENARIO:json', s)) AS error
  FROM unnest(ARRAY['{"type": "object", "properties": {"city": {"type": "integer"}}}',
                    '{"type": "object", "required": ["city", "country"]}',
                    '{"type": "object", "properties": {"city": {"enum": ["Paris", "Nice"]}}}',
                    '{"type": "object", "additionalProperties": false, "properties": {"town": {}}}',
                    '{"type": "object", "properties": {"city": {"type": "string", "maxLength": 3}}}',
                    '{"$defs": {"c": {"const": "Nice"}}, "type": "object", "properties": {"city": {"$ref": "#/$defs/c"}}}']) AS s;

-- a refusal is returned as refusal; with output_schema it is an error
SELECT r->'answer' AS answer, r->>'refusal' AS refusal, r->>'finish_reason' AS finish_reason
  FROM queryclaw.llm_chat_tools('SCENARIO:refusal') AS r;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:refusal', output_schema => '{"type": "object"}')$$);
SELECT r->'refusal' AS refusal FROM queryclaw.llm_chat_tools('SCENARIO:plain') AS r;

-- reasoning stays out of the answer and out of the JSON
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:think') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:think:unopened') AS r;
SELECT r->'answer' AS answer
  FROM queryclaw.llm_chat_tools('SCENARIO:think', tools => '{}', output_schema => '{"type": "object"}') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:reasoning') AS r;
-- content as an array of parts: the text parts, joined
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:parts') AS r;

-- tool call arguments that are not JSON go back as an error result, and
-- are not echoed as the assistant's (the server would refuse them)
SELECT r->>'answer' AS answer, r->'tool_calls'->0->'arguments' AS arguments,
       r->'tool_calls'->0->>'error' AS error
  FROM queryclaw.llm_chat_tools('SCENARIO:bad_args') AS r;
-- ids missing, empty, or repeated in every reply: each call gets one of its
-- own, unique in the conversation (the server refuses duplicates)
SELECT k AS ids, r->>'answer' AS answer,
       (SELECT array_agg(c->>'id') FROM jsonb_array_elements(r->'tool_calls') AS c) AS call_ids
  FROM unnest(ARRAY['missing', 'empty', 'same']) AS k,
       LATERAL queryclaw.llm_chat_tools('SCENARIO:ids:' || k || ' URL:' || qc_test.url('/hello')) AS r;
-- in the messages form, the ids of the conversation so far are taken too
SELECT r->>'answer' AS answer,
       (SELECT array_agg(c->>'id') FROM jsonb_array_elements(r->'tool_calls') AS c) AS call_ids
  FROM queryclaw.llm_chat_tools(jsonb_build_array(
         jsonb_build_object('role', 'user', 'content', 'Is it there?'),
         jsonb_build_object('role', 'assistant', 'content', NULL, 'tool_calls', jsonb_build_array(
           jsonb_build_object('id', 'call_qc_1_1', 'type', 'function', 'function',
                              jsonb_build_object('name', 'check_url', 'arguments', '{}')))),
         jsonb_build_object('role', 'tool', 'tool_call_id', 'call_qc_1_1', 'content', 'yes'),
         jsonb_build_object('role', 'user', 'content', 'SCENARIO:ids:missing URL:' || qc_test.url('/hello')))) AS r;

-- missing usage is null, in the result and in the audit row
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->'usage' AS usage FROM queryclaw.llm_chat_tools('SCENARIO:no_usage') AS r;
SELECT qc_test.audit_flush();
SELECT detail->'total_tokens' AS total_tokens FROM queryclaw.audit_log WHERE func = 'llm';

-- \u0000, a lone surrogate and bytes that are not UTF-8 are text like any other
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:nul') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:bad_bytes') AS r;

-- extract_prompt: a refusal, a cut answer and a tool call are errors
SELECT k AS scenario, qc_test.try(format('SELECT queryclaw.web_fetch(qc_test.url(''/html''), extract_prompt => %L)',
                                         'SCENARIO:' || k)) AS error
  FROM unnest(ARRAY['refusal', 'length', 'tool_call']) AS k;

-- hosted endpoints: the key in a named header (Azure OpenAI's api-key),
-- never stored; the header must be one the audit log knows is secret
SET queryclaw.llm_api_key_header = 'api-key';
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT a->'auth_scheme' AS auth_scheme, a->'api_key_header' AS api_key_header
  FROM (SELECT ((queryclaw.llm_chat_tools('SCENARIO:echo', tools => '{}'))->>'answer')::jsonb) AS t(a);
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:leak') AS r;
SELECT qc_test.audit_flush();
SELECT detail->'request_headers' AS request_headers FROM queryclaw.audit_log WHERE func = 'llm' LIMIT 1;
RESET queryclaw.llm_api_key_header;
SET queryclaw.llm_api_key_header = 'X-Custom';
SET queryclaw.llm_api_key_header = 'bad header';
-- extra query parameters in llm_url stay at the end of the request URL
SELECT set_config('queryclaw.llm_url', current_setting('qc_test.llm_base') || '/v1?api-version=2024-10-21', false) IS NOT NULL AS set;
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:plain') AS r;
SELECT qc_test.audit_flush();
SELECT qc_test.scrub(url) AS url, status FROM queryclaw.audit_log WHERE func = 'llm';
RESET queryclaw.llm_url;
