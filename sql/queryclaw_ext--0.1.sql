/* queryclaw_ext 0.1: policy-checked, audited HTTP from SQL */

\echo Use "CREATE EXTENSION queryclaw_ext" to load this file. \quit

-- The schema is created by CREATE EXTENSION (the control file names it).
-- Roles need USAGE to reach the functions and the my_audit view; each
-- object below still has its own, narrower privileges.
GRANT USAGE ON SCHEMA queryclaw TO PUBLIC;

-- Members of queryclaw_admin read every role's audit rows and the audit
-- worker's status.  Roles belong to the cluster, not to one database, so
-- the role is created only if it does not exist yet, and DROP EXTENSION
-- leaves it.  It cannot log in; a DBA grants it: GRANT queryclaw_admin TO alice.
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'queryclaw_admin') THEN
		CREATE ROLE queryclaw_admin NOLOGIN;
	END IF;
END
$$;

--
-- The audit trail: one row for every attempted call.
--
CREATE TABLE queryclaw.audit_log (
	id			bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at			timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	role		text NOT NULL,
	pid			integer NOT NULL,
	func		text NOT NULL,
	method		text NOT NULL,
	url			text NOT NULL,
	final_url	text,
	status		integer,
	outcome		text NOT NULL CHECK (outcome IN ('ok', 'http_error', 'refused',
												 'timeout', 'error', 'cancelled')),
	reason		text,
	bytes		bigint NOT NULL DEFAULT 0,
	chars		integer,
	truncated	boolean NOT NULL DEFAULT false,
	elapsed_ms	double precision,
	query		text,
	detail		jsonb
);
CREATE INDEX audit_log_at_idx ON queryclaw.audit_log (at);
CREATE INDEX audit_log_role_at_idx ON queryclaw.audit_log (role, at);

COMMENT ON TABLE queryclaw.audit_log IS
'One row per queryclaw call attempt (ok, http_error, refused, timeout, error, cancelled); secrets are redacted before they are stored.';

-- Only the owner (the extension's C code, the audit worker) writes rows;
-- nobody else may change or delete them, and only queryclaw_admin may read
-- them all.  Row-level security is a second fence: a role granted SELECT
-- by a DBA still sees only its own rows, and with no policy for INSERT,
-- UPDATE or DELETE a grant of those lets nothing through.
REVOKE ALL ON queryclaw.audit_log FROM PUBLIC;
GRANT SELECT ON queryclaw.audit_log TO queryclaw_admin;
ALTER TABLE queryclaw.audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_log_own_rows ON queryclaw.audit_log
	FOR SELECT USING (role = current_user);
CREATE POLICY audit_log_admin ON queryclaw.audit_log
	FOR SELECT TO queryclaw_admin USING (true);

SELECT pg_catalog.pg_extension_config_dump('queryclaw.audit_log', '');
SELECT pg_catalog.pg_extension_config_dump('queryclaw.audit_log_id_seq', '');

-- Each role's own rows.  security_barrier keeps a caller's functions in
-- WHERE clauses from seeing other roles' rows before the filter applies.
CREATE VIEW queryclaw.my_audit WITH (security_barrier) AS
	SELECT id, at, role, pid, func, method, url, final_url, status, outcome,
		   reason, bytes, chars, truncated, elapsed_ms, query, detail
	  FROM queryclaw.audit_log
	 WHERE role = current_user;
GRANT SELECT ON queryclaw.my_audit TO PUBLIC;
COMMENT ON VIEW queryclaw.my_audit IS 'The calling role''s own rows of queryclaw.audit_log.';

-- The DBA's first look: the last 24 hours by role and host.  Each role
-- sees its own calls; superusers and queryclaw_admin members see all.
-- The host is the URL's authority (userinfo is never stored).
CREATE VIEW queryclaw.stats WITH (security_barrier) AS
	SELECT role,
		   lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)')) AS host,
		   count(*) AS calls,
		   count(*) FILTER (WHERE outcome = 'ok') AS ok,
		   count(*) FILTER (WHERE outcome = 'http_error') AS http_error,
		   count(*) FILTER (WHERE outcome = 'refused') AS refused,
		   count(*) FILTER (WHERE outcome = 'timeout') AS timeout,
		   count(*) FILTER (WHERE outcome = 'error') AS error,
		   count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled,
		   sum(bytes) AS bytes,
		   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY elapsed_ms)::numeric, 1) AS p50_ms,
		   round(percentile_cont(0.95) WITHIN GROUP (ORDER BY elapsed_ms)::numeric, 1) AS p95_ms,
		   max(at) AS last_call
	  FROM queryclaw.audit_log
	 WHERE at > pg_catalog.now() - interval '24 hours'
	   AND (role = current_user OR pg_catalog.pg_has_role('queryclaw_admin', 'USAGE'))
	 GROUP BY 1, 2;
GRANT SELECT ON queryclaw.stats TO PUBLIC;
COMMENT ON VIEW queryclaw.stats IS
'Calls of the last 24 hours by role and host: outcomes, bytes, p50/p95 latency in ms.  Each role sees its own; queryclaw_admin and superusers see all.';

--
-- Functions.  None is STRICT where an argument has a NULL default; a NULL
-- url gives a NULL result without a request.
--
CREATE FUNCTION queryclaw.web_fetch(url text, format text DEFAULT 'text',
									max_chars integer DEFAULT NULL,
									extract_prompt text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'web_fetch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.web_fetch(text, text, integer, text) IS
'GET a page under the queryclaw policy and return it as text (format text, article, markdown, metadata, raw or json); a non-2xx status is an error.  With extract_prompt, the model''s answer to that instruction about the page is returned instead.';

CREATE FUNCTION queryclaw.api_call(url text, method text DEFAULT 'GET',
								   headers jsonb DEFAULT NULL,
								   body text DEFAULT NULL,
								   max_chars integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'api_call'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.api_call(text, text, jsonb, text, integer) IS
'Make an HTTP request (GET, POST, PUT, PATCH, DELETE, HEAD) under the queryclaw policy and return {status, ok, url, content_type, headers, body, truncated, elapsed_ms}.';

CREATE FUNCTION queryclaw.web_fetch_many(urls text[], format text DEFAULT 'text',
										 max_chars integer DEFAULT NULL)
RETURNS TABLE (ord integer, url text, status integer, content text,
			   error text, elapsed_ms double precision)
AS 'MODULE_PATHNAME', 'web_fetch_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION queryclaw.web_fetch_many(text[], text, integer) IS
'GET many pages concurrently (at most queryclaw.max_concurrency at once); one row per URL in input order, with an error instead of content where a URL failed.';

CREATE FUNCTION queryclaw.api_call_many(requests jsonb, max_chars integer DEFAULT NULL)
RETURNS TABLE (ord integer, url text, status integer, response jsonb,
			   error text, elapsed_ms double precision)
AS 'MODULE_PATHNAME', 'api_call_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION queryclaw.api_call_many(jsonb, integer) IS
'Make many HTTP requests concurrently from an array of {url, method, headers, body}; one row per request in input order, response as api_call returns it, or an error.';

CREATE FUNCTION queryclaw.check_url(url text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'check_url'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.check_url(text) IS
'Dry run: would the policy allow this URL?  Returns {allowed, reason, detail, hint, host, port, addresses} without connecting.';

CREATE FUNCTION queryclaw.html_to_text(html text, format text DEFAULT 'text',
									   base_url text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'html_to_text'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION queryclaw.html_to_text(text, text, text) IS
'Convert stored HTML as web_fetch does (format text, article, markdown or metadata), resolving links against base_url; makes no request.';

--
-- The LLM tool loop and web search.  The tools a model may call run as the
-- calling role, which needs EXECUTE on each tool's own function too.
--
CREATE FUNCTION queryclaw.llm_chat_tools(prompt text,
										 tools text[] DEFAULT '{web_fetch,api_call}',
										 system text DEFAULT NULL,
										 model text DEFAULT NULL,
										 max_rounds integer DEFAULT NULL,
										 output_schema jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'llm_chat_tools'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb) IS
'Ask the model at queryclaw.llm_url, running the tool calls it makes (web_fetch, api_call, web_search, check_url) under the queryclaw policy; returns {answer, finish_reason, rounds, model, tool_calls, usage}.';

CREATE FUNCTION queryclaw.llm_chat_tools(messages jsonb,
										 tools text[] DEFAULT '{web_fetch,api_call}',
										 model text DEFAULT NULL,
										 max_rounds integer DEFAULT NULL,
										 output_schema jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'llm_chat_tools_messages'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_chat_tools(jsonb, text[], text, integer, jsonb) IS
'llm_chat_tools for a conversation given as chat-completions messages; the result also holds the messages, to continue it.';

CREATE FUNCTION queryclaw.web_search(query text, num_results integer DEFAULT 5)
RETURNS TABLE (rank integer, title text, url text, snippet text)
AS 'MODULE_PATHNAME', 'web_search'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 5;
COMMENT ON FUNCTION queryclaw.web_search(text, integer) IS
'Search through the SearXNG-compatible API at queryclaw.search_url; one row per result.';

--
-- The durable audit's state (needs shared_preload_libraries).
--
CREATE FUNCTION queryclaw.audit_status(OUT durable boolean, OUT database text,
									   OUT worker_pid integer, OUT queued bigint,
									   OUT in_flight bigint,
									   OUT written bigint, OUT lost bigint,
									   OUT waits bigint, OUT queue_used bigint,
									   OUT queue_size bigint)
AS 'MODULE_PATHNAME', 'audit_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION queryclaw.audit_status() IS
'The durable audit: whether this database''s rows go through the audit worker, its database and pid, records queued, calls in flight (each holding room for its record), records written and lost, waits for room, queue bytes used and size.  Needs shared_preload_libraries.';
REVOKE ALL ON FUNCTION queryclaw.audit_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queryclaw.audit_status() TO queryclaw_admin;

-- Reaching the network is a privilege: a DBA grants it role by role.
REVOKE ALL ON FUNCTION queryclaw.web_fetch(text, text, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.api_call(text, text, jsonb, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.check_url(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.web_fetch_many(text[], text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.api_call_many(jsonb, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.html_to_text(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.llm_chat_tools(jsonb, text[], text, integer, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION queryclaw.web_search(text, integer) FROM PUBLIC;
