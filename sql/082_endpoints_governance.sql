--
-- Which server governs a call, and how far: only a server the calling
-- role has USAGE on (the longest prefix among those), whose limits only
-- narrow the policy; the model's, embeddings' and search endpoints as
-- servers only where the role has USAGE, never with the global key, and
-- trusted past block_local only when a superuser owns the server.
--
-- qc_gov_bob may create servers (USAGE on the wrapper), and makes one
-- under the DBA's whose url is a longer prefix, with tight limits and
-- mappings of his own; qc_gov_alice uses the DBA's server.
--
CREATE ROLE qc_gov_alice;
CREATE ROLE qc_gov_bob;
GRANT USAGE ON SCHEMA qc_test TO qc_gov_alice, qc_gov_bob;
GRANT EXECUTE ON FUNCTION queryclaw.api_call(text, text, jsonb, text, integer),
                          queryclaw.api_call_many(jsonb, integer),
                          queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
                          queryclaw.web_search(text, integer),
                          queryclaw.llm_embed(text, text)
   TO qc_gov_alice, qc_gov_bob;
GRANT USAGE ON FOREIGN DATA WRAPPER queryclaw TO qc_gov_bob;

-- what the fixture's /echo was sent: path, and the headers that tell the
-- mappings apart
CREATE FUNCTION qc_test.gov_sent(r jsonb) RETURNS text LANGUAGE sql
AS $$ SELECT format('%s %s x-srv=%s authorization=%s body=%s',
                    r->'body'->>'method', r->'body'->>'path',
                    coalesce(r->'body'->'headers'->>'x-srv', '-'),
                    coalesce(r->'body'->'headers'->>'authorization', '-'),
                    coalesce(r->'body'->>'body', '-')) $$;
GRANT EXECUTE ON FUNCTION qc_test.gov_sent(jsonb) TO PUBLIC;
-- a server of the wrapper at url, with more options
CREATE FUNCTION qc_test.gov_server(name text, url text, options text DEFAULT '')
RETURNS text LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L%s)',
                   name, url, options);
    RETURN name;
END
$$;
GRANT EXECUTE ON FUNCTION qc_test.gov_server(text, text, text) TO PUBLIC;

-- the DBA's server for the API, and alice's key for it
SELECT qc_test.gov_server('gov_api', qc_test.url('/echo/api'));
CREATE USER MAPPING FOR qc_gov_alice SERVER gov_api
  OPTIONS (headers '{"Authorization": "Bearer alicekey00001", "X-Srv": "dba"}');
GRANT USAGE ON FOREIGN SERVER gov_api TO qc_gov_alice;

-- bob's server under it: a longer prefix, a 1 ms timeout, one call a
-- minute, no retries; a PUBLIC mapping, and one for alice, of his own
SET ROLE qc_gov_bob;
SELECT qc_test.gov_server('gov_bob', qc_test.url('/echo/api/v2'),
                          $$, timeout '1ms', rate_limit '1/min', max_concurrency '1', retry_max '0'$$);
CREATE USER MAPPING FOR PUBLIC SERVER gov_bob
  OPTIONS (headers '{"Authorization": "Bearer bobkey000001", "X-Srv": "bob"}');
CREATE USER MAPPING FOR qc_gov_alice SERVER gov_bob
  OPTIONS (headers '{"Authorization": "Bearer bobforalice01", "X-Srv": "bob4al"}');
RESET ROLE;

SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

-- alice's calls under bob's url are the DBA's server's: her key, the
-- global timeout (not his 1 ms), no rate limit of his (three calls in a
-- row), her POST body with her own mapping only
SET ROLE qc_gov_alice;
SELECT i, qc_test.gov_sent(queryclaw.api_call(qc_test.url('/echo/api/v2/items/' || i)))
  FROM generate_series(1, 3) AS i;
SELECT qc_test.gov_sent(queryclaw.api_call(qc_test.url('/echo/api/v2/gists'), 'POST',
                                           body => 'alice''s private note'));
SELECT ord, qc_test.gov_sent(response)
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/echo/api/v2/a')),
         jsonb_build_object('url', qc_test.url('/echo/api/v2/b'), 'method', 'POST', 'body', 'two')));
RESET ROLE;
-- bob's calls there are his server's: his mapping, his rate limit (with
-- a timeout the token can come within)
SET ROLE qc_gov_bob;
ALTER SERVER gov_bob OPTIONS (SET timeout '60s');
SELECT qc_test.gov_sent(queryclaw.api_call(qc_test.url('/echo/api/v2/items'))) AS bob_first;
SELECT split_part(qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/echo/api/v2/items'))$$), E'\n', 1)
       AS bob_second;
RESET ROLE;
SELECT qc_test.audit_flush();
SELECT role, detail->>'server' AS server, outcome, count(*)
  FROM queryclaw.audit_log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT count(*) AS rows_with_bobs_keys FROM queryclaw.audit_log a
 WHERE a::text LIKE '%bobkey%' OR a::text LIKE '%bobforalice%';

-- once bob grants her USAGE, his server is the longest prefix she may use:
-- it governs her calls there, its limits narrowing hers (his rate limit)
SET ROLE qc_gov_bob;
GRANT USAGE ON FOREIGN SERVER gov_bob TO qc_gov_alice;
RESET ROLE;
SET ROLE qc_gov_alice;
SELECT split_part(qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/echo/api/v2/items'))$$), E'\n', 1)
       AS alice_under_bob;
RESET ROLE;
ALTER SERVER gov_bob OPTIONS (DROP rate_limit);
SET ROLE qc_gov_alice;
SELECT qc_test.gov_sent(queryclaw.api_call(qc_test.url('/echo/api/v2/items')));
-- and not beyond it: the DBA's server still has the rest of /echo/api
SELECT qc_test.gov_sent(queryclaw.api_call(qc_test.url('/echo/api/v3')));
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER gov_bob FROM qc_gov_alice;

-- a server's limits only narrow: a timeout above queryclaw.timeout is
-- clamped to it (the error names the setting), one below it applies
SELECT qc_test.gov_server('gov_slow', qc_test.url('/slow'), $$, timeout '60s'$$);
GRANT USAGE ON FOREIGN SERVER gov_slow TO qc_gov_alice;
SET queryclaw.timeout = '300ms';
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/slow?ms=1500'))$$) AS clamped;
RESET ROLE;
ALTER SERVER gov_slow OPTIONS (SET timeout '100ms');
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/slow?ms=1500'))$$) AS narrowed;
RESET ROLE;
RESET queryclaw.timeout;

-- retry_max too: the server's 5 is clamped to queryclaw.retry_max (1), so
-- an endpoint that fails three times is tried twice, not answered at the
-- fourth attempt
SELECT qc_test.gov_server('gov_llm', current_setting('qc_test.llm_base') || '/v1', $$, retry_max '5'$$);
GRANT USAGE ON FOREIGN SERVER gov_llm TO qc_gov_alice;
SET queryclaw.llm_server = 'gov_llm';
SET queryclaw.retry_max = 1;
SET queryclaw.retry_base_delay = '5ms';
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:503,3 governance retries', '{}')$$)
       AS retried_once;
RESET ROLE;
RESET queryclaw.retry_max;
ALTER SERVER gov_llm OPTIONS (SET retry_max '0');
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:flaky:503,1 governance no retry', '{}')$$)
       AS server_retry_max_0;
RESET ROLE;
RESET queryclaw.retry_base_delay;

-- the model's endpoint as a server: the role's mapping is its key, and
-- never the global queryclaw.llm_api_key (alice has no mapping here)
SET ROLE qc_gov_alice;
SELECT coalesce((queryclaw.llm_chat_tools('SCENARIO:echo', '{}')->>'answer')::jsonb->>'auth_scheme',
                'none') AS key_sent;
RESET ROLE;
-- a server the role has no USAGE on is refused, before anything is sent
REVOKE USAGE ON FOREIGN SERVER gov_llm FROM qc_gov_alice;
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$) AS no_usage;
RESET ROLE;
DROP SERVER gov_llm;

-- bob's model server: refused for alice without USAGE; with it, his url
-- is not trusted (a non-superuser owns it): block_local refuses the
-- model's loopback address, not in queryclaw.local_allowlist
SET ROLE qc_gov_bob;
SELECT qc_test.gov_server('gov_bobllm', current_setting('qc_test.llm_base') || '/v1/');
-- (nor can he take the url of the DBA's server: one server a url)
SELECT qc_test.try(format('SELECT qc_test.gov_server(%L, %L)', 'gov_bob2', qc_test.url('/echo/api/')));
RESET ROLE;
SET queryclaw.llm_server = 'gov_bobllm';
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$) AS alice_no_usage;
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER gov_bobllm TO qc_gov_alice;
SET ROLE qc_gov_alice;
SELECT split_part(qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$), E'\n', 1)
       AS alice_with_usage;
RESET ROLE;
SET ROLE qc_gov_bob;
SELECT split_part(qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$), E'\n', 1)
       AS bob_himself;
RESET ROLE;
-- trusted while a superuser owns it; no longer once it is given to bob
ALTER SERVER gov_bobllm OWNER TO CURRENT_USER;
SET ROLE qc_gov_alice;
SELECT coalesce((queryclaw.llm_chat_tools('SCENARIO:echo', '{}')->>'answer')::jsonb->>'auth_scheme',
                'none') AS superuser_owned;
RESET ROLE;
ALTER SERVER gov_bobllm OWNER TO qc_gov_bob;
SET ROLE qc_gov_alice;
SELECT split_part(qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:echo', '{}')$$), E'\n', 1)
       AS owned_by_bob_again;
RESET ROLE;
RESET queryclaw.llm_server;

-- the search API and the embeddings the same way
SET queryclaw.search_server = 'gov_bobllm';
SET ROLE qc_gov_alice;
SELECT split_part(qc_test.try($$SELECT queryclaw.web_search('x')$$), E'\n', 1) AS search_under_bob;
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER gov_bobllm FROM qc_gov_alice;
SET ROLE qc_gov_alice;
SELECT split_part(qc_test.try($$SELECT queryclaw.web_search('x')$$), E'\n', 1) AS search_no_usage;
RESET ROLE;
RESET queryclaw.search_server;
SET queryclaw.embed_server = 'gov_bobllm';
SET ROLE qc_gov_alice;
SELECT qc_test.try($$SELECT queryclaw.llm_embed('x')$$) AS embed_no_usage;
RESET ROLE;
RESET queryclaw.embed_server;

-- no key of any mapping, nor the global one, in the audit log
SELECT qc_test.audit_flush();
SELECT k.label AS key, (SELECT count(*) FROM queryclaw.audit_log a WHERE a::text LIKE '%' || k.k || '%') AS rows
  FROM (VALUES ('alicekey', 'alicekey'), ('bobkey', 'bobkey'), ('bobforalice', 'bobforalice'),
               ('llm_api_key', current_setting('queryclaw.llm_api_key'))) AS k(label, k);

DROP SERVER gov_api, gov_bob, gov_slow, gov_bobllm CASCADE;
DROP FUNCTION qc_test.gov_sent(jsonb), qc_test.gov_server(text, text, text);
DROP OWNED BY qc_gov_alice, qc_gov_bob;
DROP ROLE qc_gov_alice, qc_gov_bob;
