#!/usr/bin/env bash
# test/bench/async.sh: the async queue's throughput and the worker's memory
# (part of `make bench`).
#
# Starts Debian's nginx on a free loopback port (/delay answers after 20 ms)
# and a scratch cluster with the library preloaded and one async worker,
# then prints:
#   1. 10,000 api_call_async to /delay, each with a callback that writes a
#      row, queued in one INSERT ... SELECT: seconds from the commit until
#      every callback has run (target: under 6.5 s; the floor, 10,000 x
#      20 ms at 64 in flight, is 3.1 s), max_host_concurrency 64;
#   2. the async worker's memory (RSS, and RssAnon, its private part) after
#      1,000 requests, after 51,000 and after 100,000
#      (QC_ASYNC_MEMORY_REQUESTS), in batches of 10,000: it grows while the
#      caches and pools warm up, and should not grow after.
# Only loopback is contacted.  It prints figures and asserts nothing.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

QC_PACKAGES="$QC_PACKAGES $QC_NGINX_PACKAGES"
MEMORY_REQUESTS=${QC_ASYNC_MEMORY_REQUESTS:-100000}

qc_setup_private || exit 1
qc_start_nginx || exit 1
base="http://127.0.0.1:$QC_NGINX_PORT"

qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$QC_NGINX_PORT'
queryclaw.max_host_concurrency = 64
queryclaw.async_concurrency = 64
queryclaw.database = 'postgres'
CONF
qc_psql -q -d postgres <<'SQL'
CREATE EXTENSION queryclaw_ext;
CREATE TABLE bench_done (id bigint, status int);
CREATE FUNCTION bench_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$ INSERT INTO bench_done VALUES (id, (result->>'status')::int) $$;
SQL
# the worker connects once the database has the extension: give it a pass
sleep 2

# Queue n requests to /delay in one transaction; wait until all callbacks
# ran; print the seconds from the commit to the last callback.
run_batch() {
	local n=$1
	qc_psql -q -At -d postgres <<SQL
TRUNCATE bench_done;
TRUNCATE queryclaw.requests CASCADE;
SELECT count(queryclaw.api_call_async('$base/delay', callback => 'bench_note(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, $n) \\gset
SELECT clock_timestamp() AS t0 \\gset
DO \$\$ BEGIN
    WHILE (SELECT count(*) FROM bench_done) < $n LOOP
        PERFORM pg_sleep(0.01);
    END LOOP;
END \$\$;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 2);
SQL
}

# The worker's private memory (RssAnon): its RSS also counts the pages of
# shared buffers it touched, which grow with the table, not with a leak.
worker_rss() {
	local pid
	pid=$(qc_psql -At -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker' LIMIT 1")
	awk '/VmRSS|RssAnon/ {printf "%s %s kB  ", $1, $2}' "/proc/$pid/status"
}

echo "machine: $(nproc) cores; nginx $(nginx -v 2>&1 | sed 's/.*\///')"
run_batch 1000 >/dev/null
rss_before=$(worker_rss)
echo "async worker memory after 1000 requests: ${rss_before}"
s=$(run_batch 10000 | tail -1)
echo "10000 api_call_async to a 20 ms endpoint, callbacks included: $s s (target < 6.5 s, floor 3.1 s)"
qc_psql -At -d postgres -c "SELECT 'done: ' || count(*) FILTER (WHERE state = 'done') || ', failed: ' || count(*) FILTER (WHERE state = 'failed') FROM queryclaw.requests"
done_requests=11000
while [ "$done_requests" -lt "$MEMORY_REQUESTS" ]; do
	run_batch 10000 >/dev/null
	done_requests=$((done_requests + 10000))
	[ $((done_requests % 50000)) -eq 1000 ] && [ "$done_requests" -lt "$MEMORY_REQUESTS" ] &&
		echo "async worker memory after $done_requests requests: $(worker_rss)"
done
rss_after=$(worker_rss)
echo "async worker memory after $done_requests requests: ${rss_after}"
