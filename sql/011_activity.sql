--
-- A request seen from another session: its wait shows in pg_stat_activity
-- as an Extension wait event, and pg_cancel_backend stops it at once.
--
CREATE EXTENSION dblink;
SELECT dblink_connect('worker', format('host=%s port=%s dbname=%s',
       current_setting('unix_socket_directories'), current_setting('port'),
       current_database())) AS connected;
SELECT pid AS worker_pid FROM dblink('worker', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT set_config('qc_test.worker_pid', :'worker_pid', false) IS NOT NULL AS noted;

-- the other session starts a request that takes 5 seconds
SELECT dblink_send_query('worker',
       format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/slow?ms=5000'))) AS sent;

-- wait (at most 5 s) until it is seen waiting
DO $$
BEGIN
    FOR i IN 1..100 LOOP
        EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
                           WHERE pid = current_setting('qc_test.worker_pid')::int
                             AND wait_event_type = 'Extension');
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
-- the wait is named QueryclawHttp from PostgreSQL 17 on (plain Extension before)
SELECT state, wait_event_type,
       wait_event = CASE WHEN current_setting('server_version_num')::int >= 170000
                         THEN 'QueryclawHttp' ELSE 'Extension' END AS wait_event_named
  FROM pg_stat_activity WHERE pid = :worker_pid;

-- cancel it: the request stops well before the server would have answered
SELECT pg_cancel_backend(:worker_pid) AS cancelled;
SELECT clock_timestamp() AS cancel_sent \gset
SELECT * FROM dblink_get_result('worker') AS t(page text);
SELECT clock_timestamp() - :'cancel_sent'::timestamptz < interval '2.5 seconds' AS before_the_answer;

-- the session that was cancelled works normally afterwards (once dblink
-- has collected the end of the cancelled query)
SELECT count(*) AS rest FROM dblink_get_result('worker') AS t(page text);
SELECT * FROM dblink('worker', format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/hello')))
    AS t(page text);
SELECT dblink_disconnect('worker');
DROP EXTENSION dblink;
