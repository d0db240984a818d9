--
-- Where a call under a server may go: paths compared as the server reads
-- them (percent-encoded unreserved characters decoded, dot segments
-- removed, and "%2F", "\" and ";params" as lenient servers read them);
-- queryclaw.servers_only on every hop, and at enqueue; and no redirect
-- followed whose target carries a value of the mapping.
--
CREATE ROLE qc_hop;
GRANT USAGE ON SCHEMA qc_test TO qc_hop;
GRANT EXECUTE ON FUNCTION queryclaw.api_call(text, text, jsonb, text, integer),
                          queryclaw.api_call_many(jsonb, integer),
                          queryclaw.web_fetch(text, text, integer, text),
                          queryclaw.check_url(text),
                          queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
                          queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
                          queryclaw.wait(bigint[], interval)
   TO qc_hop;

CREATE FUNCTION qc_test.hop_server(name text, path text) RETURNS text LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   name, qc_test.url(path));
    RETURN name;
END
$$;
SELECT qc_test.hop_server(n, p)
  FROM (VALUES ('hop_api', '/echo/v1'), ('hop_redir', '/redirect'),
               ('hop_reflect', '/redirect-reflect')) AS t(n, p);
CREATE USER MAPPING FOR qc_hop SERVER hop_api OPTIONS (headers '{"X-Srv": "api"}');
GRANT USAGE ON FOREIGN SERVER hop_api, hop_redir, hop_reflect TO qc_hop;

-- whether the fixture's /echo was sent the mapping's header (not the path
-- it received: libcurl 8 removes '%2e' dot segments itself, 7.88 not)
CREATE FUNCTION qc_test.hop_sent(url text) RETURNS text LANGUAGE sql
AS $$ SELECT format('x-srv=%s', coalesce(r->'body'->'headers'->>'x-srv', '-'))
        FROM queryclaw.api_call(url) AS r $$;
GRANT EXECUTE ON FUNCTION qc_test.hop_sent(text) TO qc_hop;

-- a path is under /echo/v1 as the server reads it: "%2e%2e" is "..",
-- "%61" is "a"; an escaped '/' (%2F, %5C), a '\' or ";params" could be a
-- separator to the server, so a path is under only if it is either way
SET ROLE qc_hop;
SELECT p AS path, qc_test.hop_sent(qc_test.url(p)) AS sent
  FROM unnest(ARRAY['/echo/v1/items', '/echo/v1/%61/b', '/echo/%76%31/x', '/echo/v1/a/../b',
                    '/echo/v1/../admin', '/echo/v1/%2e%2e/admin', '/echo/v1/%2E%2E/admin',
                    '/echo/v1/.%2e/admin', '/echo/v1/..%2Fadmin', '/echo/v1/%2e%2e%2fadmin',
                    '/echo/v1/..%5Cadmin', '/echo/v1/..;/admin', '/echo/v1//../admin',
                    '/echo/v1%2Fitems', '/echo/v1/a%2Fb']) AS p;
RESET ROLE;

-- queryclaw.servers_only refuses the same paths, and check_url says so
SET queryclaw.servers_only = on;
SET ROLE qc_hop;
SELECT p AS path, split_part(qc_test.try(format('SELECT queryclaw.api_call(%L)', qc_test.url(p))), E'\n', 1) AS call,
       queryclaw.check_url(qc_test.url(p))->'allowed' AS check_url
  FROM unnest(ARRAY['/echo/v1/x', '/echo/v1/%2e%2e/admin', '/echo/v1/..%2Fadmin',
                    '/echo/v1/..;/admin']) AS p;
SELECT qc_test.scrub(jsonb_pretty(queryclaw.check_url(qc_test.url('/echo/v1/%2e%2e/admin')) - 'port'))
       AS check_url;

-- servers_only on every hop: a server's url redirecting to a URL under no
-- server the role may use is not followed, whichever way the call is made
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/redirect?to=/hello'))$$) AS api_call;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=/echo/v1/%2e%2e/x'))$$) AS web_fetch;
SELECT ord, status, qc_test.scrub(error) AS error
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/redirect?to=/hello')),
         jsonb_build_object('url', qc_test.url('/redirect?to=/echo/v1/ok'))));
-- a redirect to a URL under a server the role may use is followed
SELECT queryclaw.api_call(qc_test.url('/redirect?to=/echo/v1/ok'))->'body'->>'path' AS followed;
RESET ROLE;
-- a model's tool call: the refusal is the tool's result
SET ROLE qc_hop;
SELECT r->'tool_calls'->0->'ok' AS ok, qc_test.scrub(r->'tool_calls'->0->>'error') AS error
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/redirect?to=/hello'),
                                '{web_fetch}') AS r;
-- at enqueue: a URL under no server is refused now (42501), audited as
-- the synchronous call's refusal; one under a server is queued
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/hello'))$$) AS api_call_async;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async(qc_test.url('/echo/v1/%2e%2e/x'))$$) AS web_fetch_async;
RESET ROLE;
-- in the worker, as the role's settings say: its redirect is not followed
ALTER ROLE qc_hop SET queryclaw.servers_only = on;
SET ROLE qc_hop;
SELECT queryclaw.api_call_async(qc_test.url('/redirect?to=/hello')) AS async_id \gset
SELECT state, qc_test.scrub(error) AS error FROM queryclaw.wait(ARRAY[:async_id], NULL);
RESET ROLE;
ALTER ROLE qc_hop RESET queryclaw.servers_only;
DELETE FROM queryclaw.requests WHERE id = :async_id;
SELECT qc_test.audit_flush();
SELECT func, outcome, qc_test.scrub(url) AS url, qc_test.scrub(reason) AS reason
  FROM queryclaw.audit_log
 WHERE func IN ('api_call_async', 'web_fetch_async') AND role = 'qc_hop'
 ORDER BY id;
RESET queryclaw.servers_only;

-- with no server at all, servers_only refuses every URL
DROP SERVER hop_api, hop_redir CASCADE;
ALTER SERVER hop_reflect RENAME TO hop_reflect_kept;
SET queryclaw.servers_only = on;
SET ROLE qc_hop;
SELECT split_part(qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/hello'))$$), E'\n', 1) AS some_servers;
RESET ROLE;
DROP SERVER hop_reflect_kept CASCADE;
SET ROLE qc_hop;
SELECT split_part(qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/hello'))$$), E'\n', 1) AS no_servers;
RESET ROLE;
RESET queryclaw.servers_only;

-- a redirect whose target carries a value of the mapping is not
-- followed: the query key as sent, a query value decoded, a header's
-- value after its scheme; the error names no key
SELECT qc_test.hop_server('hop_reflect', '/redirect-reflect');
CREATE USER MAPPING FOR qc_hop SERVER hop_reflect
  OPTIONS (headers '{"Authorization": "Bearer hophdrkey0001", "X-Api-Key": "hopapikey0001"}',
           query 'key=hopquerykey01&sig=a%2Fhopsigval01');
GRANT USAGE ON FOREIGN SERVER hop_reflect TO qc_hop;
SET ROLE qc_hop;
SELECT p AS redirect, qc_test.try(format('SELECT queryclaw.api_call(%L)', qc_test.url(p))) AS outcome
  FROM unnest(ARRAY['/redirect-reflect?to=/echo/next',
                    '/redirect-reflect?to=/echo/next&decoded=sig',
                    '/redirect-reflect?to=/echo/next&header=Authorization',
                    '/redirect-reflect?to=/echo/next&header=X-Api-Key',
                    '/redirect-reflect?to=/echo/next&header=X-Other']) AS p;
-- batch, web_fetch and a model's tool call alike
SELECT ord, status, qc_test.scrub(error) AS error
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/redirect-reflect?to=/echo/next'))));
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect-reflect?to=/echo/next'))$$), E'\n', 1)
       AS web_fetch;
SELECT r->'tool_calls'->0->'ok' AS ok, split_part(r->'tool_calls'->0->>'error', E'\n', 1) AS error
  FROM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/redirect-reflect?to=/echo/next'),
                                '{web_fetch}') AS r;
RESET ROLE;
-- a role without USAGE sends no mapping, so its redirect carries none
REVOKE USAGE ON FOREIGN SERVER hop_reflect FROM qc_hop;
SET ROLE qc_hop;
SELECT qc_test.scrub(r->>'url') AS url
  FROM queryclaw.api_call(qc_test.url('/redirect-reflect?to=/echo/next&v=plain')) AS r;
RESET ROLE;
SELECT qc_test.audit_flush();
SELECT k AS key, (SELECT count(*) FROM queryclaw.audit_log a WHERE a::text LIKE '%' || k || '%') AS rows
  FROM unnest(ARRAY['hophdrkey', 'hopapikey', 'hopquerykey', 'hopsigval']) AS k;

DROP SERVER hop_reflect CASCADE;
DROP FUNCTION qc_test.hop_sent(text), qc_test.hop_server(text, text);
DROP OWNED BY qc_hop;
DROP ROLE qc_hop;
