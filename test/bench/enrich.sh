#!/usr/bin/env bash
# test/bench/enrich.sh: an enrichment's costs beside what the same work
# costs without it, measured in the same run (part of `make bench`).
#
# Starts Debian's nginx on a free loopback port (/delay answers after
# 20 ms) and a scratch cluster with the library preloaded and one async
# worker (64 in flight), then prints, for each part PARTS names (all
# three by default; the tables, the hand-written callback and the
# enrichments belong to a role granted queryclaw_user, as a user's would,
# so that row-level security costs what it costs them):
#   backfill
#     1. the floor: 10,000 GETs of /delay from curl, 64 in flight;
#     2. the same 10,000 requests (one URL a row) queued with
#        api_call_async and a hand-written callback that writes the row:
#        seconds from the start of the statement that queues them until
#        every row is written (what the user waits for), and from its
#        commit;
#     3. an enrichment's backfill of the same 10,000 rows, from the start
#        of create_enrichment, which queues them (target: 1.3x the floor,
#        1.1x the hand-written queue), and the most of its requests in
#        queryclaw.requests at any moment (target: about 1,000);
#   triggers (the enrichment paused: the trigger's cost alone; each
#   measured REPEAT times, 3 by default, with and without back to back, by
#   the clock and by the backend's CPU time; the least and the median of
#   the differences)
#     4. a live INSERT of 10,000 rows into the enriched table beside the
#        same INSERT into the same table without an enrichment, µs a row
#        (target: 30 over);
#     5. an UPDATE of a column that is not an input, 10,000 rows, with and
#        without the enrichment, µs a row (target: 5 over);
#   big
#     6. a backfill of ROWS rows (50,000 by default; ROWS=1000000 for the
#        million-row run) to /small.json (answered at once): the worker's
#        memory (RSS and RssAnon from /proc) and the queue's size as it
#        goes, and another role's single request's time from its queueing
#        to its final state, every few seconds (target: under 1 s); and the
#        most of each seen over the run.
# Only loopback is contacted.  It prints figures and asserts nothing.
# Examples: PARTS=triggers bash test/bench/enrich.sh;
#           PARTS=big ROWS=1000000 bash test/bench/enrich.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/benchlib.sh"

BIG=${ROWS:-${QC_BENCH_ENRICH_ROWS:-50000}}
PARTS=${PARTS:-backfill triggers big}
REPEAT=${REPEAT:-3}
part() { [[ " $PARTS " == *" $1 "* ]]; }

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
-- what users are: a role granted queryclaw_user, under row-level security
CREATE ROLE bench_owner;
GRANT queryclaw_user TO bench_owner;
-- its backend's CPU from /proc, and its own tables beside the enriched one
GRANT pg_read_server_files TO bench_owner;
GRANT EXECUTE ON FUNCTION pg_read_file(text) TO bench_owner;
GRANT CREATE ON SCHEMA public TO bench_owner;
ALTER TABLE hand OWNER TO bench_owner;
ALTER TABLE enriched OWNER TO bench_owner;
ALTER FUNCTION hand_done(bigint, jsonb, text, jsonb) OWNER TO bench_owner;
SQL
# SQL run as the tables' and the enrichments' owner
as_owner() { qc_psql -q -d postgres -c "SET ROLE bench_owner" "$@"; }
sleep 2
echo "machine: $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///')"

# Wait until the SQL condition $1 holds; seconds since $2 (epoch ns).  A
# statement every 50 ms, as the enrichment's wait below: a loop inside one
# statement would hold back the pruning of the rows the run updates.
seconds_until() {
	while [ "$(qc_psql -At -d postgres -c "SELECT $1")" != t ]; do
		sleep 0.05
	done
	awk -v a="$2" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

bench_request='$$queryclaw.api_call_request(url)$$'
bench_apply='$$status = (result ->> '"'"'status'"'"')::int$$'

if part backfill; then
	floor=$(curl_floor 10000)
	echo "floor: 10000 GETs of a 20 ms endpoint from curl, 64 in flight: $floor s"

	cpu=$(worker_cpu)
	start=$(date +%s%N)
	as_owner -c "SELECT count(queryclaw.api_call_async(url, callback => 'hand_done(bigint,jsonb,text,jsonb)',
	                                     context => jsonb_build_object('id', id))) FROM hand" >/dev/null
	committed=$(date +%s%N)
	hand=$(seconds_until "(SELECT count(*) FROM hand WHERE status IS NULL) = 0" "$start")
	echo "api_call_async with a hand-written callback, 10000 rows: $hand s ($(awk -v a="$committed" -v h="$hand" -v s="$start" 'BEGIN { printf "%.2f", h - (a - s) / 1e9 }') s from its commit; worker CPU $(awk -v a="$cpu" -v b="$(worker_cpu)" 'BEGIN { printf "%.2f", b - a }') s): $(ratio "$hand" "$floor") the floor"

	qc_psql -q -d postgres -c "TRUNCATE queryclaw.requests CASCADE" -c "VACUUM ANALYZE queryclaw.requests"
	cpu=$(worker_cpu)
	start=$(date +%s%N)
	as_owner -c "SELECT queryclaw.create_enrichment('bench', 'enriched',
	        request => $bench_request, apply => $bench_apply)" >/dev/null
	peak=0
	while [ "$(qc_psql -At -d postgres -c "SELECT stale + running FROM queryclaw.enrichments")" != 0 ]; do
		n=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying')")
		[ "${n:-0}" -gt "$peak" ] && peak=$n
		sleep 0.05
	done
	backfill=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	echo "enrichment backfill, 10000 rows: $backfill s (worker CPU $(awk -v a="$cpu" -v b="$(worker_cpu)" 'BEGIN { printf "%.2f", b - a }') s): $(ratio "$backfill" "$floor") the floor (target 1.3x), $(ratio "$backfill" "$hand") the hand-written queue (target 1.1x); at most $peak of its requests in queryclaw.requests (target: about 1000)"
	qc_psql -At -d postgres -c "SELECT 'rows done: ' || done || ', failed: ' || failed || ', calls: ' || calls FROM queryclaw.enrichments"
fi

# The trigger's cost: INSERT and UPDATE with the enrichment (paused, so the
# worker stays out of it) and without, back to back, REPEAT times; each
# timed by the clock and by the backend's CPU time (user + system, from
# /proc: what other work on a shared machine does not inflate).
# "wall_ms cpu_ms" of statement $1, after $2 (not timed).
ms_of() {
	qc_psql -q -At -d postgres <<SQL | tail -1
SET ROLE bench_owner;
$2
SELECT clock_timestamp() AS t0, $(qc_sql_cpu_ticks 'pg_backend_pid()') AS c0 \gset
$1;
SELECT round(1000 * extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1) || ' ' ||
       round(($(qc_sql_cpu_ticks 'pg_backend_pid()') - :c0) * 1000.0 / $(getconf CLK_TCK), 1);
SQL
}
# "$1 ms with, $2 ms without": the µs a row over, for 10,000 rows.
over() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 10 }'; }
# The least and the median of the numbers on standard input.
min_median() { sort -g | awk '{ v[NR] = $1 } END { printf "min %s, median %s", v[1], v[int((NR + 1) / 2)] }'; }
# $1: what; $2, $3: the statement on the enriched table and on the plain
# one; $4, $5: what runs before each (not timed).
trigger_cost() {
	local walls="" cpus="" with without
	for i in $(seq "$REPEAT"); do
		with=$(ms_of "$2" "$4")
		without=$(ms_of "$3" "$5")
		echo "  $1, run $i: ${with% *} ms with the enrichment, ${without% *} ms without: $(over "${with% *}" "${without% *}") µs a row over; backend CPU ${with#* } ms and ${without#* } ms: $(over "${with#* }" "${without#* }") µs a row over"
		walls="$walls $(over "${with% *}" "${without% *}")"
		cpus="$cpus $(over "${with#* }" "${without#* }")"
	done
	echo "$1: $(echo $walls | tr ' ' '\n' | min_median) µs a row over the same without it by the clock; $(echo $cpus | tr ' ' '\n' | min_median) by the backend's CPU time; of $REPEAT runs"
}
if part triggers; then
	if ! part backfill; then
		as_owner -c "SELECT queryclaw.create_enrichment('bench', 'enriched',
		        request => $bench_request, apply => $bench_apply, backfill => false)" >/dev/null
	fi
	as_owner -c "SELECT queryclaw.pause_enrichment('bench')" >/dev/null \
		-c "CREATE TABLE plain (LIKE enriched INCLUDING ALL)" \
		-c "INSERT INTO plain SELECT * FROM enriched WHERE id <= 10000"
	trigger_cost "live INSERT of 10000 rows (target 30)" \
		"INSERT INTO enriched SELECT i, '$base/delay?row=' || i FROM generate_series(20001, 30000) i" \
		"INSERT INTO plain SELECT i, '$base/delay?row=' || i FROM generate_series(20001, 30000) i" \
		"DELETE FROM enriched WHERE id > 20000; VACUUM enriched;" "DELETE FROM plain WHERE id > 20000; VACUUM plain;"
	trigger_cost "UPDATE of a column that is not an input, 10000 rows (target 5)" \
		"UPDATE enriched SET note = 'n' || id || random() WHERE id <= 10000" \
		"UPDATE plain SET note = 'n' || id || random() WHERE id <= 10000" "VACUUM enriched;" "VACUUM plain;"
fi
as_owner -c "SELECT queryclaw.drop_enrichment(name) FROM queryclaw.enrichments" >/dev/null
qc_psql -q -d postgres -c "TRUNCATE queryclaw.requests CASCADE" >/dev/null

# A big backfill: memory flat, the queue bounded, another role served.
part big || exit 0
qc_psql -q -d postgres <<SQL
CREATE TABLE big (id int PRIMARY KEY, status int);
INSERT INTO big SELECT generate_series(1, $BIG);
ALTER TABLE big OWNER TO bench_owner;
CREATE ROLE bench_other;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.wait(bigint[], interval) TO bench_other;
SQL
as_owner -c "SELECT queryclaw.create_enrichment('big', 'big',
        request => \$\$queryclaw.api_call_request('$base/small.json?row=' || id)\$\$,
        apply => \$\$status = (result ->> 'status')::int\$\$)" >/dev/null
start=$(date +%s%N)
echo "backfill of $BIG rows to an endpoint that answers at once:"
max_queue=0 max_other=0 max_rows=0
while :; do
	left=$(qc_psql -At -d postgres -c "SELECT stale + running FROM queryclaw.enrichments")
	queue=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying')")
	rows=$(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests")
	other=$(qc_psql -q -At -d postgres <<SQL
SET ROLE bench_other;
SELECT queryclaw.api_call_async('$base/small.json?other') AS rid \gset
SELECT round(1000 * extract(epoch FROM finished_at - created_at)::numeric)
  FROM queryclaw.wait(ARRAY[:rid]::bigint[], '30 s');
SQL
)
	[ "${queue:-0}" -gt "$max_queue" ] && max_queue=$queue
	[ "${rows:-0}" -gt "$max_rows" ] && max_rows=$rows
	[ "${other:-0}" -gt "$max_other" ] && max_other=$other
	echo "  $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%5.0f", (b - a) / 1e9 }') s: $left rows left, $queue requests unfinished ($rows rows in queryclaw.requests); worker $(worker_rss); another role's request final after ${other} ms"
	[ "$left" = 0 ] && break
	sleep 5
done
echo "  $BIG rows in $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.0f", (b - a) / 1e9 }') s; at most $max_queue requests unfinished, $max_rows rows in queryclaw.requests; another role's request final after $max_other ms at most"
