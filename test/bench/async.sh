#!/usr/bin/env bash
# test/bench/async.sh: the async queue's throughput beside the raw floor and
# pg_net, and the worker's latency, waiting cost and memory (part of
# `make bench`).
#
# Starts Debian's nginx on a free loopback port (/delay answers after 20 ms)
# and a scratch cluster with the library preloaded and one async worker
# (with pg_net preloaded too when a build of it is at hand: see
# pgnet_install in benchlib.sh), then:
#   0. fills queryclaw.audit_log to QC_BENCH_AUDIT_ROWS (250,000) rows, as
#      a production log would hold: after a warm-up batch of 1,000 requests,
#      its last row is copied by one INSERT ... SELECT run as the table's
#      owner (the bootstrap superuser, who created the extension), the
#      copies dated 0.3 s apart going back (about 21 hours), then VACUUM
#      ANALYZE; the requests measured below add their own rows to it.
#   1. throughput, QC_BENCH_RUNS (3) iterations, min and median of each
#      figure; each queue run right after a run of the raw floor at the
#      same concurrency (test/bench/floor.c: the same 10,000 GETs of /delay
#      on as many keep-alive connections, nothing else; 10,000 x 20 ms / 64
#      is 3.1 s), the ratio taken run by run.  Each queue run queues 10,000
#      api_call_async to /delay in one INSERT ... SELECT, committed alone,
#      and times from the commit until every request is final (with a
#      callback: until every callback, bench_note, has written its row):
#        - with a callback, 64 in flight (async_concurrency and
#          max_host_concurrency 64);
#        - without a callback, 64 in flight;
#        - with a callback, 256 in flight (both settings 256);
#      each on a fresh queue (TRUNCATE) and then on the queue that batch
#      drained (its 10,000 final requests kept, as async_retention keeps
#      them for a day, and VACUUM ANALYZEd: the statistics then say no
#      request is open); and at 256 in flight once more on a fresh queue
#      while another session holds a snapshot taken before the INSERT (a
#      transaction left open elsewhere: no row version the run makes can
#      be pruned).  The wait for the final states is a procedure that
#      commits between its checks, which read the partial indexes of the
#      requests not final: it holds no snapshot across the run and scans
#      nothing that grows.  The cluster's new WAL segment files are not
#      zero-filled (wal_init_zero off; min_wal_size keeps those written
#      recycled, and a CHECKPOINT follows the audit log's filling), as on a
#      server whose WAL is recycled: in a new cluster each 16 MB of WAL
#      otherwise made a new file, 16 MB of zeros written by whichever
#      process first wrote into it, often the async worker as its step
#      committed (its commits took 0.3-1.1 ms on average, against 0.04-0.12
#      ms with the WAL recycled).  Beside each: the CPU time of the async worker and
#      of the callback worker per request (from /proc/PID/stat), the
#      seconds the async worker waited for a CPU while it could run (from
#      /proc/PID/schedstat: what the machine's other work took from it),
#      and the enqueue: the INSERT ... SELECT's time from its start to its commit,
#      less the same INSERT of 10,000 rows without the call, per request
#      (durable tables; enqueue.sh measures the other forms).
#      Then pg_net, if built: 10,000 net.http_get to the same /delay in
#      one INSERT ... SELECT, timed from the commit until all 10,000
#      responses are in net._http_response, at each pg_net.batch_size of
#      QC_PGNET_BATCHES ("500 1000 2000"; its worker pauses 1 s between
#      two batches, so 200 would take some 55 s a run), fresh (both its
#      tables truncated) and drained (the last batch's responses kept,
#      VACUUM ANALYZEd); its worker's CPU and its enqueue as for ours; the
#      best batch_size is the one with the lowest median on a fresh queue.
#      Its ratio is to the floor at 64 (batch_size is its only bound on
#      the requests in flight).  Without a build it prints
#      "pg_net: skipped: <why>".
#      Each iteration also runs libcurl alone at 64 and 256 in flight
#      (test/bench/curl_floor.c's in-flight mode: the same GETs through one
#      multi handle, nothing else): its seconds, and its CPU a request, the
#      part of the worker's that is libcurl's own.
#   1b. a 20 ms request's time from COMMIT to final state while 60 requests
#      to a 5 s endpoint (/slow) are on the wire;
#   2. the wake latency: from the COMMIT of one request to its final state,
#      the queue idle, to /small.json (answered at once): the median and
#      the worst of 20 (target: a median under 50 ms);
#   3. 1,000 requests to a host limited to 20/s (queryclaw.host_rate_limit):
#      the seconds until all are final (expect about 50 s: they wait for
#      their tokens) and how many failed (expect 0);
#   4. 100,000 requests of a paused role (queryclaw.enabled off for it), and
#      10,000 of a role that spent its max_calls_per_hour: the table's row
#      updates per second and the worker's CPU while they wait (expect none,
#      and little);
#   5. the async worker's memory (RSS, and RssAnon, its private part) after
#      the warm-up's 1,000 requests, after the throughput runs, and after
#      QC_ASYNC_MEMORY_REQUESTS (50,000) more, in batches of 10,000: it grows
#      while the caches and pools warm up, and should not grow after.
# Only loopback is contacted.  It prints figures and asserts nothing.
# QC_BENCH_QUICK=1 stops after 1b.  While iterating on the worker:
# QC_BENCH_CASES picks the throughput runs ("64-callback 64-none
# 256-callback", all three unless told), QC_BENCH_PGNET=0 skips pg_net, and
# QC_BENCH_PERF=FILE records the async worker with `perf record -g` into
# FILE over the throughput runs.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/benchlib.sh"

RUNS=${QC_BENCH_RUNS:-3}
N=10000
AUDIT_ROWS=${QC_BENCH_AUDIT_ROWS:-250000}
PGNET_BATCHES=${QC_PGNET_BATCHES:-500 1000 2000}
MEMORY_REQUESTS=${QC_ASYNC_MEMORY_REQUESTS:-50000}
CASES=" ${QC_BENCH_CASES:-64-callback 64-none 256-callback} "
# Is throughput case $1 among QC_BENCH_CASES?
picked() { [[ $CASES == *" $1 "* ]]; }
# no NOTICE of TRUNCATE's cascade in the figures
export PGOPTIONS="-c client_min_messages=warning"

qc_setup_bench_with_nginx || exit 1
if [ "${QC_BENCH_PGNET:-1}" = 0 ]; then
	PGNET_BUILD="" PGNET_SKIP="QC_BENCH_PGNET=0"
else
	pgnet_install
fi
preload=queryclaw_ext
[ -n "$PGNET_BUILD" ] && preload=queryclaw_ext,pg_net
# qc_pg_ctl gives the server proxy variables that name a dead port (ours
# must ignore them); pg_net's libcurl follows them, so loopback is exempted
export no_proxy=127.0.0.1 NO_PROXY=127.0.0.1
# pg_net opens a connection for every request of its batch at once: the
# server's open files limit (runuser's soft 1024) is raised so that a
# batch of 2000 fits (ours holds at most async_concurrency)
export QC_PG_WRAPPER="prlimit --nofile=8192"
qc_start_bench_cluster <<CONF || exit 1
shared_preload_libraries = '$preload'
pg_net.database_name = 'postgres'
queryclaw.max_host_concurrency = 64
queryclaw.async_concurrency = 64
queryclaw.database = 'postgres'
min_wal_size = '2GB'
max_wal_size = '4GB'
wal_init_zero = off
CONF
qc_psql -q -d postgres <<'SQL' || exit 1
CREATE EXTENSION queryclaw_ext;
CREATE TABLE bench_done (id bigint, status int);
CREATE TABLE bench_enqueued (n int, request bigint);
CREATE FUNCTION bench_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$ INSERT INTO bench_done VALUES (id, (result->>'status')::int) $$;
CREATE PROCEDURE bench_wait_while(busy_while text) LANGUAGE plpgsql AS $$
DECLARE
	busy boolean;
BEGIN
	LOOP
		EXECUTE 'SELECT ' || busy_while INTO busy;
		EXIT WHEN NOT busy;
		COMMIT;
		PERFORM pg_sleep(0.01);
		COMMIT;
	END LOOP;
END $$;
SQL
[ -n "$PGNET_BUILD" ] && { qc_psql -q -d postgres -c "CREATE EXTENSION pg_net" || exit 1; }
# the worker connects once the database has the extension: give it a pass
sleep 2

# Seconds from :'$1' to now, in SQL.
since() {
	echo "extract(epoch FROM clock_timestamp() - :'$1'::timestamptz)::numeric"
}

# The SQL that waits until $1 (an SQL condition) is false, checking every
# 10 ms.  A procedure that commits between its checks: a DO block would
# hold its first snapshot, and with it the horizon of every row version
# made during the run (none could be pruned, as with a transaction left
# open elsewhere: measured on its own below).
wait_while() {
	echo "CALL bench_wait_while(\$q\$$1\$q\$);"
}

# Queue N ($3, if given) requests to /delay in one INSERT ... SELECT, with
# a callback ($2 = callback) or without ($2 = none), on a fresh queue ($1 = fresh:
# TRUNCATE) or on the queue the last batch left, every request final,
# VACUUM ANALYZEd ($1 = drained); wait until all are final.  Prints
# "seconds|enqueue us a request|requests not done": from the commit to the
# last final request (with a callback, the request is made final in the
# callback's transaction), and the INSERT's time from its start to its
# commit.  The wait reads the requests not final through the two partial
# indexes that hold them (running ones whose outcome is not final, and
# queued ones), so that it does not scan the table every 10 ms.  With
# $4 = held, a session holds a snapshot from before the INSERT until every
# request is final (a transaction left open elsewhere: no row version the
# run makes can be pruned); the bench stops if it does not start within
# 30 s.
queue_batch() {
	local empty="TRUNCATE queryclaw.requests CASCADE;" cb="" open n=${3:-$N} missing=0 holder=""
	local hold="SELECT pg_sleep(600)"
	[ "$1" = drained ] && empty="VACUUM ANALYZE queryclaw.requests, queryclaw.request_secrets;"
	open="EXISTS (SELECT FROM queryclaw.requests WHERE state = 'running' AND finished_at IS NULL)
	      OR EXISTS (SELECT FROM queryclaw.requests WHERE state IN ('queued', 'retrying'))"
	if [ "$2" = callback ]; then
		cb=", callback => 'bench_note(bigint,jsonb,text,jsonb)'::regprocedure"
		missing="$n - (SELECT count(*) FROM bench_done)"
	fi
	if [ "${4:-}" = held ]; then
		qc_psql -q -d postgres -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT 1" \
			-c "$hold" >/dev/null 2>&1 &
		holder="SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		         WHERE query = '$hold' AND pid <> pg_backend_pid() \\g /dev/null"
		qc_psql -q -d postgres -c "SET statement_timeout = '30s'" \
			-c "$(wait_while "NOT EXISTS (SELECT FROM pg_stat_activity
			                              WHERE query = '$hold' AND backend_xmin IS NOT NULL)")" ||
			{ echo "the session that holds a snapshot did not start" >&2; exit 1; }
	fi
	qc_psql -q -At -d postgres <<SQL
TRUNCATE bench_done, bench_enqueued;
$empty
SELECT clock_timestamp() AS e0 \\gset
INSERT INTO bench_enqueued SELECT g, queryclaw.api_call_async('$base/delay'$cb) FROM generate_series(1, $n) g;
SELECT clock_timestamp() AS t0 \\gset
SET enable_seqscan = off;
$(wait_while "$open")
RESET enable_seqscan;
SELECT round($(since t0), 3), round(extract(epoch FROM :'t0'::timestamptz - :'e0'::timestamptz)::numeric * 1e6 / $n, 2),
       (SELECT count(*) FROM queryclaw.requests r JOIN bench_enqueued e ON e.request = r.id WHERE r.state <> 'done') + $missing;
$holder
SQL
}

# The same with pg_net: N net.http_get in one INSERT ... SELECT, fresh
# (its queue and responses truncated) or drained (the last batch's
# responses kept, VACUUM ANALYZEd); waits until N responses are in.
# Prints "seconds|enqueue us a request|responses not 200".
pgnet_batch() {
	local empty="TRUNCATE net.http_request_queue, net._http_response;"
	[ "$1" = drained ] && empty="VACUUM ANALYZE net.http_request_queue, net._http_response;"
	qc_psql -q -At -d postgres <<SQL
TRUNCATE bench_enqueued;
$empty
SELECT coalesce(max(id), 0) AS last FROM net._http_response \\gset
SELECT set_config('bench.last', :'last', false) \\g /dev/null
SELECT clock_timestamp() AS e0 \\gset
INSERT INTO bench_enqueued SELECT g, net.http_get('$base/delay') FROM generate_series(1, $N) g;
SELECT clock_timestamp() AS t0 \\gset
$(wait_while "(SELECT count(*) FROM net._http_response WHERE id > current_setting('bench.last')::bigint) < $N")
SELECT round($(since t0), 3), round(extract(epoch FROM :'t0'::timestamptz - :'e0'::timestamptz)::numeric * 1e6 / $N, 2),
       (SELECT count(*) FROM net._http_response WHERE id > :last AND status_code IS DISTINCT FROM 200);
SQL
}

# The same INSERT of N rows without the call: us a request.
plain_insert() {
	qc_psql -q -At -d postgres <<SQL
TRUNCATE bench_enqueued;
SELECT clock_timestamp() AS e0 \\gset
INSERT INTO bench_enqueued SELECT g, 0 FROM generate_series(1, $N) g;
SELECT round($(since e0) * 1e6 / $N, 2);
SQL
}

# Set the queue's concurrency (async_concurrency and max_host_concurrency).
set_inflight() {
	qc_psql -q -d postgres -c "ALTER SYSTEM SET queryclaw.async_concurrency = $1" \
		-c "ALTER SYSTEM SET queryclaw.max_host_concurrency = $1" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 1
}

# The CPU of worker $2 since $1 (worker_cpu's seconds), in us a request.
cpu_us() {
	awk -v a="$1" -v b="$(worker_cpu "$2")" -v n="$N" 'BEGIN { printf "%.0f", (b - a) * 1e6 / n }'
}

# Figures of the measured runs: name -> the values of the runs.
declare -A fig

# libcurl alone at $1 in flight (curl_floor.c's in-flight mode: the same
# GETs through one multi handle, nothing else), recorded: what the worker's
# CPU a request holds that is libcurl's.
curl_alone_bin=$(curl_floor_bin) || exit 1
curl_alone() {
	local s cpu
	read -r s cpu <<<"$("$curl_alone_bin" "$base/delay" "$N" "$1")"
	fig[curl $1 s]+="$s " fig[curl $1 cpu]+="$cpu "
}

# One measured run, named $1: the floor at $4 in flight, then the batch
# (queue_batch $2 $3, with a snapshot held elsewhere when $5 is held, or
# pgnet_batch $2 when $3 is pg_net); records the seconds, the ratio to that
# floor, each worker's CPU and the enqueue, and prints them.
measure() {
	local name=$1 mode=$2 kind=$3 inflight=$4 held=${5:-} worker=async floor a0 c0 w0 out s enq bad x a c w
	[ "$kind" = pg_net ] && worker=pg_net
	floor=$(raw_floor "$N" "$inflight")
	fig[floor $inflight]+="$floor "
	a0=$(worker_cpu $worker) c0=$(worker_cpu callback) w0=$(worker_waited $worker)
	if [ "$kind" = pg_net ]; then
		out=$(pgnet_batch "$mode")
	else
		out=$(queue_batch "$mode" "$kind" "" "$held") || exit 1
	fi
	a=$(cpu_us "$a0" $worker) c=$(cpu_us "$c0" callback)
	w=$(awk -v a="$w0" -v b="$(worker_waited $worker)" 'BEGIN { printf "%.2f", b - a }')
	IFS='|' read -r s enq bad <<<"$(tail -1 <<<"$out")"
	enq=$(awk -v a="$enq" -v b="$base_us" 'BEGIN { printf "%.1f", a - b }')
	x=$(awk -v a="$s" -v b="$floor" 'BEGIN { printf "%.3f", a / b }')
	fig[$name s]+="$s " fig[$name x]+="$x " fig[$name async]+="$a " fig[$name callback]+="$c "
	fig[$name enqueue]+="$enq " fig[$name waited]+="$w "
	[ "$kind" = pg_net ] && c=-
	printf '  %-34s %6.2f s  floor %5.2f s  %5.2fx  worker CPU %4d us/req (waited %4.2f s), callback worker %4s  enqueue %5.1f us/req%s\n' \
		"$name" "$s" "$floor" "$x" "$a" "$w" "$c" "$enq" "$([ "$bad" = 0 ] || echo "  NOT DONE: $bad")"
}

# One line of the summary: the min / median of each figure of run $1
# (labelled $2, if given).
summary() {
	local name=$1 label=${2:-$1} callback="-" target=""
	# shellcheck disable=SC2086
	[[ $name == pg_net* ]] || callback=$(min_median 0 ${fig[$name callback]}) target=" (target at most 15)"
	# shellcheck disable=SC2086
	printf '%-40s %s s  %sx the floor  worker CPU %s us/req (waited %s s)  callback worker %s  enqueue %s us/req%s\n' "$label" \
		"$(min_median 2 ${fig[$name s]})" "$(min_median 2 ${fig[$name x]})" "$(min_median 0 ${fig[$name async]})" \
		"$(min_median 2 ${fig[$name waited]})" "$callback" "$(min_median 1 ${fig[$name enqueue]})" "$target"
}

echo "machine: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg); $("$QC_BINDIR/postgres" --version); nginx $(nginx -v 2>&1 | sed 's/.*\///')"
echo "queryclaw_ext $(git -C "$QC_ROOT" describe --always --dirty 2>/dev/null); $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs"
queue_batch fresh callback 1000 >/dev/null
echo "async worker memory after the warm-up's 1000 requests: $(worker_rss)"

# 0. The audit log, filled to AUDIT_ROWS rows from its last row.
qc_psql -q -At -d postgres <<SQL
$(qc_sql_wait_for_audit)
INSERT INTO queryclaw.audit_log (at, role, pid, func, method, url, final_url, status, outcome, reason,
                                 bytes, chars, truncated, elapsed_ms, query, detail, role_id)
SELECT a.at - g * interval '300 ms', role, pid, func, method, url, final_url, status, outcome, reason,
       bytes, chars, truncated, elapsed_ms, query, detail, role_id
  FROM (SELECT * FROM queryclaw.audit_log ORDER BY id DESC LIMIT 1) a,
       generate_series(1, $AUDIT_ROWS - (SELECT count(*) FROM queryclaw.audit_log)) g;
VACUUM ANALYZE queryclaw.audit_log;
CHECKPOINT;
SQL
echo "audit log before the measured runs: $(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.audit_log") rows"

# 1. Throughput: the runs of an iteration in turn, each after its floor.
perf_pid=""
if [ -n "${QC_BENCH_PERF:-}" ]; then
	perf record -g -o "$QC_BENCH_PERF" -p "$(worker_pid)" >/dev/null 2>&1 &
	perf_pid=$!
fi
if [ -n "$PGNET_BUILD" ]; then
	echo "pg_net: $(cat "$PGNET_BUILD/SOURCE" 2>/dev/null || echo "$PGNET_BUILD"), extension $(qc_psql -At -d postgres -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_net'")"
fi
for run in $(seq "$RUNS"); do
	echo "run $run of $RUNS (load $(cut -d' ' -f1-3 /proc/loadavg)):"
	base_us=$(plain_insert)
	curl_alone 64
	picked 256-callback && curl_alone 256
	for kind in callback none; do
		picked 64-$kind || continue
		measure "64 in flight, $kind, fresh" fresh $kind 64
		measure "64 in flight, $kind, drained" drained $kind 64
	done
	if picked 256-callback; then
		set_inflight 256
		measure "256 in flight, callback, fresh" fresh callback 256
		measure "256 in flight, callback, drained" drained callback 256
		measure "256 in flight, callback, fresh, held" fresh callback 256 held
		set_inflight 64
	fi
	[ -n "$PGNET_BUILD" ] && for batch in $PGNET_BATCHES; do
		qc_psql -q -d postgres -c "ALTER SYSTEM SET pg_net.batch_size = $batch" -c "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		measure "pg_net batch_size $batch, fresh" fresh pg_net 64
		measure "pg_net batch_size $batch, drained" drained pg_net 64
	done
done
[ -n "$perf_pid" ] && kill -INT "$perf_pid" && wait "$perf_pid"
served=$((1000 + RUNS * 6 * N))
echo "audit log after them: $(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.audit_log") rows; async worker memory after $served requests: $(worker_rss)"

echo "10000 api_call_async to a 20 ms endpoint, commit -> all final, min / median of $RUNS runs (waited: the"
echo "seconds the async worker, or pg_net's, was ready to run but waited for a CPU that other work held):"
for kind in callback none; do
	picked 64-$kind || continue
	summary "64 in flight, $kind, fresh"
	summary "64 in flight, $kind, drained"
done
if picked 256-callback; then
	summary "256 in flight, callback, fresh"
	summary "256 in flight, callback, drained"
	summary "256 in flight, callback, fresh, held" "256 ..., a snapshot held elsewhere"
fi
# shellcheck disable=SC2086
echo "raw floor (floor.c), 10000 GETs: 64 connections $(min_median 2 ${fig[floor 64]:-}) s, 256 connections $(min_median 2 ${fig[floor 256]:-}) s"
# shellcheck disable=SC2086
echo "libcurl alone (curl_floor.c, one multi handle), 10000 GETs: 64 in flight $(min_median 2 ${fig[curl 64 s]:-}) s, CPU $(min_median 0 ${fig[curl 64 cpu]:-}) us/req$(picked 256-callback && echo "; 256 in flight $(min_median 2 ${fig[curl 256 s]:-}) s, CPU $(min_median 0 ${fig[curl 256 cpu]:-}) us/req")"
if [ -n "$PGNET_BUILD" ]; then
	best="" best_s=""
	for batch in $PGNET_BATCHES; do
		# shellcheck disable=SC2086
		s=$(min_median 3 ${fig[pg_net batch_size $batch, fresh s]} | sed 's/.* \/ //')
		if [ -z "$best" ] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best=$batch best_s=$s; fi
	done
	for batch in $PGNET_BATCHES; do
		mark=""
		[ "$batch" = "$best" ] && mark=" (best)"
		summary "pg_net batch_size $batch, fresh" "pg_net batch_size $batch$mark, fresh"
		summary "pg_net batch_size $batch, drained" "pg_net batch_size $batch$mark, drained"
	done
	# shellcheck disable=SC2086
	echo "the queue (64 in flight, callback, fresh; median) over pg_net at batch_size $best (median): $(ratio "$(min_median 3 ${fig[64 in flight, callback, fresh s]} | sed 's/.* \/ //')" "$best_s")"
else
	echo "pg_net: skipped: $PGNET_SKIP"
fi

# SQL that queues one request to URL $2 at a time, 20 times, after a
# pause of $3 s each (the worker goes back to sleep), and keeps the time
# from each COMMIT until a session sees it final in the temporary table $1
# (ms).
commit_to_final() {
	cat <<SQL
CREATE TEMP TABLE $1 (ms float8);
DO \$\$
DECLARE
    rid bigint;
    t0 timestamptz;
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM pg_sleep($3);
        rid := queryclaw.api_call_async('$2');
        COMMIT;
        t0 := clock_timestamp();
        WHILE NOT EXISTS (SELECT FROM queryclaw.requests
                           WHERE id = rid AND state IN ('done', 'failed', 'cancelled')) LOOP
            PERFORM pg_sleep(0.0005);
        END LOOP;
        INSERT INTO $1 VALUES (1000 * extract(epoch FROM clock_timestamp() - t0));
        COMMIT;
    END LOOP;
END \$\$;
SQL
}

# 1b. A 20 ms request while 60 requests to a 5 s endpoint are on the wire:
# the time from its COMMIT to its final state, 20 times (its own 20 ms
# included; target: under 100 ms over them).
qc_psql -q -At -d postgres <<SQL
TRUNCATE queryclaw.requests CASCADE;
SELECT count(queryclaw.api_call_async('$base/slow')) FROM generate_series(1, 60) \\g /dev/null
SQL
qc_psql -q -At -d postgres <<SQL
DO \$\$ BEGIN
    WHILE (SELECT count(*) FROM queryclaw.requests WHERE state = 'running') < 60 LOOP
        PERFORM pg_sleep(0.01);
    END LOOP;
END \$\$;
$(commit_to_final beside "$base/delay" 0)
SELECT 'a 20 ms request beside 60 on the wire to a 5 s endpoint, COMMIT to final state: median '
       || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, worst '
       || round(max(ms)::numeric, 1) || ' ms of 20; still running to the slow endpoint: '
       || (SELECT count(*) FROM queryclaw.requests WHERE state = 'running')
       || ' (target: under 120 ms, 20 of them the endpoint''s)'
  FROM beside;
SQL
qc_psql -q -d postgres -c "SELECT queryclaw.cancel_requests(array_agg(id)) FROM queryclaw.requests" >/dev/null
[ -n "${QC_BENCH_QUICK:-}" ] && exit 0

# 2. One request at a time, the worker asleep between them: the time from
# COMMIT until a session sees the request final.
qc_psql -q -At -d postgres <<SQL
TRUNCATE queryclaw.requests CASCADE;
$(commit_to_final latency "$base/small.json" 0.3)
SELECT 'wake latency, COMMIT to final state, queue idle: median '
       || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, worst '
       || round(max(ms)::numeric, 1) || ' ms of 20 (target: median < 50 ms)'
  FROM latency;
SQL

# 3. A host limited to 20/s: requests wait for their tokens, none fails.
qc_psql -q -d postgres -c "ALTER SYSTEM SET queryclaw.host_rate_limit = '127.0.0.1=20/s'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
qc_psql -q -At -d postgres <<SQL
TRUNCATE queryclaw.requests CASCADE;
SELECT count(queryclaw.api_call_async('$base/small.json')) FROM generate_series(1, 1000) \\gset
SELECT clock_timestamp() AS t0 \\gset
DO \$\$ BEGIN
    WHILE EXISTS (SELECT FROM queryclaw.requests WHERE state NOT IN ('done', 'failed', 'cancelled')) LOOP
        PERFORM pg_sleep(0.05);
    END LOOP;
END \$\$;
SELECT '1000 api_call_async to a host limited to 20/s: '
       || round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1) || ' s (expect about 50 s), done: '
       || count(*) FILTER (WHERE state = 'done') || ', failed: ' || count(*) FILTER (WHERE state = 'failed')
  FROM queryclaw.requests;
SQL
qc_psql -q -d postgres -c "ALTER SYSTEM RESET queryclaw.host_rate_limit" -c "SELECT pg_reload_conf()" >/dev/null

# 4. Requests that wait: N requests of a role with SETTING; after SETTLE
# seconds, over SECONDS, the row updates of the table (from the statistics)
# and the worker's CPU time.
waiting_cost() {
	local label=$1 setting=$2 n=$3 settle=$4 seconds=$5
	qc_psql -q -At -d postgres <<SQL
TRUNCATE queryclaw.requests CASCADE;
CREATE ROLE bench_waiting;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) TO bench_waiting;
ALTER ROLE bench_waiting SET $setting;
SET ROLE bench_waiting;
SELECT count(queryclaw.api_call_async('$base/small.json')) FROM generate_series(1, $n) \\g /dev/null
RESET ROLE;
SELECT pg_sleep($settle) \\g /dev/null
SELECT n_tup_upd AS u0, $(qc_sql_cpu_ticks "$(worker_pid)") AS c0
  FROM pg_stat_user_tables WHERE relid = 'queryclaw.requests'::regclass \\gset
SELECT pg_sleep($seconds) \\g /dev/null
SELECT pg_stat_force_next_flush() \\g /dev/null
SELECT '$n requests $label, over $seconds s: '
       || (n_tup_upd - :u0) / $seconds || ' row updates/s, worker CPU '
       || round(($(qc_sql_cpu_ticks "$(worker_pid)") - :c0) * 100.0 / $(getconf CLK_TCK) / $seconds) || '% of a core'
  FROM pg_stat_user_tables WHERE relid = 'queryclaw.requests'::regclass;
TRUNCATE queryclaw.requests CASCADE;
DROP OWNED BY bench_waiting;
DROP ROLE bench_waiting;
SQL
}
waiting_cost "paused (queryclaw.enabled off for their role)" "queryclaw.enabled = off" 100000 2 10
# over a minute: a request that waits for a spent budget waits at least that
waiting_cost "of a role that spent its max_calls_per_hour (5)" "queryclaw.max_calls_per_hour = 5" 10000 5 70

# 5. The worker's memory after MEMORY_REQUESTS more requests.
for _ in $(seq $((MEMORY_REQUESTS / N))); do
	queue_batch fresh callback >/dev/null
done
echo "async worker memory after $((served + MEMORY_REQUESTS)) requests (and those of 1b to 4): $(worker_rss)"
