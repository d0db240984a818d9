#!/usr/bin/env bash
# test/worker_database.sh: the audit, async and callback workers while
# queryclaw.database does not exist yet (run by test/run.sh between its
# clusters, on a cluster of its own).
#
# A DBA may set queryclaw.database before creating the database, as
# pg_regress does.  Each worker's first start fails to connect (one FATAL
# line each); the next start, bgw_restart_time later, connects to no
# database and waits for it, with a growing pause and one log line, not a
# FATAL line every few seconds.  While it waits it shows in
# pg_stat_activity with no database and obeys SIGTERM at once; once the
# database is created, every worker connects to it.  Prints TAP-style
# "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory and the bin directory (test/lib.sh's
# QC_WORK, QC_BINDIR), with no cluster running.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_BINDIR=$2
db=qc_created_later
log="$QC_WORK/postgres.log"
from=$(cat "$log" 2>/dev/null | wc -c)

# How many lines the server logged since this cluster started that hold $1.
logged() {
	tail -c +$((from + 1)) "$log" | grep -c -F -- "$1"
}

# Run SQL in database postgres, as the superuser; rows unaligned.
sql() {
	qc_as_pg "$QC_BINDIR/psql" -X -q -At -h "$QC_WORK" -p 5432 -d postgres -c "$1"
}

# Poll (every 0.1 s, at most $2 s) until the SQL condition $1 holds.
until_true() {
	for _ in $(seq $(($2 * 10))); do
		[ "$(sql "SELECT $1")" = t ] && return 0
		sleep 0.1
	done
	return 1
}

# The SQL condition: the four workers are there, connected to database
# $1 (NULL: to none).
workers_in() {
	echo "(SELECT count(*) FROM pg_stat_activity
	        WHERE backend_type IN ('queryclaw audit writer', 'queryclaw async worker',
	                               'queryclaw callback worker', 'queryclaw enrichment worker')
	          AND datname IS NOT DISTINCT FROM $1) = 4"
}

qc_start_cluster database-wait <<CONF || { echo "not ok - a cluster whose queryclaw.database does not exist starts"; exit 1; }
queryclaw.database = '$db'
queryclaw.async_workers = 1
CONF

# No session connects before the workers have started again (5 s on):
# the first one builds the shared relation cache's file, which a worker
# connected to no database must do without.  Then a quiet time, while
# the pause between two looks grows.
sleep 12
until_true "$(workers_in NULL)" 10
qc_check "the workers wait for the database, connected to none" "$?" 0
qc_check "each worker's first start failed to connect, once" \
	"$(logged "FATAL:  database \"$db\" does not exist")" 4
qc_check "and was started again once" "$(logged "exited with exit code 1")" 4
qc_check "each waiting worker logged one line" "$(logged "is waiting for database \"$db\" to exist")" 4
qc_check "pg_stat_activity shows them waiting" \
	"$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'queryclaw %'
	          AND wait_event IN ('QueryclawDatabaseWait', 'Extension')")" 4

pid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker'")
sql "SELECT pg_terminate_backend($pid)" >/dev/null
until_true "NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)" 1
qc_check "a waiting worker stops at once on SIGTERM" "$?" 0

sql "CREATE DATABASE $db"
until_true "$(workers_in "'$db'")" 90
qc_check "once the database exists, every worker connects to it" "$?" 0
qc_check "no other failure to connect was logged" "$(logged "FATAL")" 4
qc_check "each worker said it found the database" "$(logged "found database \"$db\"")" 4
qc_stop_cluster
