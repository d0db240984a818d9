#!/usr/bin/env bash
# test/bench/audit_load.sh: the durable audit under load (a benchmark, not
# part of `make test`).
#
# 16 pgbench clients make 500 calls each against Debian's nginx on
# loopback, in the database the audit worker writes into: half plain calls,
# a quarter inside transactions that roll back, a quarter refused by the
# policy and caught by a PL/pgSQL block.  Every call must leave its row:
# the script waits for the worker, then checks that count(*) of the new
# audit rows equals the calls made and that the lost counter is 0.
#
# It runs the load with the default queue (8MB) and with the smallest one
# (256kB, so that callers wait for room), then, for comparison, the same
# load in a database the worker does not write into (transactional audit:
# there only the plain calls keep their rows, by design) and with the audit
# off.
# Prints one line of figures per run.  A run with refused calls only (no network) shows how fast the
# worker writes.  Usage: bash test/bench/audit_load.sh  (CLIENTS=, CALLS=)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

CLIENTS=${CLIENTS:-16}
CALLS=${CALLS:-500}

qc_start_bench_with_nginx <<CONF || exit 1
queryclaw.database = 'postgres'
max_connections = 50
CONF
qc_psql -d postgres -q -c "CREATE EXTENSION queryclaw_ext" || exit 1
qc_psql -d postgres -q -c "CREATE DATABASE transactional" -c "ALTER SYSTEM SET log_min_messages = fatal" \
	-c "SELECT pg_reload_conf()" >/dev/null || exit 1
qc_psql -d transactional -q -c "CREATE EXTENSION queryclaw_ext" || exit 1

scripts="$QC_WORK/bench"
mkdir -p "$scripts"
echo "SELECT queryclaw.web_fetch('$base/small.json');" >"$scripts/plain.sql"
printf 'BEGIN;\nSELECT queryclaw.web_fetch('"'"'%s/small.json?in=rollback'"'"');\nROLLBACK;\n' "$base" >"$scripts/rollback.sql"
cat >"$scripts/refused.sql" <<'SQL'
DO $$ BEGIN PERFORM queryclaw.web_fetch('http://10.0.0.1/'); EXCEPTION WHEN insufficient_privilege THEN NULL; END $$;
SQL
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$scripts"

# Transactions pgbench ran with script number $2 (0: the first -f), from
# its per-transaction logs $1.*: exact, where its summary's per-script
# counts can miss one.
script_count() {
	cat "$1".* | awk -v n="$2" '$4 == n { c++ } END { print c + 0 }'
}

# Wait (at most 30 s) until the worker has written every record.
wait_for_worker() {
	qc_psql -d postgres -At -c "$(qc_sql_wait_for_audit)" >/dev/null
}

# lost and waits so far (they count from server start)
counters() {
	qc_psql -d postgres -At -F ' ' -c "SELECT lost, waits FROM queryclaw.audit_status()"
}

# One run in database $2, labelled $1, expecting rows for all calls, the
# plain ones (the first script) only, or none ($3); the mix of scripts is
# $4; prints figures.
run() {
	local label=$1 db=$2 expect=$3 mix=$4 log="$QC_WORK/pgbench-$1.log"
	local before after calls start secs drained want lost0 waits0 lost waits
	before=$(qc_psql -d "$db" -At -c "SELECT count(*) FROM queryclaw.audit_log")
	read -r lost0 waits0 < <(counters)
	start=$(date +%s.%N)
	runs=$((runs + 1))
	qc_as_pg "$QC_BINDIR/pgbench" -h "$QC_WORK" -p 5432 -n -c "$CLIENTS" -j 4 -t "$CALLS" \
		-l --log-prefix="$QC_WORK/bench/txlog-$runs" $mix "$db" >"$log" 2>&1 || { cat "$log"; return 1; }
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	calls=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log")
	wait_for_worker
	drained=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	after=$(qc_psql -d "$db" -At -c "SELECT count(*) FROM queryclaw.audit_log")
	case $expect in
		all) want=$calls ;;
		plain) want=$(script_count "$QC_WORK/bench/txlog-$runs" 0) ;;
		none) want=0 ;;
	esac
	read -r lost waits < <(counters)
	[ -n "$label" ] || return 0
	printf '%-26s calls %5d  seconds %5.2f  calls/s %5.0f  rows %5d (expected %5d: %s)  all written at %5.2f s  lost %d  waits %d\n' \
		"$label" "$calls" "$secs" "$(awk -v c="$calls" -v s="$secs" 'BEGIN { print c / s }')" \
		"$((after - before))" "$want" "$([ "$((after - before))" -eq "$want" ] && echo ok || echo MISMATCH)" \
		"$drained" "$((lost - lost0))" "$((waits - waits0))"
	if [ "$((after - before))" -ne "$want" ]; then
		qc_psql -d "$db" -c "SELECT func, split_part(url, '?', 2) AS query, outcome, count(*)
			FROM queryclaw.audit_log GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
	fi
}

runs=0
mix="-f $scripts/plain.sql@2 -f $scripts/rollback.sql@1 -f $scripts/refused.sql@1"
qc_log "$CLIENTS clients x $CALLS calls"
run "" postgres all "$mix"	# warm-up, not shown
run "durable, queue 8MB" postgres all "$mix"
# no network: callers as fast as they can be, so the worker is the limit
run "durable, refused only" postgres all "-f $scripts/refused.sql"
qc_psql -d postgres -q -c "ALTER SYSTEM SET queryclaw.audit_queue_size = '256kB'" || exit 1
qc_restart_cluster || exit 1
# the worker starts with the server; give it its first connection
qc_psql -d postgres -At -c "DO \$\$ BEGIN FOR i IN 1..500 LOOP EXIT WHEN (SELECT worker_pid FROM queryclaw.audit_status()) IS NOT NULL; PERFORM pg_sleep(0.02); END LOOP; END \$\$" >/dev/null
run "" postgres all "$mix"
run "durable, queue 256kB" postgres all "$mix"
run "transactional (other db)" transactional plain "$mix"
qc_psql -d postgres -q -c "ALTER SYSTEM SET queryclaw.audit = off" -c "SELECT pg_reload_conf()" >/dev/null
run "audit off" postgres none "$mix"
