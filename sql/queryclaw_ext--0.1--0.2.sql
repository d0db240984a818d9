/* queryclaw_ext 0.1 -> 0.2: every change to SQL objects since release 0.1 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.2'" to load this file. \quit

-- check_url's name lookups are audited too, with their own outcome.
ALTER TABLE queryclaw.audit_log DROP CONSTRAINT audit_log_outcome_check;
ALTER TABLE queryclaw.audit_log ADD CONSTRAINT audit_log_outcome_check
	CHECK (outcome IN ('ok', 'http_error', 'refused', 'timeout', 'error',
					   'cancelled', 'checked'));
COMMENT ON TABLE queryclaw.audit_log IS
'One row per queryclaw call attempt (ok, http_error, refused, timeout, error, cancelled; checked for check_url''s lookups); secrets are redacted before they are stored.';
