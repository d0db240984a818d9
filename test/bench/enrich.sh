#!/usr/bin/env bash
# test/bench/enrich.sh: an enrichment's costs beside what the same work
# costs without it, measured in the same run (part of `make bench`).
#
# Starts Debian's nginx on a free loopback port (/delay answers after
# 20 ms) and a scratch cluster with the library preloaded and one async
# worker (64 in flight), then prints:
#   1. the floor: 10,000 GETs of /delay from curl, 64 in flight;
#   2. the same 10,000 requests (one URL a row) queued with api_call_async
#      and a hand-written callback that writes the row: seconds from the
#      commit until every row is written;
#   3. an enrichment's backfill of the same 10,000 rows (target: 1.3x the
#      floor, 1.1x the hand-written queue), and the most of its requests
#      in queryclaw.requests at any moment (target: about 1,000);
#   4. a live INSERT of 10,000 rows into the enriched table (enrichment
#      paused: the trigger's cost alone) beside the same INSERT into the
#      same table without an enrichment, µs a row (target: 30 over);
#   5. an UPDATE of a column that is not an input, 10,000 rows, with and
#      without the enrichment, µs a row (target: 5 over);
#   6. a backfill of QC_BENCH_ENRICH_ROWS rows (1,000,000 by default) to
#      /small.json (answered at once): the worker's memory and the queue's
#      size as it goes, and another role's single request's time from its
#      queueing to its final state, every few seconds (target: under 1 s).
# Only loopback is contacted.  It prints figures and asserts nothing.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/benchlib.sh"

BIG=${QC_BENCH_ENRICH_ROWS:-1000000}

qc_start_bench_with_nginx <<CONF || exit 1
queryclaw.max_host_concurrency = 64
queryclaw.async_concurrency = 64
queryclaw.database = 'postgres'
CONF
qc_psql -q -d postgres <<SQL
CREATE EXTENSION queryclaw_ext;
CREATE TABLE hand (id int PRIMARY KEY, url text, status int);
CREATE TABLE enriched (id int PRIMARY KEY, url text, status int, note text);
INSERT INTO hand SELECT i, '$base/delay?row=' || i FROM generate_series(1, 10000) i;
INSERT INTO enriched SELECT * FROM hand;
CREATE FUNCTION hand_done(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS \$\$ UPDATE hand SET status = (result ->> 'status')::int WHERE id = (context ->> 'id')::int \$\$;
SQL
sleep 2
echo "machine: $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///')"

# Wait until the SQL condition $1 holds; seconds since $2 (epoch ns).
seconds_until() {
	qc_psql -q -At -d postgres -c "DO \$\$ BEGIN WHILE NOT ($1) LOOP PERFORM pg_sleep(0.01); END LOOP; END \$\$"
	awk -v a="$2" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

floor=$(curl_floor 10000)
echo "floor: 10000 GETs of a 20 ms endpoint from curl, 64 in flight: $floor s"

cpu=$(worker_cpu)
qc_psql -q -d postgres -c "SELECT count(queryclaw.api_call_async(url, callback => 'hand_done(bigint,jsonb,text,jsonb)',
                                     context => jsonb_build_object('id', id))) FROM hand" >/dev/null
start=$(date +%s%N)
hand=$(seconds_until "(SELECT count(*) FROM hand WHERE status IS NULL) = 0" "$start")
echo "api_call_async with a hand-written callback, 10000 rows: $hand s (worker CPU $(awk -v a="$cpu" -v b="$(worker_cpu)" 'BEGIN { printf "%.2f", b - a }') s): $(ratio "$hand" "$floor") the floor"

qc_psql -q -d postgres -c "TRUNCATE queryclaw.requests CASCADE" -c "VACUUM ANALYZE queryclaw.requests"
cpu=$(worker_cpu)
start=$(date +%s%N)
qc_psql -q -d postgres -c "SELECT queryclaw.create_enrichment('bench', 'enriched',
        request => \$\$queryclaw.api_call_request(url)\$\$, apply => \$\$status = (result ->> 'status')::int\$\$)" >/dev/null
peak=0
while [ "$(qc_psql -At -d postgres -c "SELECT stale + running FROM queryclaw.enrichments")" != 0 ]; do
	n=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying')")
	[ "${n:-0}" -gt "$peak" ] && peak=$n
	sleep 0.05
done
backfill=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
echo "enrichment backfill, 10000 rows: $backfill s (worker CPU $(awk -v a="$cpu" -v b="$(worker_cpu)" 'BEGIN { printf "%.2f", b - a }') s): $(ratio "$backfill" "$floor") the floor (target 1.3x), $(ratio "$backfill" "$hand") the hand-written queue (target 1.1x); at most $peak of its requests in queryclaw.requests (target: about 1000)"
qc_psql -At -d postgres -c "SELECT 'rows done: ' || done || ', failed: ' || failed || ', calls: ' || calls FROM queryclaw.enrichments"

# The trigger's cost: INSERT and UPDATE with the enrichment (paused, so the
# worker stays out of it) and without, each the best of three.
best_ms() {
	local best=""
	for _ in 1 2 3; do
		t=$(qc_psql -q -At -d postgres <<SQL | tail -1
$2
SELECT clock_timestamp() AS t0 \gset
$1;
SELECT round(1000 * extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1);
SQL
)
		best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
	done
	echo "$best"
}
qc_psql -q -d postgres -c "SELECT queryclaw.pause_enrichment('bench')" -c "CREATE TABLE plain (LIKE enriched INCLUDING ALL)"
with=$(best_ms "INSERT INTO enriched SELECT i, '$base/delay?row=' || i FROM generate_series(20001, 30000) i" \
	"DELETE FROM enriched WHERE id > 20000;")
without=$(best_ms "INSERT INTO plain SELECT i, '$base/delay?row=' || i FROM generate_series(20001, 30000) i" \
	"DELETE FROM plain WHERE id > 20000;")
echo "live INSERT of 10000 rows: $with ms with the enrichment, $without ms without: $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.1f", (a - b) / 10 }') µs a row over (target 30)"
qc_psql -q -d postgres -c "INSERT INTO plain SELECT * FROM enriched WHERE id <= 10000"
with=$(best_ms "UPDATE enriched SET note = 'n' || id WHERE id <= 10000" "")
without=$(best_ms "UPDATE plain SET note = 'n' || id WHERE id <= 10000" "")
echo "UPDATE of a column that is not an input, 10000 rows: $with ms with the enrichment, $without ms without: $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.1f", (a - b) / 10 }') µs a row over (target 5)"
qc_psql -q -d postgres -c "SELECT queryclaw.drop_enrichment('bench')" -c "TRUNCATE queryclaw.requests CASCADE"

# A big backfill: memory flat, the queue bounded, another role served.
qc_psql -q -d postgres <<SQL
CREATE TABLE big (id int PRIMARY KEY, status int);
INSERT INTO big SELECT generate_series(1, $BIG);
CREATE ROLE bench_other;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.wait(bigint[], interval) TO bench_other;
SQL
qc_psql -q -d postgres -c "SELECT queryclaw.create_enrichment('big', 'big',
        request => \$\$queryclaw.api_call_request('$base/small.json?row=' || id)\$\$,
        apply => \$\$status = (result ->> 'status')::int\$\$)" >/dev/null
start=$(date +%s%N)
echo "backfill of $BIG rows to an endpoint that answers at once:"
while :; do
	left=$(qc_psql -At -d postgres -c "SELECT stale + running FROM queryclaw.enrichments")
	queue=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying')")
	other=$(qc_psql -q -At -d postgres <<SQL
SET ROLE bench_other;
SELECT queryclaw.api_call_async('$base/small.json?other') AS rid \gset
SELECT round(1000 * extract(epoch FROM finished_at - created_at)::numeric)
  FROM queryclaw.wait(ARRAY[:rid]::bigint[], '30 s');
SQL
)
	echo "  $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%5.0f", (b - a) / 1e9 }') s: $left rows left, $queue requests unfinished; worker $(worker_rss); another role's request final after ${other} ms"
	[ "$left" = 0 ] && break
	sleep 5
done
echo "  $BIG rows in $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.0f", (b - a) / 1e9 }') s"
