--
-- MCP servers' tools: a queryclaw server with protocol 'mcp' is an MCP
-- server over Streamable HTTP (test/fixture/mcp_fixture.py on the fixture
-- server: /mcp/<mode> answers as the mode says, /mcp-log tells what it was
-- sent).  mcp_tools and mcp_call go through the session, the policy, the
-- mapping and the audit like any call.
--
CREATE ROLE qc_mcp;
CREATE ROLE qc_mcp_none;
GRANT USAGE ON SCHEMA qc_test TO qc_mcp, qc_mcp_none;
GRANT EXECUTE ON FUNCTION queryclaw.mcp_tools(name), queryclaw.mcp_call(name, text, jsonb)
   TO qc_mcp, qc_mcp_none;
CREATE FUNCTION qc_test.mcp_server(name text, mode text, options text DEFAULT '')
RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, protocol ''mcp''%s)',
                   name, qc_test.url('/mcp/' || mode), options);
    EXECUTE format('GRANT USAGE ON FOREIGN SERVER %I TO qc_mcp', name);
END
$$;
CREATE FUNCTION qc_test.mcp_log() RETURNS SETOF text LANGUAGE sql
AS $$ SELECT regexp_split_to_table(rtrim(queryclaw.api_call(qc_test.url('/mcp-log'))->>'body', E'\n'), E'\n') $$;
SELECT count(*) >= 0 AS log_cleared FROM qc_test.mcp_log();

-- the options: bad values refused, naming the option (22023)
SELECT qc_test.try(format('CREATE SERVER qc_bad FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, %s)',
                          'https://mcp.example.com/mcp', o)) AS refused
  FROM unnest(ARRAY['protocol ''ftp''', 'protocol ''MCP''',
                    'protocol ''mcp'', tools ''''', 'protocol ''mcp'', tools ''a,,b''',
                    'protocol ''mcp'', tools ''a b''', 'protocol ''mcp'', tools ''*x''',
                    'protocol ''mcp'', tools_ttl ''soon''', 'protocol ''mcp'', tools_ttl ''-1s''',
                    'tools ''echo''', 'tools_ttl ''1min''']) AS o;
CREATE SERVER qc_ok FOREIGN DATA WRAPPER queryclaw
  OPTIONS (url 'https://mcp.example.com/mcp', protocol 'mcp', tools 'search_issues, get_*', tools_ttl '0');
ALTER SERVER qc_ok OPTIONS (SET protocol 'http', DROP tools, DROP tools_ttl);
SELECT qc_test.try($$ALTER SERVER qc_ok OPTIONS (ADD tools 'x')$$);
DROP SERVER qc_ok;

-- the tool list, every page, with the schemas as sent
SELECT qc_test.mcp_server('mcp_json', 'json');
SET ROLE qc_mcp;
SELECT name, title, description, input_schema, output_schema FROM queryclaw.mcp_tools('mcp_json');
-- calls: text, structured content, an image part, isError, an unknown tool
SELECT queryclaw.mcp_call('mcp_json', 'echo', '{"message": "hello"}');
SELECT r->'structured' AS structured, r->>'text' AS text FROM queryclaw.mcp_call('mcp_json', 'add', '{"a": 2, "b": 3}') r;
SELECT r->'content'->1->>'type' AS part, r->>'text' AS text, r->>'is_error' AS is_error
  FROM queryclaw.mcp_call('mcp_json', 'image') r;
SELECT r->>'is_error' AS is_error, r->>'text' AS text FROM queryclaw.mcp_call('mcp_json', 'fail') r;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_json', 'nosuch')$$);
RESET ROLE;
-- one initialize per session; the session and the revision sent back after it
SELECT * FROM qc_test.mcp_log();
-- the session is the role's: another role begins its own, and the first
-- role's goes on without a new initialize
SELECT queryclaw.mcp_call('mcp_json', 'echo', '{"message": "as the superuser"}')->>'text' AS text;
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_json', 'echo', '{"message": "as qc_mcp again"}')->>'text' AS text;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();

-- text/event-stream: a notification and a request of the server before the
-- response; the request answered with method-not-found
SELECT qc_test.mcp_server('mcp_sse', 'sse');
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_sse', 'echo', '{"message": "streamed"}')->>'text' AS text;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();

-- a request of the server that it waits on before it sends its response
-- (a ping): answered, with ping's empty result, while the stream is open
SELECT qc_test.mcp_server('mcp_ask', 'ask');
SET ROLE qc_mcp;
SELECT r->>'is_error' AS is_error, r->>'text' AS text
  FROM queryclaw.mcp_call('mcp_ask', 'echo', '{"message": "asked"}') AS r;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();

-- a stream that ends before its response, its events numbered, resumed
-- with a GET and its Last-Event-ID
SELECT qc_test.mcp_server('mcp_resume', 'resume');
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_resume', 'echo', '{"message": "resumed"}')->>'text' AS text;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();

-- a stream polled (2025-11-25): its connection closed after each event,
-- with an id and a retry field; resumed as long as it goes on, five times
SELECT qc_test.mcp_server('mcp_poll', 'poll');
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_poll', 'echo', '{"message": "polled"}')->>'text' AS text;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();
-- one that goes on without its response is resumed only within the
-- server's timeout
SELECT qc_test.mcp_server('mcp_pollever', 'pollever', ', timeout ''1s''');
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_pollever', 'echo', '{"message": "polled"}')$$);
RESET ROLE;
SELECT count(*) > 5 AS resumed_many FROM qc_test.mcp_log() WHERE mcp_log LIKE 'pollever GET%';

-- an expired session (404) begins again once
SELECT qc_test.mcp_server('mcp_expire', 'expire');
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_expire', 'echo', '{"message": "one"}')->>'text' AS text;
SELECT queryclaw.mcp_call('mcp_expire', 'echo', '{"message": "two"}')->>'text' AS text;
RESET ROLE;
SELECT * FROM qc_test.mcp_log();

-- faults: a stream dropped before the response (no event ids), a body that is not JSON,
-- 401 without the key, a slow server past its timeout, a reply past
-- max_bytes, a revision the client does not speak, a session id that
-- could not go back in a header
SELECT qc_test.mcp_server('mcp_dropped', 'dropped');
SELECT qc_test.mcp_server('mcp_badjson', 'badjson');
SELECT qc_test.mcp_server('mcp_auth', 'auth');
SELECT qc_test.mcp_server('mcp_slow', 'slow', ', timeout ''1s''');
SELECT qc_test.mcp_server('mcp_huge', 'huge');
SELECT qc_test.mcp_server('mcp_oldrev', 'oldrev');
SELECT qc_test.mcp_server('mcp_badsession', 'badsession');
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_dropped', 'echo', '{"message": "x"}')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_badjson', 'echo', '{"message": "x"}')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_auth', 'whoami')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_slow', 'echo', '{"message": "x"}')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_oldrev')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_badsession')$$);
RESET ROLE;
SET queryclaw.max_bytes = '1MB';
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_huge', 'echo', '{"message": "x"}')$$);
RESET ROLE;
RESET queryclaw.max_bytes;
-- the key in the role's mapping: sent, and hidden in what comes back
CREATE USER MAPPING FOR qc_mcp SERVER mcp_auth
  OPTIONS (headers '{"Authorization": "Bearer mcp-secret-0123"}');
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_auth', 'whoami')->>'text' AS text;
RESET ROLE;
SELECT count(*) > 0 AS sent FROM qc_test.mcp_log();

-- bad input and refusals: an unknown server (42704), a server that is not
-- an MCP server (22023), no USAGE (42501), arguments that are not an
-- object (22023), a tool the tools option does not offer (42501)
CREATE SERVER mcp_http FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/');
GRANT USAGE ON FOREIGN SERVER mcp_http TO qc_mcp;
SELECT qc_test.mcp_server('mcp_some', 'some', ', tools ''ec*, add''');
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('nosuch')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_http', 'echo')$$);
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_json', 'echo', '[1]')$$);
SELECT name FROM queryclaw.mcp_tools('mcp_some');
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_some', 'image')$$);
SET ROLE qc_mcp_none;
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_json')$$);
RESET ROLE;
-- only mcp_some's tool list went out: nothing for the refusals
SELECT * FROM qc_test.mcp_log();
-- the policy applies to the server's url and to every hop: servers_only
-- lets a server's url through, not a hop off it; a hop to a blocked
-- address, and a denied host, are refused before anything is sent to them
SELECT qc_test.mcp_server('mcp_hop', 'moved');
BEGIN;
SET LOCAL queryclaw.servers_only = on;
SET LOCAL ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_json', 'echo', '{"message": "a server"}')->>'text' AS text;
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_hop')$$);
COMMIT;
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_hop')$$);
RESET ROLE;
BEGIN;
SET LOCAL queryclaw.denied_hosts = '127.0.0.1';
SET LOCAL ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_some', 'echo', '{"message": "denied"}')$$);
COMMIT;
-- the server's rate limit counts each JSON-RPC request: at 1/min, the
-- notification after initialize would wait past the timeout (53400)
SELECT qc_test.mcp_server('mcp_rated', 'rated', ', rate_limit ''1/min'', timeout ''1s''');
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_call('mcp_rated', 'echo', '{"message": "rated"}')$$);
RESET ROLE;
SELECT * FROM qc_test.mcp_log();
-- the policy applies to the server's url: a blocked host is refused
CREATE SERVER mcp_blocked FOREIGN DATA WRAPPER queryclaw
  OPTIONS (url 'http://127.0.0.2:9/mcp', protocol 'mcp');
GRANT USAGE ON FOREIGN SERVER mcp_blocked TO qc_mcp;
SET ROLE qc_mcp;
SELECT qc_test.try($$SELECT queryclaw.mcp_tools('mcp_blocked')$$);
RESET ROLE;

-- in the loop: mcp:server offers each tool as server__tool, its input
-- schema as sent; text comes back, an image described, structured content
-- as JSON, isError as an error
GRANT EXECUTE ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
                          queryclaw.check_url(text)
   TO qc_mcp, qc_mcp_none;
SET ROLE qc_mcp;
SELECT r->>'answer' AS answer,
       (SELECT string_agg(format('%s ok=%s', c->>'name', c->>'ok'), ', ') FROM jsonb_array_elements(r->'tool_calls') c) AS calls
  FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json}') AS r;
-- one tool, by mcp:server/tool; the tools option applies
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json/add}') AS r;
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{check_url, mcp:mcp_some}') AS r;
-- what the model is told (the scripted model answers with it): the key of
-- the role's mapping hidden
SELECT r->>'answer' AS answer FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_auth/whoami}') AS r;
-- the loop's caps: llm_max_tool_calls in one reply, llm_tool_max_chars on
-- what goes back
RESET ROLE;
SET queryclaw.llm_max_tool_calls = 2;
SET ROLE qc_mcp;
SELECT (SELECT string_agg(format('%s ok=%s %s', c->>'name', c->>'ok', split_part(c->>'error', E'\n', 1)), E'\n')
          FROM jsonb_array_elements(r->'tool_calls') c) AS calls
  FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json}') AS r;
RESET ROLE;
RESET queryclaw.llm_max_tool_calls;
SET queryclaw.max_bytes = '4MB';
SET queryclaw.llm_tool_max_chars = 100;
SET ROLE qc_mcp;
SELECT r->'tool_calls'->0->'chars' AS chars, r->'tool_calls'->0->'ok' AS ok,
       length(split_part(r->>'answer', E'\n', 2)) AS answer_line
  FROM queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_huge/echo}') AS r;
RESET ROLE;
RESET queryclaw.llm_tool_max_chars;
RESET queryclaw.max_bytes;
SET ROLE qc_mcp;
-- refused at the call: a tool the server lacks or does not offer, two
-- tools of one name, no USAGE, a name past the providers' 64 characters
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json/nosuch}')$$);
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_some/image}')$$);
RESET ROLE;
SELECT qc_test.mcp_server('mcp.json', 'dup');
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json, mcp:mcp.json}')$$);
DROP SERVER "mcp.json";
SELECT qc_test.mcp_server(repeat('m', 60), 'long');
SELECT qc_test.try(format('SELECT queryclaw.llm_chat_tools(%L, %L)', 'SCENARIO:mcp',
                          ARRAY['mcp:' || repeat('m', 60) || '/echo']));
DO $$ BEGIN EXECUTE format('DROP SERVER %I', repeat('m', 60)); END $$;
SET ROLE qc_mcp_none;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:mcp', '{mcp:mcp_json}')$$);
RESET ROLE;

-- llm_chat_tools_async offers them too: the worker runs the call as the role
GRANT EXECUTE ON FUNCTION
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb)
    TO qc_mcp;
SET ROLE qc_mcp;
SELECT queryclaw.llm_chat_tools_async('SCENARIO:mcp', '{mcp:mcp_json/add}', context => '{"n": "mcp"}')
       IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                              WHERE context->>'n' = 'mcp' AND state NOT IN ('done', 'failed', 'cancelled')) = 0$c$);
SELECT state, result->>'answer' AS answer, error FROM queryclaw.requests WHERE context->>'n' = 'mcp';
DELETE FROM queryclaw.requests WHERE context->>'n' = 'mcp';

-- arguments with a secret in them: no request body is in an audit row,
-- and the statement's text, which is, has the secret redacted
SET ROLE qc_mcp;
SELECT queryclaw.mcp_call('mcp_json', 'echo', '{"message": "x", "password": "hunter2-hunter2"}')->>'text' AS text;
RESET ROLE;

-- one audit row per JSON-RPC request: func 'mcp', the server, method and
-- tool (mcp_pollever's resumptions: as many as its timeout let through,
-- so counted apart); no key anywhere
SELECT qc_test.audit_flush();
SELECT detail->>'server' AS server, detail->>'method' AS method, detail->>'tool' AS tool,
       outcome, count(*)
  FROM queryclaw.audit_log WHERE func = 'mcp' AND detail->>'server' <> 'mcp_pollever'
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
SELECT detail->>'method' AS method, outcome, count(*) > 5 AS many
  FROM queryclaw.audit_log WHERE func = 'mcp' AND detail->>'server' = 'mcp_pollever'
 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS rows_with_key FROM queryclaw.audit_log a WHERE a::text LIKE '%mcp-secret-0123%';
SELECT count(*) AS rows_with_password FROM queryclaw.audit_log a WHERE a::text LIKE '%hunter2%';
SELECT query FROM queryclaw.audit_log WHERE func = 'mcp' AND query LIKE '%"password"%';

DROP SERVER mcp_json, mcp_sse, mcp_ask, mcp_poll, mcp_pollever, mcp_resume, mcp_expire, mcp_dropped, mcp_badjson, mcp_auth, mcp_slow,
  mcp_huge, mcp_oldrev, mcp_badsession, mcp_http, mcp_some, mcp_blocked, mcp_hop, mcp_rated CASCADE;
DROP FUNCTION qc_test.mcp_server(text, text, text), qc_test.mcp_log();
DROP OWNED BY qc_mcp, qc_mcp_none;
DROP ROLE qc_mcp, qc_mcp_none;
