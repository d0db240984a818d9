--
-- The audit worker connects as the bootstrap superuser, but runs its
-- statements as queryclaw_writer, a role that may only read, insert and
-- delete audit rows.  (Its settings, which its database cannot steer, are
-- tested with restarts by test/worker_hijack.sh.)
--
SELECT rolsuper, rolcanlogin, rolcreaterole, rolbypassrls
  FROM pg_roles WHERE rolname = 'queryclaw_writer';
SELECT count(*) AS members FROM pg_auth_members WHERE roleid = 'queryclaw_writer'::regrole;
SELECT p AS privilege, has_table_privilege('queryclaw_writer', 'queryclaw.audit_log', p) AS granted
  FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p;
-- A trigger a DBA puts on the table runs as the role the worker's
-- statements run as.
CREATE TABLE public.qc_writers (current_role_name name, session_role_name name);
GRANT INSERT ON public.qc_writers TO PUBLIC;
CREATE FUNCTION public.qc_note_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.qc_writers VALUES (current_user, session_user);
    RETURN NULL;
END
$$;
CREATE TRIGGER qc_note_writer AFTER INSERT ON queryclaw.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION public.qc_note_writer();
SELECT qc_test.audit_flush();
SELECT count(error) AS refused
  FROM queryclaw.web_fetch_many(ARRAY['http://10.0.0.1/?writer=1', 'http://10.0.0.1/?writer=2']);
SELECT qc_test.wait_for_audit(2, $$url LIKE '%writer=%'$$) AS rows;
SELECT DISTINCT current_role_name, session_role_name FROM public.qc_writers;

-- While the role lacks its privileges on the table (a database whose
-- extension still has release 0.1's objects), the worker runs its
-- statements as the table's owner, and says so once in the server log.
REVOKE INSERT ON queryclaw.audit_log FROM queryclaw_writer;
TRUNCATE public.qc_writers;
SELECT count(error) AS refused
  FROM queryclaw.web_fetch_many(ARRAY['http://10.0.0.1/?writer=3', 'http://10.0.0.1/?writer=4']);
SELECT qc_test.wait_for_audit(4, $$url LIKE '%writer=%'$$) AS rows;
SELECT DISTINCT current_role_name, session_role_name FROM public.qc_writers;
SELECT position('queryclaw audit writer runs its statements as the owner of queryclaw.audit_log'
                IN pg_read_file(current_setting('unix_socket_directories') || '/postgres.log')) > 0
       AS logged;
GRANT INSERT ON queryclaw.audit_log TO queryclaw_writer;
TRUNCATE public.qc_writers;
SELECT count(error) AS refused FROM queryclaw.web_fetch_many(ARRAY['http://10.0.0.1/?writer=5']);
SELECT qc_test.wait_for_audit(5, $$url LIKE '%writer=%'$$) AS rows;
SELECT DISTINCT current_role_name, session_role_name FROM public.qc_writers;

-- the retention's DELETE runs as the writer too: it may delete, not update
SET ROLE queryclaw_writer;
UPDATE queryclaw.audit_log SET outcome = 'ok' WHERE url LIKE '%writer=%';
RESET ROLE;

DROP TRIGGER qc_note_writer ON queryclaw.audit_log;
DROP FUNCTION public.qc_note_writer();
DROP TABLE public.qc_writers;
