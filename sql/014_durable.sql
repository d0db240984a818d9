--
-- The durable audit: rows that nothing can lose.  A statement cancelled
-- mid-transfer, a backend terminated mid-transfer, an audit worker that is
-- restarted, a queue that is full: each call still leaves its row, and
-- the count of records not written stays 0.
--
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

-- the settings read at server start, which only a preloaded library has
SELECT name, boot_val AS default, unit, context
  FROM pg_settings WHERE name LIKE 'queryclaw.%' AND context = 'postmaster' ORDER BY name;

-- a statement cancelled mid-transfer (statement_timeout is a query cancel)
SET statement_timeout = '300ms';
SELECT queryclaw.web_fetch(qc_test.url('/slow?ms=5000'));
RESET statement_timeout;
SELECT qc_test.audit_flush();
SELECT func, qc_test.scrub(url) AS url, status, outcome, reason,
       elapsed_ms < 5000 AS stopped_early
  FROM queryclaw.audit_log ORDER BY id;

-- a batch cancelled mid-transfer: each call in flight has its row; one
-- refused at once has its own
TRUNCATE queryclaw.audit_log;
SET statement_timeout = '500ms';
SELECT * FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/slow?ms=5000&n=1'), 'http://10.0.0.1/',
                                             qc_test.url('/slow?ms=5000&n=2')]);
RESET statement_timeout;
SELECT qc_test.audit_flush();
SELECT func, qc_test.scrub(url) AS url, outcome, reason FROM queryclaw.audit_log ORDER BY url;

-- a call cancelled (pg_cancel_backend) or terminated (pg_terminate_backend)
-- in another session
CREATE EXTENSION dblink;
CREATE FUNCTION qc_test.connect(name text, dbname text DEFAULT current_database())
RETURNS text LANGUAGE sql
AS $$ SELECT dblink_connect(name, format('host=%s port=%s dbname=%s',
         current_setting('unix_socket_directories'), current_setting('port'), dbname)) $$;
-- start a 5-second request in the session, and wait until it waits on the
-- network; returns the session's pid
CREATE FUNCTION qc_test.start_slow_call(name text) RETURNS integer LANGUAGE plpgsql
AS $$
DECLARE
    pid integer;
BEGIN
    SELECT p INTO pid FROM dblink(name, 'SELECT pg_backend_pid()') AS t(p integer);
    PERFORM dblink_send_query(name, format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/slow?ms=5000')));
    PERFORM qc_test.wait_until(format('EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s AND wait_event_type = %L)',
                                      pid, 'Extension'));
    RETURN pid;
END
$$;

SELECT qc_test.connect('cancelled') AS connected;
SELECT qc_test.start_slow_call('cancelled') AS cancelled_pid \gset
SELECT pg_cancel_backend(:cancelled_pid) AS cancelled;
SELECT * FROM dblink_get_result('cancelled') AS t(page text);
SELECT count(*) AS rest FROM dblink_get_result('cancelled') AS t(page text);
SELECT qc_test.wait_for_audit(1, 'pid = ' || :cancelled_pid) AS rows;
SELECT outcome, reason FROM queryclaw.audit_log WHERE pid = :cancelled_pid;
SELECT dblink_disconnect('cancelled');

SELECT qc_test.connect('terminated') AS connected;
SELECT qc_test.start_slow_call('terminated') AS terminated_pid \gset
SELECT pg_terminate_backend(:terminated_pid) AS terminated;
SELECT qc_test.wait_for_audit(1, 'pid = ' || :terminated_pid) AS rows;
SELECT func, qc_test.scrub(url) AS url, status, outcome, reason, elapsed_ms < 5000 AS stopped_early
  FROM queryclaw.audit_log WHERE pid = :terminated_pid;
SELECT dblink_disconnect('terminated');

-- the worker restarts after it is stopped (SIGTERM: it drains the queue,
-- exits, and the postmaster starts it again after 5 s); calls made while
-- it is away wait in the queue and are written when it is back
SELECT worker_pid AS old_worker FROM queryclaw.audit_status() \gset
-- (its wait is named QueryclawAuditWorker from PostgreSQL 17 on)
SELECT backend_type, wait_event_type,
       wait_event = CASE WHEN current_setting('server_version_num')::int >= 170000
                         THEN 'QueryclawAuditWorker' ELSE 'Extension' END AS wait_event_named
  FROM pg_stat_activity WHERE pid = :old_worker;
SELECT pg_terminate_backend(:old_worker) AS stopped;
SELECT qc_test.wait_until('(SELECT worker_pid FROM queryclaw.audit_status()) IS NULL') AS worker_stopped;
TRUNCATE queryclaw.audit_log;
SELECT count(queryclaw.web_fetch(qc_test.url('/hello?while=away'))) AS calls
  FROM generate_series(1, 3);
SELECT worker_pid IS NULL AS worker_away, queued FROM queryclaw.audit_status();
SELECT qc_test.wait_until('(SELECT worker_pid FROM queryclaw.audit_status()) IS NOT NULL') AS worker_back;
SELECT worker_pid IS NOT NULL AND worker_pid <> :old_worker AS restarted FROM queryclaw.audit_status();
SELECT qc_test.audit_flush();
SELECT count(*) AS rows_written FROM queryclaw.audit_log WHERE url LIKE '%while=away';

-- a full queue makes callers wait for room, at most queryclaw.timeout, and
-- then refuses the call before anything is sent: no record is dropped.
-- The worker is held up by a lock on the table while refused calls with
-- 4 kB URLs (refused at once, without a request) fill the queue (1 MB in
-- the test cluster); then a call to the fixture finds no room.
TRUNCATE queryclaw.audit_log;
SELECT qc_test.reset_requests();
SELECT waits AS waits_before FROM queryclaw.audit_status() \gset
BEGIN;
LOCK TABLE queryclaw.audit_log IN SHARE MODE;
SET LOCAL queryclaw.timeout = '500ms';
CREATE TEMP TABLE fill (n int, result text);
DO $$
DECLARE
    outcome text;
BEGIN
    FOR i IN 1..1000 LOOP
        outcome := qc_test.try(format('SELECT queryclaw.web_fetch(%L)',
                                      'http://10.0.0.1/?pad=' || repeat('x', 4000)));
        INSERT INTO fill VALUES (i, split_part(outcome, ':', 1));
        EXIT WHEN outcome NOT LIKE '42501:%';
    END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE result = '42501') > 100 AS many_fit, count(*) FILTER (WHERE result = '53000') AS full
  FROM fill;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$) AS no_room;
COMMIT;
SELECT qc_test.requests_served() AS requests_sent;
SELECT qc_test.audit_flush();
SELECT count(*) = (SELECT count(*) FROM fill WHERE result = '42501') AS every_refusal_has_its_row,
       count(*) FILTER (WHERE url NOT LIKE '%pad=%') AS other_rows
  FROM queryclaw.audit_log WHERE url NOT LIKE '%/stats%';
SELECT waits > :waits_before AS callers_waited, lost FROM queryclaw.audit_status();

-- a batch wider than the room in the queue (each call in flight holds 20
-- kB: 51 calls in 1 MB) does not wait for room its own calls hold: it
-- starts its next call when one of them has ended
SET queryclaw.max_concurrency = 64;
SET queryclaw.max_host_concurrency = 64;
SELECT qc_test.reset_requests();
SELECT count(*) FILTER (WHERE content = E'slow done\n') AS done, count(error) AS errors
  FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/slow?ms=300'), ARRAY[64]));
SELECT ((queryclaw.api_call(qc_test.url('/stats')))->'body'->>'slow_peak')::int BETWEEN 2 AND 51
       AS held_to_the_room;
RESET queryclaw.max_concurrency;
RESET queryclaw.max_host_concurrency;

-- another database than queryclaw.database: the worker does not write
-- there, so its calls are audited in the caller's transaction
CREATE DATABASE qc_other;
SELECT qc_test.connect('other', 'qc_other') AS connected;
SELECT dblink_exec('other', 'CREATE EXTENSION queryclaw_ext') AS created;
SELECT * FROM dblink('other', 'SELECT durable, database FROM queryclaw.audit_status()')
    AS t(durable boolean, database text);
SELECT dblink_exec('other', format(
    'BEGIN; SELECT queryclaw.web_fetch(%L); ROLLBACK', qc_test.url('/hello?in=rollback'))) AS rolled_back;
SELECT * FROM dblink('other', format(
    'SELECT queryclaw.web_fetch(%L) IS NOT NULL', qc_test.url('/hello?in=commit'))) AS t(committed boolean);
SELECT * FROM dblink('other', 'SELECT split_part(url, ''?'', 2), outcome FROM queryclaw.audit_log')
    AS t(query text, outcome text);
SELECT dblink_disconnect('other');
DROP DATABASE qc_other;

SELECT queued, in_flight, lost FROM queryclaw.audit_status();

-- a record the table refuses (here through a CHECK constraint that a DBA
-- added) is the only one lost: a batch that fails is written again record
-- by record, and the others keep their rows
TRUNCATE queryclaw.audit_log;
ALTER TABLE queryclaw.audit_log ADD CONSTRAINT no_poison CHECK (url NOT LIKE '%poison%');
SELECT count(error) AS refused
  FROM queryclaw.web_fetch_many(ARRAY['http://10.0.0.1/?n=1', 'http://10.0.0.1/poison',
                                      'http://10.0.0.1/?n=2', 'http://10.0.0.1/?n=3']);
SELECT qc_test.audit_flush();
SELECT url, outcome FROM queryclaw.audit_log ORDER BY url;
SELECT queued, in_flight, lost FROM queryclaw.audit_status();
ALTER TABLE queryclaw.audit_log DROP CONSTRAINT no_poison;
DROP FUNCTION qc_test.start_slow_call(text);
DROP FUNCTION qc_test.connect(text, text);
DROP EXTENSION dblink;
