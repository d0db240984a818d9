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
-- if missing, left by DROP EXTENSION.  A role of that name that can log
-- in was not made for this, and is refused.
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'queryclaw_writer') THEN
		CREATE ROLE queryclaw_writer NOLOGIN;
	ELSIF (SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = 'queryclaw_writer') THEN
		RAISE EXCEPTION 'role "queryclaw_writer" can log in'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'The audit worker writes audit rows as this role, which must be NOLOGIN.',
				  HINT = 'ALTER ROLE queryclaw_writer NOLOGIN, or drop it, and update again.';
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
