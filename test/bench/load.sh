#!/usr/bin/env bash
# test/bench/load.sh: many sessions at once (`make bench-load`).
#
# Starts Debian's nginx on loopback and a scratch cluster with a private
# install of the extension, then runs pgbench: QC_LOAD_CLIENTS clients
# (default 16) for QC_LOAD_SECONDS (default 60), each transaction one of
#   fetch    web_fetch of a 60 KB HTML page, turned into text
#   api      api_call of a small JSON document
#   batch    web_fetch_many of 4 URLs, one of them refused (10.0.0.1)
#   refused  web_fetch of http://10.0.0.1/, refused before any packet is
#            sent, the error caught in a PL/pgSQL exception block
# Then prints calls, tps, errors (failed or aborted transactions, and
# ERROR lines in the server log: the refusals are caught, so any is
# unexpected), crashes ("terminated by signal" in the server log), and
# audit rows against the number expected, and exits non-zero unless there
# are no errors, no crashes and exactly the expected rows.
#
# Audit rows: in the database the audit worker writes into
# (queryclaw.database, default postgres) every call leaves its row, the
# caught refusals included.  QC_LOAD_DATABASE=other runs the load in
# another database, where rows are written in the caller's transaction: the
# row of a refusal caught by an exception block is rolled back with the
# block's subtransaction, while a batch records its refusal without raising,
# so that row stays.  The expected count follows audit_status().durable.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

CLIENTS=${QC_LOAD_CLIENTS:-16}
SECONDS_=${QC_LOAD_SECONDS:-60}
DATABASE=${QC_LOAD_DATABASE:-postgres}

# The transaction mix: script name, weight, calls it makes, and how many
# of them leave an audit row when rows are written in the caller's
# transaction (with the durable audit, every call leaves one).
MIX=(
	"fetch 4 1 1"
	"api 4 1 1"
	"batch 1 4 4"
	"refused 1 1 0"
)

qc_start_bench_with_nginx <<CONF || exit 1
max_connections = $((CLIENTS + 10))
CONF
[ "$DATABASE" = postgres ] || qc_psql -q -d postgres -c "CREATE DATABASE $DATABASE" || exit 1

qc_psql -q -d "$DATABASE" <<SQL || exit 1
CREATE EXTENSION queryclaw_ext;
-- a refusal caught the way an application would catch it
CREATE FUNCTION refused_call(url text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM queryclaw.web_fetch(url);
    RETURN 'not refused';
EXCEPTION WHEN insufficient_privilege THEN
    RETURN SQLERRM;
END \$\$;
SQL

scripts="$QC_WORK/pgbench"
mkdir -p "$scripts"
cat >"$scripts/fetch.sql" <<SQL
SELECT length(queryclaw.web_fetch('$base/page.html'));
SQL
cat >"$scripts/api.sql" <<SQL
SELECT queryclaw.api_call('$base/small.json') -> 'body' -> 'n';
SQL
cat >"$scripts/batch.sql" <<SQL
SELECT count(error) FROM queryclaw.web_fetch_many(ARRAY['$base/small.json', '$base/page.html', 'http://10.0.0.1/', '$base/small.json']);
SQL
cat >"$scripts/refused.sql" <<SQL
SELECT refused_call('http://10.0.0.1/');
SQL
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$scripts"

args=()
for entry in "${MIX[@]}"; do
	read -r name weight _ _ <<<"$entry"
	args+=(-f "$scripts/$name.sql@$weight")
done

durable=$(qc_psql -At -d "$DATABASE" -c "SELECT durable FROM queryclaw.audit_status()")
echo "machine: $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///'); $CLIENTS clients for ${SECONDS_}s;" \
	"database $DATABASE, audit $([ "$durable" = t ] && echo durable || echo "in the caller's transaction")"
qc_as_pg "$QC_BINDIR/pgbench" -h "$QC_WORK" -p 5432 -n -c "$CLIENTS" -j "$(nproc)" \
	-T "$SECONDS_" -l --log-prefix="$scripts/tx" "${args[@]}" "$DATABASE" >"$QC_WORK/pgbench.log" 2>&1
pgbench_rc=$?

# The transactions of each script, from pgbench's per-transaction logs
# (script number in the 4th field): exact, where its summary can miss one.
calls=0
expected=0
transactions=0
script=0
for entry in "${MIX[@]}"; do
	read -r name _ ncalls nrows <<<"$entry"
	n=$(cat "$scripts"/tx.* | awk -v s="$script" '$4 == s && $3 != "failed" { c++ } END { print c + 0 }')
	printf '  %-8s %8d transactions\n' "$name" "$n"
	[ "$durable" = t ] && nrows=$ncalls
	transactions=$((transactions + n))
	calls=$((calls + n * ncalls))
	expected=$((expected + n * nrows))
	script=$((script + 1))
done

# The audit worker writes a moment after each call: wait (at most 30 s)
# until it has written everything queued.
if [ "$durable" = t ]; then
	qc_psql -d "$DATABASE" -At -c "$(qc_sql_wait_for_audit)" >/dev/null
fi
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$QC_WORK/pgbench.log" | head -1)
latency=$(sed -n 's/^latency average = //p' "$QC_WORK/pgbench.log")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$QC_WORK/pgbench.log")
aborted=$(grep -c 'aborted in command' "$QC_WORK/pgbench.log")
log_errors=$(grep -c ' ERROR: ' "$QC_WORK/postgres.log")
crashes=$(grep -c 'terminated by signal' "$QC_WORK/postgres.log")
rows=$(qc_psql -At -d "$DATABASE" -c "SELECT count(*) FROM queryclaw.audit_log")
errors=$((${failed:-0} + aborted + log_errors))

echo "transactions: $transactions; calls: $calls; tps: ${tps:-?}; latency average: ${latency:-?}"
echo "errors: $errors (failed transactions ${failed:-?}, aborted clients $aborted, server log ERRORs $log_errors)"
echo "crashes: $crashes"
echo "audit rows: $rows, expected $expected"
if [ "$pgbench_rc" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$crashes" -ne 0 ] || [ "$rows" -ne "$expected" ]; then
	echo "FAILED (pgbench exit status $pgbench_rc); pgbench's output:"
	cat "$QC_WORK/pgbench.log"
	grep -E 'ERROR|terminated' "$QC_WORK/postgres.log" | sort | uniq -c | sort -rn | head -20
	exit 1
fi
