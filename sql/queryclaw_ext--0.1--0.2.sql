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
