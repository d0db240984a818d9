--
-- Privileges: what an ordinary role can and cannot do with calls and
-- their audit rows (the policy's settings: 008_privileges_policy, which
-- needs only a server).
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

SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SET ROLE qc_alice;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS alice_fetches;
RESET ROLE;
SET ROLE qc_bob;
SELECT (queryclaw.api_call(qc_test.url('/json')))->'status' AS bob_calls;
RESET ROLE;
SELECT qc_test.audit_flush();
SET ROLE qc_bob;

-- a role sees its own rows, and only through my_audit (and its own calls
-- in the stats view); the worker's status is not for it
SELECT role, func, outcome FROM queryclaw.my_audit;
SELECT role, qc_test.scrub(host) AS host, calls, ok FROM queryclaw.stats;
SELECT * FROM queryclaw.audit_status();
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
TRUNCATE queryclaw.audit_log;
UPDATE queryclaw.my_audit SET outcome = 'ok';
DELETE FROM queryclaw.my_audit;
RESET ROLE;

-- a superuser sees everything
SELECT role, func, outcome FROM queryclaw.audit_log ORDER BY id;

-- queryclaw_admin: created by the extension, cannot log in; its members
-- read every row, the stats of every role and the worker's status, and
-- still cannot write
SELECT rolname, rolcanlogin, rolsuper FROM pg_roles WHERE rolname = 'queryclaw_admin';
CREATE ROLE qc_auditor LOGIN;
GRANT queryclaw_admin TO qc_auditor;
GRANT USAGE ON SCHEMA qc_test TO qc_auditor;
SET ROLE qc_auditor;
SELECT role, func, outcome FROM queryclaw.audit_log ORDER BY id;
SELECT role, qc_test.scrub(host) AS host, calls, ok FROM queryclaw.stats ORDER BY role;
SELECT count(*) AS own_rows FROM queryclaw.my_audit;
SELECT durable, lost FROM queryclaw.audit_status();
INSERT INTO queryclaw.audit_log (role, pid, func, method, url, outcome)
VALUES ('qc_alice', 1, 'forged', 'GET', 'http://x/', 'ok');
UPDATE queryclaw.audit_log SET outcome = 'ok';
DELETE FROM queryclaw.audit_log;
TRUNCATE queryclaw.audit_log;
RESET ROLE;

-- row-level security is the second fence: even a DBA's grant of SELECT,
-- INSERT, UPDATE and DELETE on the table shows a role only its own rows
-- and lets it change none
SELECT relrowsecurity FROM pg_class WHERE oid = 'queryclaw.audit_log'::regclass;
SELECT polname, polcmd, polroles::regrole[] AS roles, pg_get_expr(polqual, polrelid) AS using
  FROM pg_policy WHERE polrelid = 'queryclaw.audit_log'::regclass ORDER BY polname;
GRANT SELECT, INSERT, UPDATE, DELETE ON queryclaw.audit_log TO qc_bob;
SET ROLE qc_bob;
SELECT role, func FROM queryclaw.audit_log;
INSERT INTO queryclaw.audit_log (role, pid, func, method, url, outcome)
VALUES ('qc_bob', 1, 'forged', 'GET', 'http://x/', 'ok');
UPDATE queryclaw.audit_log SET outcome = 'refused';
DELETE FROM queryclaw.audit_log;
RESET ROLE;
REVOKE ALL ON queryclaw.audit_log FROM qc_bob;
SELECT role, func, outcome FROM queryclaw.audit_log ORDER BY id;

-- who may run and read what: no function runs without a grant (but
-- audit_status for queryclaw_admin), queryclaw_user runs every one a
-- caller needs but sql_query, and none is SECURITY DEFINER (one added
-- later must pin its search_path, which the second query checks)
CREATE ROLE qc_nobody NOLOGIN;
SELECT p.oid::regprocedure AS function, has_function_privilege('qc_nobody', p.oid, 'EXECUTE') AS anyone,
       has_function_privilege('queryclaw_user', p.oid, 'EXECUTE') AS "user",
       has_function_privilege('queryclaw_admin', p.oid, 'EXECUTE') AS admin,
       p.prosecdef AS security_definer
  FROM pg_proc p WHERE p.pronamespace = 'queryclaw'::regnamespace ORDER BY p.oid::regprocedure::text;
SELECT p.oid::regprocedure AS definer_without_search_path
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'queryclaw_ext'
 WHERE p.prosecdef AND NOT coalesce(array_to_string(p.proconfig, ',') LIKE '%search_path=%', false);
SELECT c.relname, has_table_privilege('qc_nobody', c.oid, 'SELECT') AS anyone_reads,
       has_table_privilege('queryclaw_admin', c.oid, 'SELECT') AS admin_reads,
       has_table_privilege('queryclaw_admin', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') AS admin_writes
  FROM pg_class c WHERE c.relnamespace = 'queryclaw'::regnamespace AND c.relkind IN ('r', 'v')
 ORDER BY 1;

-- queryclaw_user: created by the extension, cannot log in; the one grant
-- a role needs to call what a caller calls, the model's tools included,
-- but sql_query
SELECT rolname, rolcanlogin, rolsuper, rolinherit FROM pg_roles WHERE rolname = 'queryclaw_user';
CREATE ROLE qc_carol LOGIN;
GRANT queryclaw_user TO qc_carol;
GRANT USAGE ON SCHEMA qc_test TO qc_carol;
SET ROLE qc_carol;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS carol_fetches;
SELECT (queryclaw.api_call(qc_test.url('/json')))->'status' AS carol_calls;
SELECT string_agg(coalesce(content, error), ', ') AS carol_batch
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello')]);
SELECT qc_test.scrub(queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || qc_test.url('/hello'))->>'answer')
       AS carol_asks_the_model;
SELECT queryclaw.sql_query('SELECT 1');
SELECT queryclaw.audit_status();
RESET ROLE;

DROP OWNED BY qc_alice, qc_bob, qc_auditor, qc_nobody, qc_carol;
DROP ROLE qc_alice, qc_bob, qc_auditor, qc_nobody, qc_carol;
