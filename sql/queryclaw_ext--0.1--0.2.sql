/* queryclaw_ext 0.1 -> 0.2: every change to SQL objects since release 0.1 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.2'" to load this file. \quit

-- check_url's name lookups are audited too, with their own outcome.
ALTER TABLE queryclaw.audit_log DROP CONSTRAINT audit_log_outcome_check;
ALTER TABLE queryclaw.audit_log ADD CONSTRAINT audit_log_outcome_check
	CHECK (outcome IN ('ok', 'http_error', 'refused', 'timeout', 'error',
					   'cancelled', 'checked'));
COMMENT ON TABLE queryclaw.audit_log IS
'One row per queryclaw call attempt (ok, http_error, refused, timeout, error, cancelled; checked for check_url''s lookups); secrets are redacted before they are stored.';

-- The audit worker's statements run as queryclaw_writer, not as the
-- superuser it connects as: a role that may only read, insert and delete
-- audit rows (the retention), through policies of its own, since
-- row-level security applies to every role but the table's owner.  Rows
-- get their id from the identity column without any privilege on its
-- sequence.  Like queryclaw_admin it belongs to the cluster: created only
-- if missing, left by DROP EXTENSION.  A role of that name that was not
-- made for this is refused: one that can log in or has an attribute,
-- members (they would read what the workers read: request_secrets),
-- roles of its own, objects, or privileges on anything of this database
-- or of the cluster.  (Its privileges on this extension's tables in other
-- databases are the grants below, made there.)
DO $$
DECLARE
	writer oid := (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = 'queryclaw_writer');
	why text;
BEGIN
	IF writer IS NULL THEN
		CREATE ROLE queryclaw_writer NOLOGIN;
		RETURN;
	END IF;
	SELECT CASE
		WHEN r.rolcanlogin THEN 'it can log in'
		WHEN r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls
			THEN 'it has SUPERUSER, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_auth_members m
					  WHERE m.roleid OPERATOR(pg_catalog.=) writer)
			THEN 'it has members'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_auth_members m
					  WHERE m.member OPERATOR(pg_catalog.=) writer)
			THEN 'it is a member of other roles'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_shdepend d
					  WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
						AND d.refobjid OPERATOR(pg_catalog.=) writer
						AND (d.deptype OPERATOR(pg_catalog.=) 'o'
							 OR d.dbid OPERATOR(pg_catalog.=) 0
							 OR d.dbid OPERATOR(pg_catalog.=)
								(SELECT oid FROM pg_catalog.pg_database
								  WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())))
			THEN 'it owns objects or holds privileges'
		END INTO why
	  FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) writer;
	IF why IS NOT NULL THEN
		RAISE EXCEPTION 'role "queryclaw_writer" exists and was not made for queryclaw_ext'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('The audit and async workers run their statements as this role, which then gets read access to the queue''s secrets, but %s.', why),
				  HINT = 'Drop the role (or take from it what the detail names), and update again.';
	END IF;
END
$$;
GRANT SELECT, INSERT, DELETE ON queryclaw.audit_log TO queryclaw_writer;
CREATE POLICY audit_log_writer_select ON queryclaw.audit_log
	FOR SELECT TO queryclaw_writer USING (true);
CREATE POLICY audit_log_writer_insert ON queryclaw.audit_log
	FOR INSERT TO queryclaw_writer WITH CHECK (true);
CREATE POLICY audit_log_writer_delete ON queryclaw.audit_log
	FOR DELETE TO queryclaw_writer USING (true);

--
-- Audit rows are matched to roles by OID, not by name: a role renamed
-- keeps its rows, and a role created later under a dropped or renamed
-- role's name does not get them.  role keeps the name the role had when it
-- called; role_id is the role (regrole, so that a dump restored into
-- another cluster maps it by name).  Rows of 0.1 get the OID of the role
-- that has their name now; rows whose role is gone have none, and only
-- queryclaw_admin sees them.  The current role's OID is found by its exact
-- name (name equality), never by reading the name as an identifier.
--
ALTER TABLE queryclaw.audit_log ADD COLUMN role_id regrole;
UPDATE queryclaw.audit_log a SET role_id = r.oid
  FROM pg_catalog.pg_roles r
 WHERE r.rolname OPERATOR(pg_catalog.=) a.role;
DROP INDEX queryclaw.audit_log_role_at_idx;
CREATE INDEX audit_log_role_id_at_idx ON queryclaw.audit_log (role_id, at);
ALTER POLICY audit_log_own_rows ON queryclaw.audit_log
	USING (role_id OPERATOR(pg_catalog.=)
		   (SELECT r.oid FROM pg_catalog.pg_roles r
			 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER));
CREATE OR REPLACE VIEW queryclaw.my_audit WITH (security_barrier) AS
	SELECT id, at, role, pid, func, method, url, final_url, status, outcome,
		   reason, bytes, chars, truncated, elapsed_ms, query, detail
	  FROM queryclaw.audit_log
	 WHERE role_id OPERATOR(pg_catalog.=)
		   (SELECT r.oid FROM pg_catalog.pg_roles r
			 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);
CREATE OR REPLACE VIEW queryclaw.stats WITH (security_barrier) AS
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
	   AND (role_id OPERATOR(pg_catalog.=)
			(SELECT r.oid FROM pg_catalog.pg_roles r
			  WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
			OR pg_catalog.pg_has_role('queryclaw_admin', 'USAGE'))
	 GROUP BY 1, 2;

--
-- The database as a read-only tool of the LLM loop (sql_query, list_tables,
-- describe_table): offered only to roles with EXECUTE on sql_query(text),
-- which runs the same code from SQL.  VOLATILE, so that a statement it runs
-- cannot call it in turn.
--
CREATE FUNCTION queryclaw.sql_query(query text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'sql_query'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.sql_query(text) IS
'Run one read-only SELECT as the calling role (only immutable and stable functions, in a subtransaction always rolled back, under queryclaw.sql_timeout); returns {rows, row_count, truncated, note}, capped at queryclaw.sql_max_rows rows and queryclaw.max_chars characters.  EXECUTE on it also offers the sql_query, list_tables and describe_table tools to llm_chat_tools.';
REVOKE ALL ON FUNCTION queryclaw.sql_query(text) FROM PUBLIC;

--
-- Embeddings from an OpenAI-compatible /embeddings endpoint.
--
CREATE FUNCTION queryclaw.llm_embed(input text, model text DEFAULT NULL)
RETURNS real[]
AS 'MODULE_PATHNAME', 'llm_embed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_embed(text, text) IS
'The embedding of a text from the endpoint at queryclaw.embed_url (default queryclaw.llm_url), as real[]; cast it to vector when pgvector is installed.';
REVOKE ALL ON FUNCTION queryclaw.llm_embed(text, text) FROM PUBLIC;

CREATE FUNCTION queryclaw.llm_embed(inputs text[], model text DEFAULT NULL)
RETURNS TABLE (ord integer, embedding real[])
AS 'MODULE_PATHNAME', 'llm_embed_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION queryclaw.llm_embed(text[], text) IS
'The embeddings of many texts, sent in groups of queryclaw.embed_batch_size; one row per input in order (a NULL input gives a NULL embedding).';
REVOKE ALL ON FUNCTION queryclaw.llm_embed(text[], text) FROM PUBLIC;

--
-- Token budgets: what the calling role used and has left.  budget_status()
-- shows only the caller's own counts, so every role may run it, as every
-- role may read my_audit.
--
CREATE FUNCTION queryclaw.budget_status(OUT role text,
										OUT calls_per_hour integer, OUT calls_used bigint,
										OUT calls_left bigint,
										OUT tokens_per_day integer, OUT tokens_used bigint,
										OUT tokens_left bigint)
AS 'MODULE_PATHNAME', 'budget_status'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION queryclaw.budget_status() IS
'The calling role''s queryclaw.max_calls_per_hour and queryclaw.max_tokens_per_day, and the calls and tokens it used and has left (NULL: no limit, or not counted).';
REVOKE ALL ON FUNCTION queryclaw.budget_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queryclaw.budget_status() TO PUBLIC;

CREATE VIEW queryclaw.my_budget AS SELECT * FROM queryclaw.budget_status();
GRANT SELECT ON queryclaw.my_budget TO PUBLIC;
COMMENT ON VIEW queryclaw.my_budget IS
'The calling role''s calls in the last hour and tokens in the last 24 hours, with its limits and what is left.';

--
-- Asynchronous requests (needs shared_preload_libraries): the durable
-- queue that web_fetch_async, api_call_async and llm_chat_tools_async
-- write into, in the caller's transaction, and the async workers run
-- after commit.  Only the extension's C code writes it: the enqueue
-- functions as the table's owner, after their own checks; the workers
-- as queryclaw_writer.  A role reads its own rows (row-level security, as
-- the audit log); queryclaw_admin reads all.
--
-- callback holds the callback's signature as text (regprocedure's output,
-- schema-qualified), not a regprocedure: pg_upgrade refuses a cluster
-- with a regprocedure column in a user table.  The workers look it up
-- again when they call it.
--
-- func and state carry no CHECK constraint: only the extension's own code
-- writes them (the table is writable by its owner and queryclaw_writer
-- alone), and a table's CHECK is prepared again at every statement, where
-- each enqueue is a statement of its own (it took a quarter of the time).
-- Their values are in the columns' comments.
CREATE TABLE queryclaw.requests (
	id				bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	role			regrole NOT NULL,
	func			text NOT NULL,
	state			text NOT NULL DEFAULT 'queued',
	attempts		integer NOT NULL DEFAULT 0,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	next_attempt_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	waiting			text,
	finished_at		timestamptz,
	request			jsonb NOT NULL,
	callback		text,
	context			jsonb,
	idempotency_key text,
	result			jsonb,
	error			text,
	sqlstate		text
);
COMMENT ON TABLE queryclaw.requests IS
'The asynchronous requests: one row per web_fetch_async, api_call_async or llm_chat_tools_async call, from queued to done, failed or cancelled; request holds the arguments with secrets redacted.  Each role sees its own rows; queryclaw_admin sees all.';

COMMENT ON COLUMN queryclaw.requests.func IS
'The function that queued the request: web_fetch_async, api_call_async or llm_chat_tools_async.';
COMMENT ON COLUMN queryclaw.requests.state IS
'queued, running (on the wire), retrying, done, failed or cancelled.';

COMMENT ON COLUMN queryclaw.requests.waiting IS
'Why a queued or retrying request waits, in words a DBA acts on (a pause, a host rate limit, a spent budget, a retry after a status); NULL when it does not.';

-- The arguments as given, secrets included, when the redaction of
-- request changed something; nobody but the owner and the workers read
-- it, and the row is deleted as soon as the request is final.
CREATE TABLE queryclaw.request_secrets (
	id				bigint PRIMARY KEY REFERENCES queryclaw.requests ON DELETE CASCADE,
	request			jsonb NOT NULL
);
COMMENT ON TABLE queryclaw.request_secrets IS
'The arguments of unfinished asynchronous requests whose secrets queryclaw.requests shows redacted; read only by the async workers, deleted when the request is final.';

-- a role's waiting requests, oldest due first: the workers claim
-- round-robin between roles, one short scan per role with due requests
-- whatever another role's backlog, and find when the next one is due
-- role by role
CREATE INDEX requests_role_due_idx ON queryclaw.requests (role, next_attempt_at, id)
	WHERE state IN ('queued', 'retrying');
-- a role's unfinished requests, which max_queued_per_role counts
CREATE INDEX requests_role_open_idx ON queryclaw.requests (role)
	WHERE state IN ('queued', 'running', 'retrying');
CREATE INDEX requests_finished_idx ON queryclaw.requests (finished_at)
	WHERE finished_at IS NOT NULL;
-- cancelled requests whose callback the workers have still to call
-- (finished_at is set once it ran)
CREATE INDEX requests_cancelled_idx ON queryclaw.requests (id)
	WHERE state = 'cancelled' AND finished_at IS NULL;

REVOKE ALL ON queryclaw.requests FROM PUBLIC;
REVOKE ALL ON queryclaw.request_secrets FROM PUBLIC;
GRANT SELECT ON queryclaw.requests TO PUBLIC;
ALTER TABLE queryclaw.requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE queryclaw.request_secrets ENABLE ROW LEVEL SECURITY;
CREATE POLICY requests_own_rows ON queryclaw.requests
	FOR SELECT USING (role OPERATOR(pg_catalog.=)
					  (SELECT r.oid FROM pg_catalog.pg_roles r
						WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER));
CREATE POLICY requests_admin ON queryclaw.requests
	FOR SELECT TO queryclaw_admin USING (true);
GRANT SELECT, UPDATE, DELETE ON queryclaw.requests TO queryclaw_writer;
GRANT SELECT, DELETE ON queryclaw.request_secrets TO queryclaw_writer;
CREATE POLICY requests_writer_select ON queryclaw.requests
	FOR SELECT TO queryclaw_writer USING (true);
CREATE POLICY requests_writer_update ON queryclaw.requests
	FOR UPDATE TO queryclaw_writer USING (true) WITH CHECK (true);
CREATE POLICY requests_writer_delete ON queryclaw.requests
	FOR DELETE TO queryclaw_writer USING (true);
CREATE POLICY request_secrets_writer_select ON queryclaw.request_secrets
	FOR SELECT TO queryclaw_writer USING (true);
CREATE POLICY request_secrets_writer_delete ON queryclaw.request_secrets
	FOR DELETE TO queryclaw_writer USING (true);

-- pg_dump keeps the queue: requests not yet sent are sent after a restore.
SELECT pg_catalog.pg_extension_config_dump('queryclaw.requests', '');
SELECT pg_catalog.pg_extension_config_dump('queryclaw.requests_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queryclaw.request_secrets', '');

-- The DBA's first look at the queue, per role and state: how many, the
-- age of the oldest still waiting, how many reached this state in the
-- last minute (queued: were queued; final states: ended; NULL for running
-- and retrying, whose start is not kept), and for unfinished ones an
-- estimate of the time left: the role's open requests at the pace its
-- requests ended over the last minute (their count over the time since the
-- first of them ended, so that a run that began 5 s ago is not measured
-- over 60).  NULL when fewer than two ended in the last minute, or when
-- none has ended for three times the usual gap between two (a paused
-- role, a stalled API): a guess would be off by any factor.  Each role
-- sees its own (the view runs with the caller's privileges, so the
-- table's policies apply); queryclaw_admin sees all.
CREATE VIEW queryclaw.queue_status WITH (security_invoker = true) AS
	WITH per_state AS (
		SELECT r.role, r.state, count(*) AS requests,
			   pg_catalog.now() - min(r.created_at)
				   FILTER (WHERE r.state IN ('queued', 'retrying')) AS oldest_waiting,
			   CASE WHEN r.state = 'queued'
					THEN count(*) FILTER (WHERE r.created_at > pg_catalog.now() - interval '1 minute')
					WHEN r.state IN ('done', 'failed', 'cancelled')
					THEN count(*) FILTER (WHERE r.finished_at > pg_catalog.now() - interval '1 minute')
			   END AS last_minute
		  FROM queryclaw.requests r
		 GROUP BY r.role, r.state),
	pace AS (
		SELECT r.role, count(*) AS ended,
			   pg_catalog.now() - min(r.finished_at) AS span,
			   pg_catalog.now() - max(r.finished_at) AS since_last
		  FROM queryclaw.requests r
		 WHERE r.finished_at > pg_catalog.now() - interval '1 minute'
		 GROUP BY r.role)
	SELECT s.role, s.state, s.requests, s.oldest_waiting, s.last_minute,
		   CASE WHEN s.state IN ('queued', 'running', 'retrying') AND p.ended >= 2
				 AND p.since_last <= greatest(3 * p.span / p.ended, interval '1 second')
				THEN sum(s.requests) FILTER (WHERE s.state IN ('queued', 'running', 'retrying'))
						 OVER (PARTITION BY s.role) * p.span / p.ended
		   END AS eta
	  FROM per_state s LEFT JOIN pace p ON p.role = s.role;
GRANT SELECT ON queryclaw.queue_status TO PUBLIC;
COMMENT ON VIEW queryclaw.queue_status IS
'Asynchronous requests per role and state: how many, the oldest waiting one''s age, how many reached the state in the last minute, and for unfinished ones the time left at the pace requests ended in the last minute (NULL when that pace says nothing).';

CREATE FUNCTION queryclaw.web_fetch_async(url text, format text DEFAULT 'text',
										  max_chars integer DEFAULT NULL,
										  callback regprocedure DEFAULT NULL,
										  context jsonb DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'web_fetch_async'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb) IS
'Queue a web_fetch, sent by an async worker after this transaction commits; returns the request''s id in queryclaw.requests.  The callback, if any, is called with (id, result, error, context) once the request is final.';
REVOKE ALL ON FUNCTION queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb) FROM PUBLIC;

CREATE FUNCTION queryclaw.api_call_async(url text, method text DEFAULT 'GET',
										 headers jsonb DEFAULT NULL,
										 body text DEFAULT NULL,
										 max_chars integer DEFAULT NULL,
										 callback regprocedure DEFAULT NULL,
										 context jsonb DEFAULT NULL,
										 idempotency_key text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'api_call_async'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) IS
'Queue an api_call, sent by an async worker after this transaction commits, retried as queryclaw.retry_max says (a POST or PATCH only with an idempotency_key, sent as Idempotency-Key, or when nothing was sent); returns the request''s id in queryclaw.requests.';
REVOKE ALL ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) FROM PUBLIC;

CREATE FUNCTION queryclaw.llm_chat_tools_async(prompt text,
											   tools text[] DEFAULT '{web_fetch,api_call}',
											   system text DEFAULT NULL,
											   model text DEFAULT NULL,
											   max_rounds integer DEFAULT NULL,
											   output_schema jsonb DEFAULT NULL,
											   callback regprocedure DEFAULT NULL,
											   context jsonb DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'llm_chat_tools_async'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb) IS
'Queue an llm_chat_tools loop, run by an async worker after this transaction commits; returns the request''s id in queryclaw.requests.';
REVOKE ALL ON FUNCTION queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb) FROM PUBLIC;

CREATE FUNCTION queryclaw.wait(ids bigint[], timeout interval DEFAULT '30 seconds')
RETURNS SETOF queryclaw.requests
AS 'MODULE_PATHNAME', 'queue_wait'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.wait(bigint[], interval) IS
'Wait until the caller''s requests among ids are all done, failed or cancelled, or the timeout passes; returns their rows either way.  Raises 55000 for requests queued in the caller''s own open transaction, and in REPEATABLE READ or SERIALIZABLE transactions.';
REVOKE ALL ON FUNCTION queryclaw.wait(bigint[], interval) FROM PUBLIC;

CREATE FUNCTION queryclaw.cancel_requests(ids bigint[])
RETURNS integer
AS 'MODULE_PATHNAME', 'cancel_requests'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.cancel_requests(bigint[]) IS
'Cancel the caller''s requests among ids that are queued, retrying or running; returns how many were cancelled.  A running request''s response, if one arrives, is discarded.';
REVOKE ALL ON FUNCTION queryclaw.cancel_requests(bigint[]) FROM PUBLIC;

--
-- queue surface: waiting until every request is final, running failed and
-- cancelled requests again, each host's share of the queue, and the
-- statement that queued each request.
--

-- wait() with a NULL timeout waits until every request is final (as long
-- as statement_timeout lets it), and NULL ids name no request: it is
-- called on NULL input to see them.
ALTER FUNCTION queryclaw.wait(bigint[], interval) CALLED ON NULL INPUT;
COMMENT ON FUNCTION queryclaw.wait(bigint[], interval) IS
'Wait until the caller''s requests among ids are all done, failed or cancelled, or the timeout passes (a NULL timeout: until they are, bounded by statement_timeout); returns their rows either way.  Raises 55000 for requests queued in the caller''s own open transaction, and in REPEATABLE READ or SERIALIZABLE transactions.';

-- Whether the request's arguments held secrets, kept apart in
-- request_secrets until it is final: such a request cannot be sent again
-- as it was queued once they are deleted (retry_requests leaves it).
ALTER TABLE queryclaw.requests ADD COLUMN redacted boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN queryclaw.requests.redacted IS
'The arguments held secrets: request shows them redacted, and as given they were kept apart only until the request was final.';

CREATE FUNCTION queryclaw.retry_requests(ids bigint[])
RETURNS integer
AS 'MODULE_PATHNAME', 'retry_requests'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.retry_requests(bigint[]) IS
'Queue the caller''s failed or cancelled requests among ids again, under the same ids (attempts from 0, result, error and finish time cleared); returns how many.  A request whose arguments held secrets is left as it is, with a WARNING: its secrets were deleted when it ended.';
REVOKE ALL ON FUNCTION queryclaw.retry_requests(bigint[]) FROM PUBLIC;

-- The limits the queue applies to a host, as this session's settings say
-- (neither setting is hidden from any role, so every role may ask).
CREATE FUNCTION queryclaw.host_limits(host text, OUT rate_limit text, OUT max_concurrency integer)
RETURNS record
AS 'MODULE_PATHNAME', 'host_limits'
LANGUAGE C STRICT STABLE PARALLEL SAFE;
COMMENT ON FUNCTION queryclaw.host_limits(text) IS
'The limits asynchronous requests to host (a name or address, with an optional :port) wait for: the queryclaw.host_rate_limit entry that applies to it, as N/s or N/min (NULL when none does), and queryclaw.max_host_concurrency.';
REVOKE ALL ON FUNCTION queryclaw.host_limits(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queryclaw.host_limits(text) TO PUBLIC;

-- Where a DBA sees which API holds the queue up: per host of the
-- requests' URLs (host[:port] of the redacted URL, lower case; model
-- requests, which name no URL, are not in it), what is in flight and
-- waiting, what ended in the last minute, the median time of the last
-- minute's responses (api_call_async's elapsed_ms: NULL for a host only
-- web_fetch_async requests went to, whose results do not say), and the
-- host's limits.  Each role sees its own requests' hosts (the view runs
-- with the caller's privileges); queryclaw_admin sees all.
CREATE VIEW queryclaw.queue_hosts WITH (security_invoker = true) AS
	SELECT h.host, h.in_flight, h.queued, h.done_last_minute, h.failed_last_minute,
		   h.median_ms, l.rate_limit, l.max_concurrency
	  FROM (SELECT pg_catalog.lower(pg_catalog.substring(r.request ->> 'url', '^[^:/?#]+://([^/?#]*)'))
				   AS host,
				   count(*) FILTER (WHERE r.state = 'running') AS in_flight,
				   count(*) FILTER (WHERE r.state IN ('queued', 'retrying')) AS queued,
				   count(*) FILTER (WHERE r.state = 'done') AS done_last_minute,
				   count(*) FILTER (WHERE r.state = 'failed') AS failed_last_minute,
				   percentile_cont(0.5) WITHIN GROUP (ORDER BY (r.result ->> 'elapsed_ms')::float8)
					   FILTER (WHERE r.state = 'done') AS median_ms
			  FROM queryclaw.requests r
			 WHERE r.request ? 'url'
			   AND (r.state IN ('queued', 'running', 'retrying')
					OR (r.state IN ('done', 'failed')
						AND r.finished_at > pg_catalog.now() - interval '1 minute'))
			 GROUP BY 1) h
	 CROSS JOIN LATERAL queryclaw.host_limits(h.host) l;
GRANT SELECT ON queryclaw.queue_hosts TO PUBLIC;
COMMENT ON VIEW queryclaw.queue_hosts IS
'Asynchronous requests per host of their URLs: in flight, waiting, done and failed in the last minute, the median response time of the last minute (ms; NULL where no result says), and the host''s rate limit and concurrency cap.  Each role sees its own requests; queryclaw_admin sees all.';

-- The statement that queued the request, redacted as an audit row's query
-- is (NULL with queryclaw.audit_query off): the audit rows of its attempts
-- carry it, so that the trigger or job that caused a call is known after
-- the request is deleted.
ALTER TABLE queryclaw.requests ADD COLUMN query text;
COMMENT ON COLUMN queryclaw.requests.query IS
'The statement that queued the request, secrets redacted, as the audit rows of its attempts show it.';

-- Endpoints: APIs as SQL objects.  A foreign server of this wrapper
-- carries an API's base URL and limits, a user mapping the headers and
-- query parameters (the keys) sent to it, USAGE on the server who may
-- send them.  A validator and no handler, as dblink_fdw: no foreign
-- tables are read through it.  The wrapper is a member of the extension,
-- so pg_dump writes it with CREATE EXTENSION; servers and mappings are
-- the user's and pg_dump writes them as such.
CREATE FUNCTION queryclaw.fdw_validator(options text[], catalog oid)
RETURNS void
AS 'MODULE_PATHNAME', 'queryclaw_fdw_validator'
LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION queryclaw.fdw_validator(text[], oid) FROM PUBLIC;
COMMENT ON FUNCTION queryclaw.fdw_validator(text[], oid) IS
'Checks the options of the queryclaw foreign-data wrapper''s servers (url, rate_limit, max_concurrency, timeout, retry_max) and user mappings (headers, query).';

CREATE FOREIGN DATA WRAPPER queryclaw VALIDATOR queryclaw.fdw_validator;
COMMENT ON FOREIGN DATA WRAPPER queryclaw IS
'APIs as SQL objects: a server per API (its base url and limits), a user mapping per role for its keys, GRANT USAGE ON FOREIGN SERVER for who may call it.';
