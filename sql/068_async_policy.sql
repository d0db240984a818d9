--
-- What the policy decides from a URL and method alone is decided when a
-- request is queued, as the synchronous twin decides it, with its errors:
-- the scheme, queryclaw.denied_hosts and allowed_hosts (names, wildcards,
-- IP literals, ports), and read_only.  Nothing that needs a name lookup:
-- a redirect's target is checked when the worker follows it.
--
-- qc_pol_alice's requests stay queued (queryclaw.enabled is off for her);
-- qc_pol_bob's run, with queryclaw.denied_hosts set for him.
--
CREATE ROLE qc_pol_alice;
CREATE ROLE qc_pol_bob;
GRANT USAGE ON SCHEMA qc_test TO qc_pol_alice, qc_pol_bob;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.wait(bigint[], interval)
    TO qc_pol_alice, qc_pol_bob;
ALTER ROLE qc_pol_alice SET queryclaw.enabled = off;
ALTER ROLE qc_pol_bob SET queryclaw.denied_hosts = 'denied.example';
TRUNCATE queryclaw.requests CASCADE;

-- The synchronous call's error and the enqueue's, side by side, for url
-- and method: each is refused the same way.
CREATE FUNCTION qc_test.both(url text, method text DEFAULT 'GET') RETURNS TABLE (call text, error text)
LANGUAGE sql AS $$
SELECT 'api_call', qc_test.try(format('SELECT queryclaw.api_call(%L, %L)', url, method))
UNION ALL
SELECT 'api_call_async', qc_test.try(format('SELECT queryclaw.api_call_async(%L, %L)', url, method))
$$;

SET ROLE qc_pol_alice;
-- the scheme: only http and https
SELECT * FROM qc_test.both('ftp://example.com/file');
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async('file:///etc/passwd')$$) AS web_fetch_async_file;
RESET ROLE;

-- denied_hosts: a name, a wildcard, an IPv4 and an IPv6 literal, one port
-- only; the host as browsers read it (case, a final dot, other IPv4 forms)
SET queryclaw.denied_hosts = 'denied.example, *.bad.example, 10.9.9.9, [2001:db8::9], ports.example:8443';
SET ROLE qc_pol_alice;
SELECT * FROM qc_test.both('http://denied.example/');
SELECT * FROM qc_test.both('https://api.bad.example/v1');
SELECT * FROM qc_test.both('http://10.9.9.9/');
SELECT * FROM qc_test.both('http://[2001:db8::9]:8080/');
SELECT * FROM qc_test.both('https://ports.example:8443/');
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async('http://DENIED.Example./')$$) AS upper_case_final_dot;
SELECT qc_test.try($$SELECT queryclaw.web_fetch_async('http://0x0a.9.2313/')$$) AS hexadecimal_ipv4;
-- what the entries do not match is queued: another port, the domain itself
SELECT queryclaw.api_call_async('https://ports.example/') > 0 AS other_port_queued;
SELECT queryclaw.api_call_async('https://bad.example/') > 0 AS domain_itself_queued;
RESET ROLE;
RESET queryclaw.denied_hosts;

-- allowed_hosts: only these
SET queryclaw.allowed_hosts = 'allowed.example, 127.0.0.1';
SET ROLE qc_pol_alice;
SELECT * FROM qc_test.both('https://elsewhere.example/');
SELECT * FROM qc_test.both('http://127.0.0.2/');
SELECT queryclaw.web_fetch_async('https://allowed.example/') > 0 AS allowed_queued;
SELECT queryclaw.web_fetch_async(qc_test.url('/hello')) > 0 AS fixture_queued;
RESET ROLE;
RESET queryclaw.allowed_hosts;

-- read_only: GET and HEAD only
SET queryclaw.read_only = on;
SET ROLE qc_pol_alice;
SELECT * FROM qc_test.both('https://example.com/items', 'POST');
SELECT qc_test.try($$SELECT queryclaw.api_call_async('https://example.com/items', 'delete')$$) AS delete;
SELECT queryclaw.api_call_async('https://example.com/items', 'HEAD') > 0 AS head_queued;
SELECT queryclaw.web_fetch_async('https://example.com/items') > 0 AS get_queued;
RESET ROLE;
RESET queryclaw.read_only;

-- A pause is not a refusal: with queryclaw.enabled off the request is
-- queued, to wait (api_call refuses at once).
SET queryclaw.enabled = off;
SET ROLE qc_pol_alice;
SELECT * FROM qc_test.both('https://example.com/paused');
RESET ROLE;
RESET queryclaw.enabled;

-- What was queued: only what no refusal stopped.
SELECT func, request->>'method' AS method, qc_test.scrub(request->>'url') AS url, state
  FROM queryclaw.requests ORDER BY id;
-- Each refusal at enqueue has its audit row, as the synchronous call's:
-- refused, under the async function's name, with its reason.
SELECT qc_test.audit_flush();
SELECT func, method, url, outcome, reason, query IS NOT NULL AS has_query
  FROM queryclaw.audit_log
 WHERE role = 'qc_pol_alice' AND func IN ('api_call_async', 'web_fetch_async')
 ORDER BY id;
TRUNCATE queryclaw.requests CASCADE;

-- A redirect's target cannot be known when the request is queued: bob's
-- request to the fixture is queued, and refused by the worker at the
-- redirect to a denied host (bob's stored denied_hosts).
SET queryclaw.denied_hosts = 'denied.example';
SET ROLE qc_pol_bob;
SELECT qc_test.try($$SELECT queryclaw.api_call_async('http://denied.example/')$$) AS direct;
SELECT queryclaw.api_call_async(qc_test.url('/redirect?to=http://denied.example/')) AS redirect_id \gset
SELECT state, attempts, result, qc_test.scrub(error) AS error, sqlstate
  FROM queryclaw.wait(ARRAY[:redirect_id]::bigint[], NULL);
RESET ROLE;
RESET queryclaw.denied_hosts;

-- clean up
DROP FUNCTION qc_test.both(text, text);
TRUNCATE queryclaw.requests CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_pol_alice, qc_pol_bob;
REVOKE USAGE ON SCHEMA qc_test FROM qc_pol_alice, qc_pol_bob;
DELETE FROM queryclaw.audit_log WHERE role IN ('qc_pol_alice', 'qc_pol_bob');
DROP ROLE qc_pol_alice, qc_pol_bob;
