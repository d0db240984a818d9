--
-- Privileges: the policy is a superuser's, set for the server, a role or a
-- session, and an ordinary role can neither loosen nor read it.  Needs
-- only a server: make installcheck runs this (008_privileges has what
-- needs calls and the audit worker).
--
-- shown to the role below, whatever the server's configuration says
SET queryclaw.max_chars = 50000;
CREATE ROLE regress_qc_policy_role;
SET ROLE regress_qc_policy_role;

-- the policy cannot be loosened or read by an ordinary role
SET queryclaw.enabled = on;
SET queryclaw.block_local = off;
SET queryclaw.local_allowlist = '0.0.0.0/0';
SET queryclaw.allowed_hosts = '';
SET queryclaw.timeout = '1h';
SET queryclaw.audit = off;
SET queryclaw.max_calls_per_hour = 0;
ALTER ROLE regress_qc_policy_role SET queryclaw.block_local = off;
ALTER ROLE regress_qc_policy_role SET queryclaw.max_calls_per_hour = 0;
-- refused with 42501 (insufficient_privilege), worded differently by each
-- PostgreSQL major
\set VERBOSITY sqlstate
SHOW queryclaw.local_allowlist;
SHOW queryclaw.denied_hosts;
SHOW queryclaw.proxy;
\set VERBOSITY default
SELECT count(*) AS visible_list_settings FROM pg_settings
 WHERE name IN ('queryclaw.local_allowlist', 'queryclaw.allowed_hosts',
                'queryclaw.denied_hosts', 'queryclaw.proxy');
SHOW queryclaw.max_chars;
RESET ROLE;

-- a superuser can set policy per role
ALTER ROLE regress_qc_policy_role SET queryclaw.read_only = on;
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'regress_qc_policy_role'::regrole;
ALTER ROLE regress_qc_policy_role RESET queryclaw.read_only;

-- every setting of the policy is for superusers (or the server's
-- configuration) only; the one a user may change is not policy: what a
-- failed call does to the caller's own statement
SELECT name AS settings_a_user_can_change FROM pg_settings
 WHERE name LIKE 'queryclaw.%' AND context NOT IN ('superuser', 'sighup', 'postmaster');

DROP ROLE regress_qc_policy_role;
