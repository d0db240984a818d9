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
# The cluster preloads the extension, so the audit worker commits every
# row, including those of refusals whose exception block rolled back; with
# audit rows written in the caller's transaction instead (no preload, or
# another database), run it with QC_REFUSED_ROWS_SURVIVE=0.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
QC_PACKAGES="$QC_PACKAGES $QC_NGINX_PACKAGES"

CLIENTS=${QC_LOAD_CLIENTS:-16}
SECONDS_=${QC_LOAD_SECONDS:-60}
REFUSED_ROWS_SURVIVE=${QC_REFUSED_ROWS_SURVIVE:-1}

# The transaction mix: script name, weight, calls it makes, and how many
# of them leave an audit row that survives.
MIX=(
	"fetch 4 1 1"
	"api 4 1 1"
	"batch 1 4 4"
	"refused 1 1 $REFUSED_ROWS_SURVIVE"
)

qc_install_deps || exit 1
qc_make_workdir
qc_build_private || exit 1
qc_start_nginx || exit 1
base="http://127.0.0.1:$QC_NGINX_PORT"
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:${base##*:}'
max_connections = $((CLIENTS + 10))
CONF

qc_psql -q -d postgres <<SQL || exit 1
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
chmod -R a+rX "$scripts"

args=()
for entry in "${MIX[@]}"; do
	read -r name weight _ _ <<<"$entry"
	args+=(-f "$scripts/$name.sql@$weight")
done

echo "machine: $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///'); $CLIENTS clients for ${SECONDS_}s"
qc_as_pg "$QC_BINDIR/pgbench" -h "$QC_WORK" -p 5432 -n -c "$CLIENTS" -j "$(nproc)" \
	-T "$SECONDS_" "${args[@]}" postgres >"$QC_WORK/pgbench.log" 2>&1
pgbench_rc=$?

# Per script: "SQL script N: PATH" is followed by its transaction count.
calls=0
expected=0
transactions=0
for entry in "${MIX[@]}"; do
	read -r name _ ncalls nrows <<<"$entry"
	n=$(sed -n "/^SQL script [0-9]*: .*\/$name.sql/,/transactions/s/^ - \([0-9]*\) transactions.*/\1/p" "$QC_WORK/pgbench.log")
	n=${n:-0}
	printf '  %-8s %8d transactions\n' "$name" "$n"
	transactions=$((transactions + n))
	calls=$((calls + n * ncalls))
	expected=$((expected + n * nrows))
done
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$QC_WORK/pgbench.log" | head -1)
latency=$(sed -n 's/^latency average = //p' "$QC_WORK/pgbench.log")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$QC_WORK/pgbench.log")
aborted=$(grep -c 'aborted in command' "$QC_WORK/pgbench.log")
log_errors=$(grep -c ' ERROR: ' "$QC_WORK/postgres.log")
crashes=$(grep -c 'terminated by signal' "$QC_WORK/postgres.log")
# the audit worker commits the rows: wait (at most 30 s) until it has all
for _ in $(seq 300); do
	[ "$(qc_psql -At -d postgres -c "SELECT queued = written FROM queryclaw.audit_status()")" = t ] && break
	sleep 0.1
done
rows=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.audit_log")
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
