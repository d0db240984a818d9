--
-- Isolation between roles in the async worker, tried as an attacker
-- would: requests of several roles share one worker process, and nothing
-- one role does may change what another role's request or callback sees
-- or does.
--
-- qc_mallory stores settings for herself (ALTER ROLE ... SET, which any
-- role may do for itself) and leaves state behind in her callbacks;
-- qc_victim's requests, queued after hers, must neither fail nor be sent
-- twice, and its callbacks must see a session as fresh as its own login's.
--
CREATE ROLE qc_mallory;
CREATE ROLE qc_victim;
CREATE ROLE qc_slowpoke;
GRANT USAGE ON SCHEMA qc_test TO qc_mallory, qc_victim, qc_slowpoke;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.wait(bigint[], interval)
    TO qc_mallory, qc_victim, qc_slowpoke;

-- What each callback saw of its session, one row per callback.
CREATE TABLE qc_iso_seen (
    id bigint, by_role text, error text,
    session_user_is_superuser boolean, work_mem text, timezone text,
    search_path text, read_only text, advisory_locks bigint,
    prepared bigint, cursors bigint, channels bigint, lastval text);
GRANT INSERT ON qc_iso_seen TO PUBLIC;
CREATE FUNCTION qc_iso_look(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    last text;
BEGIN
    BEGIN
        last := lastval()::text;
    EXCEPTION WHEN OTHERS THEN
        last := SQLERRM;
    END;
    INSERT INTO public.qc_iso_seen VALUES (
        id, current_user, error,
        (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = session_user),
        current_setting('work_mem'), current_setting('TimeZone'),
        current_setting('search_path'), current_setting('transaction_read_only'),
        (SELECT count(*) FROM pg_catalog.pg_locks
          WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()),
        (SELECT count(*) FROM pg_catalog.pg_prepared_statements),
        (SELECT count(*) FROM pg_catalog.pg_cursors),
        (SELECT count(*) FROM pg_catalog.pg_listening_channels()),
        last);
END
$$;

-- Mallory's callback: everything a session keeps, each try noted with
-- its outcome (some are refused inside the worker's security-restricted
-- operation), then a look at the session it leaves.
CREATE TABLE qc_iso_tried (what text, outcome text);
GRANT INSERT ON qc_iso_tried TO qc_mallory;
CREATE SEQUENCE qc_iso_seq;
GRANT USAGE ON SEQUENCE qc_iso_seq TO qc_mallory;
CREATE FUNCTION qc_iso_try(what text, stmt text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    INSERT INTO public.qc_iso_tried VALUES (what, 'done');
EXCEPTION WHEN OTHERS THEN
    INSERT INTO public.qc_iso_tried VALUES (what, SQLSTATE || ': ' || SQLERRM);
END
$$;
CREATE FUNCTION qc_iso_meddle(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM public.qc_iso_try('set_config work_mem', $q$SELECT set_config('work_mem', '1234kB', false)$q$);
    PERFORM public.qc_iso_try('SET TimeZone', $q$SET TimeZone = 'Pacific/Chatham'$q$);
    PERFORM public.qc_iso_try('set_config search_path', $q$SELECT set_config('search_path', 'qc_nowhere, public', false)$q$);
    PERFORM public.qc_iso_try('session advisory lock', $q$SELECT pg_advisory_lock(424242)$q$);
    PERFORM public.qc_iso_try('PREPARE', $q$PREPARE qc_iso_stmt AS SELECT 1$q$);
    PERFORM public.qc_iso_try('nextval', $q$SELECT nextval('public.qc_iso_seq')$q$);
    PERFORM public.qc_iso_try('cursor WITH HOLD', $q$DECLARE qc_iso_cur CURSOR WITH HOLD FOR SELECT 1$q$);
    PERFORM public.qc_iso_try('LISTEN', $q$LISTEN qc_iso_channel$q$);
    PERFORM public.qc_iso_try('temporary table', $q$CREATE TEMP TABLE qc_iso_temp (a int)$q$);
    PERFORM public.qc_iso_try('SET ROLE', $q$SET ROLE qc_victim$q$);
    PERFORM public.qc_iso_try('SET SESSION AUTHORIZATION', $q$SET SESSION AUTHORIZATION qc_victim$q$);
    PERFORM public.qc_iso_look(id, result, error, context);
END
$$;
-- A callback that takes its time.
CREATE FUNCTION qc_iso_slow(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep((context->>'sleep')::float8);
    PERFORM public.qc_iso_look(id, result, error, context);
END
$$;
-- A callback that writes.
CREATE TABLE qc_iso_written (id bigint);
GRANT INSERT ON qc_iso_written TO PUBLIC;
CREATE FUNCTION qc_iso_write(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$ INSERT INTO public.qc_iso_written VALUES (id) $$;

-- The attempts the worker made for each request (its audit rows).
CREATE FUNCTION qc_test.attempts(request_id bigint) RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM queryclaw.audit_log a
 WHERE a.func = 'api_call_async' AND (a.detail->'request'->>'id')::bigint = request_id $$;

CREATE TABLE qc_iso_ids (label text, id bigint);
GRANT INSERT ON qc_iso_ids TO PUBLIC;
-- Queue one request as a role, labelled.
CREATE FUNCTION qc_iso_queue(label text, who text, path text, method text,
                             callback regprocedure, context jsonb DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SET ROLE %I', who);
    INSERT INTO qc_iso_ids
        SELECT label, queryclaw.api_call_async(qc_test.url(path), method,
                                               callback => callback, context => context);
    RESET ROLE;
END
$$;
-- Every request queued, once all are final and audited: its outcome, the
-- attempts the worker made, and whether its callback ran.
CREATE FUNCTION qc_iso_outcomes() RETURNS TABLE (label text, state text, error text, sqlstate text,
                                                attempts bigint, called boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM queryclaw.wait(ARRAY(SELECT id FROM qc_iso_ids), '20 s');
    PERFORM qc_test.audit_flush();
    RETURN QUERY
    SELECT i.label, r.state, qc_test.scrub(r.error), r.sqlstate, qc_test.attempts(i.id),
           EXISTS (SELECT FROM qc_iso_seen s WHERE s.id = i.id)
               OR EXISTS (SELECT FROM qc_iso_written w WHERE w.id = i.id)
      FROM qc_iso_ids i JOIN queryclaw.requests r USING (id)
     ORDER BY i.label;
END
$$;
-- What the callbacks saw: work_mem as the server has it (this session's),
-- or as set; whether TimeZone was the one Mallory set.
CREATE FUNCTION qc_iso_sessions() RETURNS TABLE (label text, by_role text, error text,
                                                superuser_session boolean, work_mem text,
                                                chatham boolean, search_path text, read_only text,
                                                advisory_locks bigint, prepared bigint,
                                                cursors bigint, channels bigint, lastval text)
LANGUAGE sql AS $$
SELECT i.label, s.by_role, s.error, s.session_user_is_superuser,
       CASE WHEN s.work_mem = current_setting('work_mem') THEN 'server''s' ELSE s.work_mem END,
       s.timezone = 'Pacific/Chatham',
       s.search_path, s.read_only, s.advisory_locks, s.prepared, s.cursors, s.channels, s.lastval
  FROM qc_iso_ids i JOIN qc_iso_seen s USING (id) ORDER BY i.label
$$;
-- The worker's session advisory locks, seen from outside.
CREATE FUNCTION qc_iso_worker_locks() RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE l.locktype = 'advisory'
   AND a.backend_type IN ('queryclaw async worker', 'queryclaw callback worker',
                          'queryclaw enrichment worker') $$;

--
-- 1. Mallory's stored settings: those a session of hers would never take
-- on (transaction_read_only shapes only the transaction it is set in,
-- which at login is not one of hers; session_authorization and role she
-- may not take: the NOTICEs ALTER ROLE gives are hidden), and those that
-- would stop the worker's own statements (lock_timeout, row_security,
-- idle_in_transaction_session_timeout, planner settings).  Her requests
-- go, as they would from a session of hers; the victim's, queued after
-- hers, go once and end done, and no callback runs as another user.
--
SET client_min_messages = warning;
SET ROLE qc_mallory;
ALTER ROLE qc_mallory SET transaction_read_only = on;
ALTER ROLE qc_mallory SET session_authorization = 'qc_victim';
ALTER ROLE qc_mallory SET role = 'qc_victim';
ALTER ROLE qc_mallory SET lock_timeout = '1ms';
ALTER ROLE qc_mallory SET idle_in_transaction_session_timeout = '1ms';
ALTER ROLE qc_mallory SET row_security = off;
ALTER ROLE qc_mallory SET enable_indexscan = off;
ALTER ROLE qc_mallory SET enable_bitmapscan = off;
ALTER ROLE qc_mallory SET plan_cache_mode = 'force_custom_plan';
ALTER ROLE qc_mallory SET search_path = 'qc_nowhere';
RESET ROLE;
RESET client_min_messages;
SELECT qc_iso_queue('1 mallory get', 'qc_mallory', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('1 mallory post', 'qc_mallory', '/echo', 'POST', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('1 victim get', 'qc_victim', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('1 victim post', 'qc_victim', '/echo', 'POST', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT * FROM qc_iso_outcomes();
SELECT * FROM qc_iso_sessions();
-- the worker still writes its outcomes, for others and for her
SELECT qc_iso_queue('1 victim again', 'qc_victim', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT label, state, attempts FROM qc_iso_outcomes() WHERE label = '1 victim again';
ALTER ROLE qc_mallory RESET ALL;
TRUNCATE qc_iso_ids, qc_iso_seen;

--
-- 2. What Mallory's callback leaves in the session: settings, a session
-- advisory lock, a prepared statement, a sequence's lastval, and what
-- the security-restricted operation refuses her (cursors WITH HOLD,
-- LISTEN, temporary tables, SET ROLE, SET SESSION AUTHORIZATION).  The
-- victim's callback, the next request, sees none of it, and the worker
-- holds no advisory lock once her request is final.
--
SELECT qc_iso_queue('2 mallory', 'qc_mallory', '/hello', 'GET', 'qc_iso_meddle(bigint,jsonb,text,jsonb)');
SELECT label, state, error, called FROM qc_iso_outcomes();
SELECT what, regexp_replace(outcome, '"[^"]*"', '"..."') AS outcome FROM qc_iso_tried ORDER BY what;
SELECT qc_iso_worker_locks() AS worker_advisory_locks;
SELECT qc_iso_queue('2 victim', 'qc_victim', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT label, state, error, called FROM qc_iso_outcomes();
-- what mallory's callback saw at its end, and what the victim's saw
SELECT label, by_role, work_mem, chatham, search_path, advisory_locks, prepared, cursors,
       channels, lastval
  FROM qc_iso_sessions();
TRUNCATE qc_iso_ids, qc_iso_seen;

--
-- 3. Settings of a role that shape its own callbacks, as they shape its
-- sessions: default_transaction_read_only makes its callback read-only
-- (a write fails it, and the request with it), statement_timeout and
-- queryclaw.callback_timeout bound it (57014).  Only that role's requests
-- fail; the victim's, queued beside them, are done.
--
ALTER ROLE qc_mallory SET default_transaction_read_only = on;
ALTER ROLE qc_slowpoke SET statement_timeout = '200ms';
SELECT qc_iso_queue('3 mallory read-only write', 'qc_mallory', '/hello', 'GET', 'qc_iso_write(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('3 slowpoke statement_timeout', 'qc_slowpoke', '/hello', 'GET',
                    'qc_iso_slow(bigint,jsonb,text,jsonb)', '{"sleep": 5}');
SELECT qc_iso_queue('3 victim', 'qc_victim', '/hello', 'GET', 'qc_iso_write(bigint,jsonb,text,jsonb)');
SELECT * FROM qc_iso_outcomes();
ALTER ROLE qc_slowpoke RESET statement_timeout;
ALTER ROLE qc_slowpoke SET queryclaw.callback_timeout = '200ms';
SELECT qc_iso_queue('3 slowpoke callback_timeout', 'qc_slowpoke', '/hello', 'GET',
                    'qc_iso_slow(bigint,jsonb,text,jsonb)', '{"sleep": 5}');
SELECT qc_iso_queue('3 slowpoke in time', 'qc_victim', '/hello', 'GET',
                    'qc_iso_slow(bigint,jsonb,text,jsonb)', '{"sleep": 0.01}');
SELECT * FROM qc_iso_outcomes() WHERE label LIKE '3 slowpoke%';
TRUNCATE qc_iso_ids, qc_iso_seen, qc_iso_written;

--
-- 4. The database's stored settings apply to every role's requests as
-- at login: default_transaction_read_only makes every callback read-only
-- (a write fails it); the worker's own writes go on, and each request is
-- sent once.  (PostgreSQL 17 and later cannot RESET a stored
-- transaction_read_only: phase 1 tried it on a role.)
--
SELECT current_database() AS db \gset
ALTER DATABASE :"db" SET default_transaction_read_only = on;
SELECT qc_iso_queue('4 victim get', 'qc_victim', '/hello', 'GET', 'qc_iso_write(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('4 victim post', 'qc_victim', '/echo', 'POST', NULL);
SELECT * FROM qc_iso_outcomes();
ALTER DATABASE :"db" RESET default_transaction_read_only;
TRUNCATE qc_iso_ids, qc_iso_seen, qc_iso_written;

--
-- 5. Each stored setting of the issue alone, so that one cannot hide
-- another: Mallory's session_authorization by itself.  The worker does not
-- take it on, for her or after her: her callback runs as her, the
-- victim's after it as the victim, both in a session whose session user
-- is the worker's (a superuser), and a second round sees the same.
--
ALTER ROLE qc_mallory RESET ALL;
SET client_min_messages = warning;
SET ROLE qc_mallory;
ALTER ROLE qc_mallory SET session_authorization = 'qc_victim';
RESET ROLE;
RESET client_min_messages;
SELECT qc_iso_queue('5 mallory', 'qc_mallory', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('5 victim', 'qc_victim', '/hello', 'GET', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT label, state, error, attempts, called FROM qc_iso_outcomes();
SELECT qc_iso_queue('5 victim again', 'qc_victim', '/echo', 'POST', 'qc_iso_look(bigint,jsonb,text,jsonb)');
SELECT label, state, error, attempts, called FROM qc_iso_outcomes() WHERE label = '5 victim again';
SELECT label, by_role, error, superuser_session FROM qc_iso_sessions();
ALTER ROLE qc_mallory RESET ALL;
TRUNCATE qc_iso_ids, qc_iso_seen;

--
-- 6. transaction_read_only stored on the database (ALTER DATABASE, which
-- its owner may do): at login it shapes no transaction of a session, so
-- it shapes none of the worker's passes either.  The victim's request is
-- sent once and ends done, its callback writes, and the worker records
-- its outcome.  (Taken out of pg_db_role_setting directly: PostgreSQL 17
-- and later cannot RESET it.)
--
ALTER DATABASE :"db" SET transaction_read_only = on;
SELECT qc_iso_queue('6 victim get', 'qc_victim', '/hello', 'GET', 'qc_iso_write(bigint,jsonb,text,jsonb)');
SELECT qc_iso_queue('6 victim post', 'qc_victim', '/echo', 'POST', NULL);
SELECT * FROM qc_iso_outcomes();
UPDATE pg_db_role_setting SET setconfig = array_remove(setconfig, 'transaction_read_only=on')
 WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND setrole = 0;
SELECT count(*) AS stored_still FROM pg_db_role_setting, unnest(setconfig) c
 WHERE c LIKE 'transaction_read_only%';

-- clean up
DELETE FROM queryclaw.requests WHERE id IN (SELECT id FROM qc_iso_ids)
   OR role IN ('qc_mallory', 'qc_victim', 'qc_slowpoke');
DROP TABLE qc_iso_ids, qc_iso_seen, qc_iso_tried, qc_iso_written;
DROP SEQUENCE qc_iso_seq;
DROP FUNCTION qc_iso_look, qc_iso_try, qc_iso_meddle, qc_iso_slow, qc_iso_write,
              qc_iso_queue, qc_iso_outcomes, qc_iso_sessions, qc_iso_worker_locks,
              qc_test.attempts;
DROP OWNED BY qc_mallory, qc_victim, qc_slowpoke;
ALTER ROLE qc_mallory RESET ALL;
ALTER ROLE qc_slowpoke RESET ALL;
DROP ROLE qc_mallory, qc_victim, qc_slowpoke;
