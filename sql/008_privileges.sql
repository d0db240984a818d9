--
-- Privileges: what an ordinary role can and cannot do.
--
CREATE ROLE qc_alice LOGIN;
CREATE ROLE qc_bob LOGIN;

GRANT USAGE ON SCHEMA qc_test TO qc_alice, qc_bob;

-- EXECUTE is revoked from PUBLIC: nothing works until a DBA grants it
SET ROLE qc_alice;
SELECT queryclaw.web_fetch(qc_test.url('/hello'));
SELECT queryclaw.check_url('http://example.com/');
RESET ROLE;

GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text),
                          queryclaw.api_call(text, text, jsonb, text, integer),
                          queryclaw.check_url(text)
   TO qc_alice, qc_bob;

TRUNCATE queryclaw.audit_log;
SET ROLE qc_alice;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS alice_fetches;
RESET ROLE;
SET ROLE qc_bob;
SELECT (queryclaw.api_call(qc_test.url('/json')))->'status' AS bob_calls;

-- a role sees its own rows, and only through my_audit
SELECT role, func, outcome FROM queryclaw.my_audit;
SELECT count(*) FROM queryclaw.audit_log;
-- a leaky function in WHERE cannot see other roles' rows (security_barrier)
CREATE FUNCTION pg_temp.peek(r text) RETURNS boolean LANGUAGE plpgsql COST 0.0001
AS $$ BEGIN RAISE NOTICE 'saw a row of %', r; RETURN true; END $$;
SELECT count(*) FROM queryclaw.my_audit WHERE pg_temp.peek(role);

-- nobody but the extension writes the log
INSERT INTO queryclaw.audit_log (role, pid, func, method, url, outcome)
VALUES ('qc_alice', 1, 'forged', 'GET', 'http://x/', 'ok');
UPDATE queryclaw.audit_log SET outcome = 'ok';
DELETE FROM queryclaw.audit_log;
UPDATE queryclaw.my_audit SET outcome = 'ok';
DELETE FROM queryclaw.my_audit;

-- the policy cannot be loosened or read by an ordinary role
SET queryclaw.enabled = on;
SET queryclaw.block_local = off;
SET queryclaw.local_allowlist = '0.0.0.0/0';
SET queryclaw.allowed_hosts = '';
SET queryclaw.timeout = '1h';
SET queryclaw.audit = off;
ALTER ROLE qc_bob SET queryclaw.block_local = off;
SHOW queryclaw.local_allowlist;
SHOW queryclaw.denied_hosts;
SHOW queryclaw.proxy;
SELECT count(*) AS visible_list_settings FROM pg_settings
 WHERE name IN ('queryclaw.local_allowlist', 'queryclaw.allowed_hosts',
                'queryclaw.denied_hosts', 'queryclaw.proxy');
SHOW queryclaw.max_chars;
RESET ROLE;

-- a superuser sees everything
SELECT role, func, outcome FROM queryclaw.audit_log ORDER BY id;

-- a superuser can set policy per role
ALTER ROLE qc_bob SET queryclaw.read_only = on;
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'qc_bob'::regrole;
ALTER ROLE qc_bob RESET queryclaw.read_only;

DROP OWNED BY qc_alice, qc_bob;
DROP ROLE qc_alice, qc_bob;
