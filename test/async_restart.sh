#!/usr/bin/env bash
# test/async_restart.sh: nothing queued is lost when the server stops in the
# middle of a queue of hundreds, nor when the async worker is killed (run by
# test/run.sh on its preloaded cluster, after the suite).
#
# Twice, 300 requests are queued (POSTs without an idempotency key first,
# then GETs, both answered after 200 ms, then keyed POSTs), each with a
# callback, in one transaction; once the fixture served some, the server is stopped hard (pg_ctl -m
# immediate, as a crash or a power cut would) and started again, or the
# async worker is killed with SIGKILL (the postmaster then restarts every
# backend).  Then every request must reach a final state: the GETs and the
# keyed POSTs done (a request the worker held is run again: at least once),
# the unkeyed POSTs done or failed "interrupted; not sent again" (some of
# them were held), no request lost, and every callback called once per
# final request.  Then the worker's run fails (a cancel) while it holds
# requests claimed ahead: those it never sent are sent then, whatever their
# method.  Then, with two async workers, 300 requests are each sent,
# called back and audited once.  Last, 20 requests are answered while
# their callbacks cannot run, and the server stops hard: none is sent
# again, and each callback runs once after the restart.  Prints TAP-style
# "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory, the data directory and the bin directory
# of the running cluster (test/lib.sh's QC_WORK, QC_PGDATA, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_PGDATA=$2 QC_BINDIR=$3
db=queryclaw_regression
role=qc_restart

sql() {
	qc_as_pg "$QC_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$QC_WORK" -p 5432 -d "$db" "$@"
}

# Wait (at most $2 seconds) until the SQL condition $1 holds.
wait_for() {
	for _ in $(seq $(($2 * 10))); do
		[ "$(sql -c "SELECT $1" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	return 1
}

sql >/dev/null <<SQL || { echo "not ok - the test was set up"; exit 1; }
CREATE ROLE $role;
GRANT USAGE ON SCHEMA qc_test TO $role;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb) TO $role;
ALTER ROLE $role SET queryclaw.retry_base_delay = '10ms';
CREATE TABLE qc_restart_seen (id bigint, error text);
GRANT INSERT ON qc_restart_seen TO $role;
CREATE FUNCTION qc_restart_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$ INSERT INTO qc_restart_seen VALUES (id, error) \$\$;
GRANT EXECUTE ON FUNCTION qc_restart_note(bigint, jsonb, text, jsonb) TO $role;
SQL

# Queue the 300 requests in one transaction, in order (the worker takes
# the oldest first): the unkeyed POSTs are on the wire first, and some of
# them when the server stops.
enqueue() {
	sql >/dev/null <<SQL
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_restart_seen;
SELECT qc_test.reset_requests();
BEGIN;
SET LOCAL ROLE $role;
SELECT count(queryclaw.api_call_async(qc_test.url('/flaky?fail=0&ms=200&key=unkeyed'), 'POST', body => '{}',
                                      callback => 'qc_restart_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                      context => '{"kind": "unkeyed"}'))
  FROM generate_series(1, 75) i;
SELECT count(queryclaw.api_call_async(qc_test.url('/slow?ms=200&n=' || i),
                                      callback => 'qc_restart_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                      context => '{"kind": "get"}'))
  FROM generate_series(1, 150) i;
SELECT count(queryclaw.api_call_async(qc_test.url('/flaky?fail=0&key=keyed'), 'POST', body => '{}',
                                      callback => 'qc_restart_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                      context => '{"kind": "keyed"}', idempotency_key => 'k-' || i))
  FROM generate_series(1, 75) i;
COMMIT;
SQL
}

# The assertions once the queue settled; $1 names the interruption.
check_settled() {
	local what=$1
	if wait_for "(SELECT count(*) FROM queryclaw.requests WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0" 120; then
		echo "ok - $what: every request reached a final state"
	else
		echo "not ok - $what: every request reached a final state ($(sql -c "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) n FROM queryclaw.requests GROUP BY 1) s"))"
	fi
	qc_check "$what: no request lost" "$(sql -c "SELECT count(*) FROM queryclaw.requests")" 300
	qc_check "$what: the GETs and the keyed POSTs are done" \
		"$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE context->>'kind' <> 'unkeyed' AND state = 'done'")" 225
	qc_check "$what: unkeyed POSTs are done, or failed as interrupted" \
		"$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE context->>'kind' = 'unkeyed'
		             AND (state = 'done' OR (state = 'failed' AND error = 'interrupted; not sent again'))")" 75
	qc_check "$what: some unkeyed POSTs held by the worker were not sent again" \
		"$(sql -c "SELECT count(*) > 0 FROM queryclaw.requests WHERE error = 'interrupted; not sent again'")" t
	qc_check "$what: every callback called once" \
		"$(sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) FROM qc_restart_seen s")" "300 300"
	qc_check "$what: no secrets left" "$(sql -c "SELECT count(*) FROM queryclaw.request_secrets")" 0
}

# 1. The server stops hard mid-queue, and starts again.
enqueue
wait_for "qc_test.requests_served() >= 20 AND EXISTS (SELECT FROM queryclaw.requests
           WHERE state = 'running' AND context->>'kind' = 'unkeyed')" 30 ||
	echo "not ok - the worker started on the queue"
qc_pg_ctl -m immediate restart || { echo "not ok - the server restarted"; exit 1; }
check_settled "server restarted"

# 2. The async worker is killed mid-queue (the postmaster restarts everything).
enqueue
wait_for "qc_test.requests_served() >= 20 AND EXISTS (SELECT FROM queryclaw.requests
           WHERE state = 'running' AND context->>'kind' = 'unkeyed')" 30 ||
	echo "not ok - the worker started on the queue"
pid=$(sql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker' LIMIT 1")
if [ -n "$pid" ]; then
	qc_as_root kill -KILL "$pid"
	# wait for the postmaster's restart of every backend
	sleep 1
	for _ in $(seq 100); do sql -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
	check_settled "worker killed"
else
	echo "not ok - the async worker shows in pg_stat_activity"
fi

# 3. The async worker's run fails (pg_cancel_backend on it) while it holds
# requests claimed ahead for a quick host, beyond the 8 on the wire: the
# unkeyed POSTs it never sent go back to the queue and are sent then, and
# only those that may have gone out fail "interrupted; not sent again",
# each with its audit row.  (Before, every one the worker held failed,
# most of them never sent.)
sql >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_restart_seen;
SET ROLE $role;
SELECT count(queryclaw.api_call_async(qc_test.url('/flaky?fail=0&ms=20&key=ahead'), 'POST', body => '{}',
                                      callback => 'qc_restart_note(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, 300) i;
SQL
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE state = 'done') >= 20
          AND (SELECT count(*) FROM queryclaw.requests WHERE state = 'running') > 8" 30 ||
	echo "not ok - the worker claimed requests ahead"
sql -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker'" >/dev/null
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE finished_at IS NULL) = 0" 60
qc_check "failed run: every request done, or failed as interrupted" \
	"$(sql -c "SELECT count(*) FROM queryclaw.requests
	            WHERE state = 'done' OR (state = 'failed' AND error = 'interrupted; not sent again')")" 300
qc_check "failed run: the worker's run failed and it went on" \
	"$(sql -c "SELECT count(*) > 0 FROM queryclaw.requests WHERE error = 'interrupted; not sent again'")" t
qc_check "failed run: every request failed as interrupted may have gone out (it has an audit row)" \
	"$(sql -c "SELECT qc_test.audit_flush();
	            SELECT count(*) FROM queryclaw.requests r
	             WHERE r.error = 'interrupted; not sent again'
	               AND NOT EXISTS (SELECT FROM queryclaw.audit_log a
	                                WHERE a.func = 'api_call_async' AND (a.detail->'request'->>'id')::bigint = r.id)" | tail -1)" 0
qc_check "failed run: every callback called once" \
	"$(sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) FROM qc_restart_seen s")" "300 300"

# 4. Two async workers (a restart for queryclaw.async_workers) share a
# queue of 300: each request is claimed by one of them only, so it is sent
# once, its callback runs once, and it has one audit row per attempt.  A
# small async_concurrency and slow answers keep the first worker busy long
# enough for the second to take its share.
# An empty queue, then $1 requests of the role to an endpoint that answers
# in $2 ms, each with the callback that notes it.
queue_slow() {
	sql >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_restart_seen;
SELECT qc_test.reset_requests();
SET ROLE $role;
SELECT count(queryclaw.api_call_async(qc_test.url('/slow?ms=$2&n=' || i),
                                      callback => 'qc_restart_note(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, $1) i;
SQL
}
sql -c "ALTER SYSTEM SET queryclaw.async_workers = 2" -c "ALTER SYSTEM SET queryclaw.async_concurrency = 8" >/dev/null
qc_pg_ctl -m fast restart || { echo "not ok - the server restarted with two async workers"; exit 1; }
wait_for "(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker') = 2" 30
qc_check "two workers: both show in pg_stat_activity" \
	"$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker'")" 2
queue_slow 300 100
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0" 60
qc_check "two workers: every request done" "$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE state = 'done'")" 300
qc_check "two workers: every request sent once" "$(sql -c "SELECT qc_test.requests_served()")" 300
qc_check "two workers: every callback called once" \
	"$(sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) FROM qc_restart_seen s")" "300 300"
qc_check "two workers: one audit row per attempt" \
	"$(sql -c "SELECT qc_test.audit_flush();
	            SELECT (SELECT count(*) FROM queryclaw.audit_log a
	                     WHERE a.func = 'api_call_async' AND (a.detail->'request'->>'id')::bigint IN (SELECT id FROM queryclaw.requests))
	                   || ' ' || (SELECT sum(attempts) FROM queryclaw.requests)" | tail -1)" "300 300"
qc_check "two workers: both ran requests" \
	"$(sql -c "SELECT count(DISTINCT a.pid) FROM queryclaw.audit_log a
	            WHERE a.func = 'api_call_async' AND (a.detail->'request'->>'id')::bigint IN (SELECT id FROM queryclaw.requests)")" 2

# Requests cancelled while the two workers have them on the wire: one
# worker's pass over the cancelled requests must not call the callback of
# a request the other has out, which calls it again as the transfer ends.
queue_slow 16 3000
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE state = 'running') = 16" 30
sql -c "GRANT EXECUTE ON FUNCTION queryclaw.cancel_requests(bigint[]) TO $role" -c "SET ROLE $role" \
	-c "SELECT queryclaw.cancel_requests(array_agg(id)) FROM queryclaw.requests" >/dev/null
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE finished_at IS NULL) = 0" 30
sleep 1	# a second callback, if any, comes as the transfers end
qc_check "two workers: a request cancelled on the wire has its callback called once" \
	"$(sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) || ' ' || count(*) FILTER (WHERE s.error = 'cancelled') FROM qc_restart_seen s")" \
	"16 16 16"
sql -c "REVOKE EXECUTE ON FUNCTION queryclaw.cancel_requests(bigint[]) FROM $role" >/dev/null
sql -c "ALTER SYSTEM RESET queryclaw.async_workers" -c "ALTER SYSTEM RESET queryclaw.async_concurrency" >/dev/null
qc_pg_ctl -m fast restart || echo "not ok - the server restarted with one async worker again"

# 5. Responses that came while their callbacks could not run yet (each
# waits for an advisory lock this test holds), when the server stops hard:
# the outcomes were recorded, so the requests are not sent again, POSTs
# without a key included; after the restart each callback runs once, and
# every request ends done.  (When an outcome and its callback committed
# together, the requests were still 'running' at the crash: sent again,
# or failed as interrupted.)
sql >/dev/null <<SQL
ALTER SYSTEM SET queryclaw.callback_timeout = '60s';
SELECT pg_reload_conf();
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE qc_restart_seen;
SELECT qc_test.reset_requests();
CREATE FUNCTION qc_restart_locked(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$
SELECT pg_advisory_xact_lock(4242);
INSERT INTO qc_restart_seen VALUES (id, error);
\$\$;
GRANT EXECUTE ON FUNCTION qc_restart_locked(bigint, jsonb, text, jsonb) TO $role;
SQL
sql -c "SELECT pg_advisory_lock(4242)" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
holder=$!
wait_for "EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted)" 10 ||
	echo "not ok - the test holds the lock the callbacks wait for"
sql >/dev/null <<SQL
BEGIN;
SET LOCAL ROLE $role;
SELECT count(queryclaw.api_call_async(qc_test.url('/flaky?fail=0&run=held-get-' || i),
                                      callback => 'qc_restart_locked(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, 10) i;
SELECT count(queryclaw.api_call_async(qc_test.url('/flaky?fail=0&run=held-post-' || i), 'POST', body => '{}',
                                      callback => 'qc_restart_locked(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, 10) i;
COMMIT;
SQL
wait_for "qc_test.requests_served() >= 20" 30 || echo "not ok - the held requests were answered"
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE waiting = 'callback queued') = 20" 10
qc_check "held callbacks: each answered request waits for its callback, saying so" \
	"$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE state = 'running' AND waiting = 'callback queued'")" 20
qc_pg_ctl -m immediate restart || { echo "not ok - the server restarted"; exit 1; }
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE finished_at IS NULL) = 0" 60
qc_check "held callbacks: every request ended done after the restart" \
	"$(sql -c "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) n FROM queryclaw.requests GROUP BY 1) s")" "done 20"
qc_check "held callbacks: no request was sent again" "$(sql -c "SELECT qc_test.requests_served()")" 20
qc_check "held callbacks: every callback ran once" \
	"$(sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) FROM qc_restart_seen s")" "20 20"
sql -c "ALTER SYSTEM RESET queryclaw.callback_timeout" -c "SELECT pg_reload_conf()" >/dev/null

sql >/dev/null <<SQL
TRUNCATE queryclaw.requests CASCADE;
DROP TABLE qc_restart_seen;
DROP FUNCTION qc_restart_locked(bigint, jsonb, text, jsonb);
DROP FUNCTION qc_restart_note(bigint, jsonb, text, jsonb);
REVOKE ALL ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb) FROM $role;
REVOKE USAGE ON SCHEMA qc_test FROM $role;
DROP ROLE $role;
SQL
