--
-- Upgrades: release 0.1's SQL objects under the new library, then
-- ALTER EXTENSION queryclaw_ext UPDATE TO '0.2' and release 0.2's objects
-- under it, then the update to what this library installs.
--
-- This database is queryclaw.database (test/run.sh), so its calls go
-- through the durable audit: the audit worker writes into 0.1's table.  A
-- second database shows the transactional audit on 0.1's objects, and a
-- third, installed fresh, is what the updated one must equal, as must a
-- fourth, where 0.2 was installed as such and then updated.
--
-- Every change to SQL objects comes with its upgrade script, and this test
-- calls every function before and after the update: a new function shows
-- in the list at the end, and gets its calls here.
--
CREATE EXTENSION queryclaw_ext VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext';

-- The fixture's address varies from run to run: shown as BASE.
CREATE SCHEMA upgrade_test;
CREATE FUNCTION upgrade_test.url(path text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT current_setting('qc_test.base') || path $$;
CREATE FUNCTION upgrade_test.scrub(t text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT replace(t, current_setting('qc_test.base'), 'BASE') $$;
-- the audit rows of this database, once the worker has written them all
CREATE FUNCTION upgrade_test.audit() RETURNS TABLE (func text, outcome text, n bigint)
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..3000 LOOP
        EXIT WHEN (SELECT queued + in_flight FROM queryclaw.audit_status()) = 0;
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN QUERY SELECT a.func, a.outcome, count(*) FROM queryclaw.audit_log a
                  GROUP BY 1, 2 ORDER BY 1, 2;
END
$$;

-- queryclaw.stats with the servers' ports hidden
CREATE FUNCTION upgrade_test.stats() RETURNS TABLE (host text, calls bigint, ok bigint, refused bigint)
LANGUAGE sql AS $$
SELECT CASE s.host WHEN substring(current_setting('qc_test.base') FROM '//(.*)') THEN 'fixture'
                   WHEN substring(current_setting('qc_test.llm_base') FROM '//(.*)') THEN 'model and search'
                   ELSE s.host END, s.calls, s.ok, s.refused
  FROM queryclaw.stats s ORDER BY 1
$$;

-- Every function of 0.1, called by the new library.  (What must and what
-- must not be audited, and how, is the other tests' business: here, that
-- each works and that the worker can write every row into 0.1's table.)
-- (A function, not a view: a view would hold the functions it calls, and
-- an update script may need to drop one.)
CREATE FUNCTION upgrade_test.calls() RETURNS TABLE (call text, result text)
LANGUAGE plpgsql AS $$
BEGIN
RETURN QUERY
SELECT 'web_fetch', rtrim(queryclaw.web_fetch(upgrade_test.url('/hello')), E'\n')
UNION ALL
SELECT 'web_fetch markdown', split_part(queryclaw.web_fetch(upgrade_test.url('/html'), 'markdown'), E'\n', 1)
UNION ALL
SELECT 'web_fetch json', queryclaw.web_fetch(upgrade_test.url('/json'), 'json')::jsonb->>'name'
UNION ALL
SELECT 'api_call', format('%s %s %s', r->'status', r->'body'->>'method', r->'body'->>'body')
  FROM queryclaw.api_call(upgrade_test.url('/echo'), 'POST', '{"X-Test": "1"}', '{"a": 1}') AS r
UNION ALL
SELECT 'check_url', (queryclaw.check_url(upgrade_test.url('/hello')) - 'port')::text
UNION ALL
SELECT 'check_url refused', queryclaw.check_url('http://10.0.0.1/')->>'reason'
UNION ALL
SELECT 'html_to_text', queryclaw.html_to_text('<p>Hello <b>there</b></p>')
UNION ALL
SELECT 'web_fetch_many', string_agg(coalesce(rtrim(content, E'\n'), split_part(upgrade_test.scrub(error), ':', 1), 'NULL'),
                                ' | ' ORDER BY ord)
  FROM queryclaw.web_fetch_many(ARRAY[upgrade_test.url('/hello'), upgrade_test.url('/status/404'), NULL])
UNION ALL
SELECT 'api_call_many', string_agg(status::text, ', ' ORDER BY ord)
  FROM queryclaw.api_call_many(jsonb_build_array(jsonb_build_object('url', upgrade_test.url('/hello')),
           jsonb_build_object('url', upgrade_test.url('/echo'), 'method', 'PUT', 'body', 'x')))
UNION ALL
SELECT 'web_search', string_agg(title, ', ' ORDER BY rank) FROM queryclaw.web_search('upgrade', 2)
UNION ALL
SELECT 'llm_chat_tools', upgrade_test.scrub(queryclaw.llm_chat_tools(
           'SCENARIO:tool_call URL:' || upgrade_test.url('/hello'))->>'answer')
UNION ALL
SELECT 'llm_chat_tools messages', queryclaw.llm_chat_tools(
           '[{"role": "user", "content": "SCENARIO:plain hi"}]'::jsonb)->>'answer'
UNION ALL
SELECT 'web_fetch extract_prompt', queryclaw.web_fetch(upgrade_test.url('/hello'),
           extract_prompt => 'The first line.');
END
$$;

SELECT * FROM upgrade_test.calls();
-- 0.2's database tools need 0.2's objects: asking for them before the
-- update says so, before any request
DO $$ BEGIN PERFORM queryclaw.llm_chat_tools('SCENARIO:plain', tools => '{sql_query}');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%: %', SQLSTATE, SQLERRM; END $$;
-- refused calls too, one aborting its statement, one caught
SELECT queryclaw.web_fetch('http://10.0.0.1/');
DO $$ BEGIN PERFORM queryclaw.api_call('http://10.0.0.2/'); EXCEPTION WHEN insufficient_privilege THEN NULL; END $$;

-- the worker wrote every row into 0.1's table, and lost none
SELECT * FROM upgrade_test.audit();
SELECT durable, database, lost FROM queryclaw.audit_status();
SELECT count(*) > 0 AS own_rows FROM queryclaw.my_audit;
SELECT * FROM upgrade_test.stats();

-- The transactional audit (another database than queryclaw.database) on
-- 0.1's objects: rows in the caller's transaction.
CREATE DATABASE queryclaw_upgrade_tx;
\c queryclaw_upgrade_tx
CREATE EXTENSION queryclaw_ext VERSION '0.1';
SELECT durable FROM queryclaw.audit_status();
SELECT queryclaw.web_fetch(current_setting('qc_test.base') || '/hello');
SELECT queryclaw.check_url('http://10.0.0.1/')->>'allowed' AS allowed;
SELECT (queryclaw.api_call(current_setting('qc_test.base') || '/status/500'))->'status' AS status;
SELECT count(*) FROM queryclaw.web_search('tx', 1);
SELECT func, outcome, count(*) FROM queryclaw.audit_log GROUP BY 1, 2 ORDER BY 1, 2;
-- A queryclaw_writer that someone made before the update is refused while
-- it has anything the update would not give it: with a member, say, that
-- member would read what the workers read (the queue's secrets).  Each
-- refusal leaves 0.1 as it was; the role, cleared, is then taken.
CREATE ROLE queryclaw_writer NOLOGIN;
CREATE ROLE upgrade_mallory;
CREATE TABLE upgrade_owned ();
-- the refusal's SQLSTATE and the reason its detail gives, and the version after it
CREATE FUNCTION upgrade_test_refusal() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    ALTER EXTENSION queryclaw_ext UPDATE;
    RETURN 'updated';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN format('%s: %s; still %s', SQLSTATE, substring(detail FROM ', but (.*)\.$'),
                  (SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext'));
END
$$;
GRANT queryclaw_writer TO upgrade_mallory;
-- the error itself, without the context lines that differ between majors
DO $$
DECLARE
    detail text;
    hint text;
BEGIN
    ALTER EXTENSION queryclaw_ext UPDATE;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RAISE NOTICE E'%: %\nDETAIL: %\nHINT: %', SQLSTATE, SQLERRM, detail, hint;
END
$$;
SELECT upgrade_test_refusal() AS with_a_member;
REVOKE queryclaw_writer FROM upgrade_mallory;
GRANT upgrade_mallory TO queryclaw_writer;
SELECT upgrade_test_refusal() AS member_of_another;
REVOKE upgrade_mallory FROM queryclaw_writer;
ALTER ROLE queryclaw_writer LOGIN;
SELECT upgrade_test_refusal() AS can_log_in;
ALTER ROLE queryclaw_writer NOLOGIN BYPASSRLS;
SELECT upgrade_test_refusal() AS bypassrls;
ALTER ROLE queryclaw_writer NOBYPASSRLS;
ALTER TABLE upgrade_owned OWNER TO queryclaw_writer;
SELECT upgrade_test_refusal() AS owns_a_table;
ALTER TABLE upgrade_owned OWNER TO CURRENT_USER;
GRANT SELECT ON upgrade_owned TO queryclaw_writer;
SELECT upgrade_test_refusal() AS privilege_here;
REVOKE SELECT ON upgrade_owned FROM queryclaw_writer;
GRANT CONNECT ON DATABASE queryclaw_upgrade_tx TO queryclaw_writer;
SELECT upgrade_test_refusal() AS privilege_on_a_database;
REVOKE CONNECT ON DATABASE queryclaw_upgrade_tx FROM queryclaw_writer;
-- queryclaw_user (0.3) made before the update is refused in the same way,
-- but for its members: GRANT queryclaw_user TO etl is what it is for, so
-- members a superuser granted (as in a second database of the cluster) are
-- taken, and only those.  Made by a role with CREATEROLE, which granted it:
CREATE ROLE upgrade_eve;
ALTER ROLE upgrade_mallory CREATEROLE;
SET ROLE upgrade_mallory;
CREATE ROLE queryclaw_user NOLOGIN;
GRANT queryclaw_user TO upgrade_eve;
RESET ROLE;
DO $$
DECLARE
    detail text;
    hint text;
BEGIN
    ALTER EXTENSION queryclaw_ext UPDATE;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RAISE NOTICE E'%: %\nDETAIL: %\nHINT: %', SQLSTATE, SQLERRM, detail, hint;
END
$$;
SELECT upgrade_test_refusal() AS user_granted_by_another;
-- CREATE EXTENSION refuses it too
CREATE DATABASE queryclaw_upgrade_premade;
\c queryclaw_upgrade_premade
DO $$ BEGIN CREATE EXTENSION queryclaw_ext;
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%: %', SQLSTATE, SQLERRM; END $$;
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'queryclaw_ext';
\c queryclaw_upgrade_tx
DROP DATABASE queryclaw_upgrade_premade;
DROP ROLE queryclaw_user;
ALTER ROLE upgrade_mallory NOCREATEROLE;
-- made by a superuser, who let a member grant it on
CREATE ROLE queryclaw_user NOLOGIN;
GRANT queryclaw_user TO upgrade_eve WITH ADMIN OPTION;
SELECT upgrade_test_refusal() AS user_member_with_admin_option;
REVOKE ADMIN OPTION FOR queryclaw_user FROM upgrade_eve;
GRANT SELECT ON upgrade_owned TO queryclaw_user;
SELECT upgrade_test_refusal() AS user_privilege_here;
REVOKE SELECT ON upgrade_owned FROM queryclaw_user;
ALTER ROLE queryclaw_user LOGIN;
SELECT upgrade_test_refusal() AS user_can_log_in;
ALTER ROLE queryclaw_user NOLOGIN;
DROP TABLE upgrade_owned;
DROP FUNCTION upgrade_test_refusal();
DROP ROLE upgrade_mallory;
ALTER EXTENSION queryclaw_ext UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext';
SELECT func, outcome, count(*) FROM queryclaw.audit_log GROUP BY 1, 2 ORDER BY 1, 2;
-- the role a superuser made, with the member a superuser granted, was
-- taken: that member may now call what a caller needs, and not sql_query
SET ROLE upgrade_eve;
SELECT queryclaw.html_to_text('<p>taken</p>') AS as_a_member;
SELECT queryclaw.check_url('http://10.0.0.1/')->>'allowed' AS allowed;
SELECT queryclaw.sql_query('SELECT 1');
RESET ROLE;
REVOKE queryclaw_user FROM upgrade_eve;
DROP ROLE upgrade_eve;
\c queryclaw_upgrade
DROP DATABASE queryclaw_upgrade_tx;

-- The update.  The rows are kept, byte for byte: 0.1's columns of every row.
CREATE FUNCTION upgrade_test.row01(a queryclaw.audit_log) RETURNS text LANGUAGE sql AS $$
SELECT (a.id, a.at, a.role, a.pid, a.func, a.method, a.url, a.final_url, a.status, a.outcome,
        a.reason, a.bytes, a.chars, a.truncated, a.elapsed_ms, a.query, a.detail)::text
$$;
SELECT md5(string_agg(upgrade_test.row01(a), E'\n' ORDER BY id)) AS rows_before, count(*) AS n_before
  FROM queryclaw.audit_log a \gset
ALTER EXTENSION queryclaw_ext UPDATE TO '0.2';
SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext';
SELECT md5(string_agg(upgrade_test.row01(a), E'\n' ORDER BY id)) = :'rows_before' AS rows_kept,
       count(*) = :n_before AS same_count
  FROM queryclaw.audit_log a;

-- Every function again, on 0.2's objects, audited by the same worker.
SELECT * FROM upgrade_test.calls();
SELECT queryclaw.web_fetch('http://10.0.0.1/');
SELECT * FROM upgrade_test.audit();
SELECT durable, database, lost FROM queryclaw.audit_status();
SELECT * FROM upgrade_test.stats();
-- 0.1's rows got the OID of the role of their name; the rows the same
-- worker wrote since have theirs too (it saw the new column without a restart)
SELECT count(*) FILTER (WHERE role_id IS NULL) AS without_role_id,
       count(*) FILTER (WHERE role_id::oid <> (SELECT oid FROM pg_roles WHERE rolname = role)) AS other_role_id
  FROM queryclaw.audit_log;
SELECT count(*) = (SELECT count(*) FROM queryclaw.audit_log) AS all_own_rows FROM queryclaw.my_audit;

-- 0.2's queue of asynchronous requests: each function queues, and in the
-- same transaction (before any worker can see them) the requests are
-- cancelled; wait() then returns them final.
BEGIN;
SELECT array[queryclaw.web_fetch_async(upgrade_test.url('/hello')),
             queryclaw.api_call_async(upgrade_test.url('/echo'), 'PUT', body => 'x'),
             queryclaw.llm_chat_tools_async('SCENARIO:plain hi')] AS async_ids \gset
SELECT queryclaw.cancel_requests(:'async_ids') AS cancelled;
COMMIT;
SELECT func, state, error FROM queryclaw.wait(:'async_ids') ORDER BY id;
SELECT role = current_user::regrole AS own, state, requests FROM queryclaw.queue_status;
-- queued again, they are sent; wait() without a timeout returns once all are done
SELECT queryclaw.retry_requests(:'async_ids') AS retried;
SELECT func, state, attempts, error FROM queryclaw.wait(:'async_ids', NULL) ORDER BY id;
-- the hosts they went to (the model's request names no URL), and the limits of one
SELECT count(*) AS hosts, sum(done_last_minute) AS done FROM queryclaw.queue_hosts;
SELECT * FROM queryclaw.host_limits('api.example.com');

-- 0.2's foreign-data wrapper: a server over the fixture, whose user
-- mapping's header a call under it carries
DO $$
BEGIN
    EXECUTE format('CREATE SERVER upgrade_fx FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   upgrade_test.url('/echo'));
END
$$;
CREATE USER MAPPING FOR PUBLIC SERVER upgrade_fx OPTIONS (headers '{"X-Srv": "new"}');
SELECT r->'body'->'headers'->>'x-srv' AS sent FROM queryclaw.api_call(upgrade_test.url('/echo')) AS r;
DROP SERVER upgrade_fx CASCADE;

-- Release 0.2's objects, as every 0.2 user has them, updated to what this
-- library installs: the audit rows and the queue's requests are kept, and
-- every function, the queue's included, works after it.
SELECT count(*) > 0 AS audit_settled FROM upgrade_test.audit();
SELECT md5(string_agg(upgrade_test.row01(a), E'\n' ORDER BY id)) AS rows_before, count(*) AS n_before
  FROM queryclaw.audit_log a \gset
SELECT md5(string_agg(r::text, E'\n' ORDER BY id)) AS requests_before FROM queryclaw.requests r \gset
ALTER EXTENSION queryclaw_ext UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext';
SELECT md5(string_agg(upgrade_test.row01(a), E'\n' ORDER BY id)) = :'rows_before' AS rows_kept,
       count(*) = :n_before AS same_count
  FROM queryclaw.audit_log a;
SELECT md5(string_agg(r::text, E'\n' ORDER BY id)) = :'requests_before' AS requests_kept
  FROM queryclaw.requests r;
SELECT * FROM upgrade_test.calls();
SELECT queryclaw.api_call_async(upgrade_test.url('/echo'), 'PUT', body => 'after') AS async_id \gset
SELECT func, state, attempts, result->'body'->>'body' AS sent FROM queryclaw.wait(ARRAY[:async_id], NULL);

-- The updated database holds the same objects as a fresh install: every
-- member of the extension with its comment, initial privileges and whole
-- definition (a function's text, a table's columns, constraints, indexes,
-- policies and privileges, a view's query), and the tables whose rows
-- pg_dump keeps.  Nothing here names an object: what is added to the
-- upgrade scripts is compared too.  While CREATE EXTENSION reaches the
-- current version by the same update scripts, the two differ only if a
-- script does something else in a database in use; once a release ships
-- a complete install script of its own, this is what keeps it equal to
-- the update.
-- (PostgreSQL 17 and newer make the row types of the tables and views, and
-- their array types, members too: they come with the relations, listed.)
SELECT $describe$
SELECT pg_describe_object(d.classid, d.objid, 0)
       || coalesce(E'\n  comment: ' || obj_description(d.objid, d.classid::regclass::text::name), '')
       || coalesce(E'\n  initial privileges: ' || (SELECT i.initprivs::text FROM pg_init_privs i
                   WHERE (i.classoid, i.objoid, i.objsubid) = (d.classid, d.objid, 0)), '')
       || coalesce(E'\n  ' || CASE d.classid
            WHEN 'pg_proc'::regclass THEN
                (SELECT pg_get_functiondef(p.oid) || E'\n  acl: ' || coalesce(p.proacl::text, 'default')
                   FROM pg_proc p WHERE p.oid = d.objid)
            WHEN 'pg_class'::regclass THEN
                (SELECT concat_ws(E'\n  ', 'kind ' || c.relkind::text, 'acl: ' || coalesce(c.relacl::text, 'default'),
                        'options: ' || c.reloptions::text,
                        CASE WHEN c.relrowsecurity THEN 'row level security' END,
                        CASE WHEN c.relforcerowsecurity THEN 'forced row level security' END,
                        CASE WHEN c.relkind = 'v' THEN 'query: ' || pg_get_viewdef(c.oid) END,
                        (SELECT string_agg(format('column %s %s%s%s%s%s%s%s', a.attname,
                                    format_type(a.atttypid, a.atttypmod),
                                    CASE WHEN a.attnotnull THEN ' not null' END,
                                    ' identity ' || nullif(a.attidentity::text, ''),
                                    ' generated ' || nullif(a.attgenerated::text, ''),
                                    ' default ' || pg_get_expr(ad.adbin, ad.adrelid),
                                    ' acl ' || a.attacl::text,
                                    ' comment ' || col_description(c.oid, a.attnum)), E'\n  ' ORDER BY a.attnum)
                           FROM pg_attribute a
                           LEFT JOIN pg_attrdef ad ON (ad.adrelid, ad.adnum) = (a.attrelid, a.attnum)
                          WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                        (SELECT string_agg('constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid),
                                           E'\n  ' ORDER BY co.conname)
                           FROM pg_constraint co WHERE co.conrelid = c.oid),
                        (SELECT string_agg(pg_get_indexdef(i.indexrelid), E'\n  ' ORDER BY 1)
                           FROM pg_index i WHERE i.indrelid = c.oid),
                        (SELECT string_agg(format('policy %s %s %s to %s using %s check %s', po.polname,
                                    po.polcmd::text, CASE WHEN po.polpermissive THEN 'permissive' ELSE 'restrictive' END,
                                    (SELECT string_agg(CASE WHEN r = 0 THEN 'public' ELSE r::regrole::text END, ',')
                                       FROM unnest(po.polroles) r),
                                    pg_get_expr(po.polqual, po.polrelid), pg_get_expr(po.polwithcheck, po.polrelid)),
                                    E'\n  ' ORDER BY po.polname)
                           FROM pg_policy po WHERE po.polrelid = c.oid),
                        (SELECT string_agg(pg_get_triggerdef(t.oid), E'\n  ' ORDER BY t.tgname)
                           FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
                        (SELECT format('sequence %s start %s increment %s min %s max %s cycle %s',
                                       s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle)
                           FROM pg_sequence s WHERE s.seqrelid = c.oid))
                   FROM pg_class c WHERE c.oid = d.objid)
            WHEN 'pg_namespace'::regclass THEN
                (SELECT 'acl: ' || coalesce(n.nspacl::text, 'default') FROM pg_namespace n WHERE n.oid = d.objid)
          END, '')
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queryclaw_ext')
   AND NOT EXISTS (SELECT FROM pg_type t
                    WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                      AND (t.typrelid <> 0 OR t.typelem IN (SELECT oid FROM pg_type WHERE typrelid <> 0)))
UNION ALL
SELECT 'schema queryclaw acl: ' || coalesce(nspacl::text, 'default') FROM pg_namespace WHERE nspname = 'queryclaw'
UNION ALL
SELECT 'dumped with its rows: ' || c::regclass::text || coalesce(' where ' || nullif(w, ''), '')
  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(c, w)
 WHERE e.extname = 'queryclaw_ext'
$describe$ AS describe \gset
CREATE DATABASE queryclaw_upgrade_fresh;
\c queryclaw_upgrade_fresh
CREATE EXTENSION queryclaw_ext;
SELECT array_agg(m.d ORDER BY m.d) AS fresh FROM (:describe) AS m(d) \gset
\c queryclaw_upgrade
DROP DATABASE queryclaw_upgrade_fresh;
-- the objects compared (each function is called above)
SELECT split_part(m.d, E'\n', 1) AS member FROM (:describe) AS m(d) ORDER BY 1;
SELECT m.d AS only_after_update FROM (:describe) AS m(d) EXCEPT SELECT unnest(:'fresh'::text[]);
SELECT unnest(:'fresh'::text[]) AS only_in_fresh_install EXCEPT SELECT m.d FROM (:describe) AS m(d);

-- A database where release 0.2 was installed as such (CREATE EXTENSION
-- at 0.2), updated: the same objects as a fresh install too.
CREATE DATABASE queryclaw_upgrade_02;
\c queryclaw_upgrade_02
CREATE EXTENSION queryclaw_ext VERSION '0.2';
ALTER EXTENSION queryclaw_ext UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext';
SELECT m.d AS only_after_update_from_02 FROM (:describe) AS m(d) EXCEPT SELECT unnest(:'fresh'::text[]);
SELECT unnest(:'fresh'::text[]) AS only_in_fresh_install EXCEPT SELECT m.d FROM (:describe) AS m(d);
\c queryclaw_upgrade
DROP DATABASE queryclaw_upgrade_02;
