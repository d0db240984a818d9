#!/usr/bin/env bash
# test/bench/enqueue.sh: what queueing an asynchronous request costs the
# caller (`make bench` runs it after throughput.sh).
#
# Starts a scratch cluster with a private install of the extension and
# prints, in microseconds per request (issue 35's target: at most 15, the
# median, printed beside 1 and 4):
#   1. one INSERT ... SELECT of 10,000 rows, each calling api_call_async
#      (POST with a body, a context and a callback), less the same INSERT
#      without the call
#   2. 10,000 rows inserted in one statement into a table whose AFTER
#      INSERT trigger queues an api_call_async per row, less the same
#      insert into a table without the trigger
#   3. as 1, with a secret header (the row's redacted copy plus the
#      request_secrets row)
#   4. as async.sh queues its batches (its "enqueue" figure): one INSERT
#      ... SELECT of 10,000 api_call_async (a GET with a callback) into a
#      durable table, committed alone, timed by the client from its start
#      to its commit, less the same INSERT without the call, on a queue
#      truncated before each run
# 1 to 3 are timed inside the server, in a transaction then rolled back, so
# no worker sends anything; 4's requests go to a loopback address, which
# the async worker refuses without sending anything (queryclaw.block_local),
# and each run waits until the last run's are final.  Each figure is the
# median of QC_RUNS runs (default 5).  Nothing is contacted.  It is a
# benchmark, not a test: it prints figures and asserts nothing.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

RUNS=${QC_RUNS:-5}
ROWS=10000

qc_setup_private || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
CONF
qc_psql -q -d postgres <<'SQL' || exit 1
CREATE EXTENSION queryclaw_ext;
CREATE PROCEDURE public.bench_done(id bigint, result jsonb, error text, context jsonb)
LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
CREATE TABLE public.bench_src AS
	SELECT g AS id, 'https://api.example.com/items/' || g AS url FROM generate_series(1, 10000) g;
CREATE TABLE public.bench_dst (id int, request bigint);
CREATE TABLE public.bench_plain (id int, url text);
CREATE TABLE public.bench_items (id int, url text);
CREATE FUNCTION public.bench_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM queryclaw.api_call_async(NEW.url, 'POST', body => format('{"id": %s}', NEW.id),
									 callback => 'public.bench_done(bigint, jsonb, text, jsonb)',
									 context => jsonb_build_object('id', NEW.id));
	RETURN NULL;
END
$$;
CREATE TRIGGER bench_enqueue AFTER INSERT ON public.bench_items
	FOR EACH ROW EXECUTE FUNCTION public.bench_enqueue();
SQL

# Seconds a statement takes inside the server, in a transaction rolled
# back afterwards; the median of RUNS runs.
seconds() {
	local values=()
	for _ in $(seq "$RUNS"); do
		values+=("$(qc_psql -d postgres 2>&1 <<SQL | sed -n 's/.*NOTICE:  //p'
BEGIN;
DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN $1; RAISE NOTICE '%', extract(epoch FROM clock_timestamp() - t0); END \$\$;
ROLLBACK;
SQL
)")
	done
	printf '%s\n' "${values[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

# Microseconds per row: (with - without) / ROWS
per_row() {
	awk -v a="$1" -v b="$2" -v n="$ROWS" 'BEGIN {printf "%.1f", (a - b) * 1e6 / n}'
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $ROWS requests a statement; median of $RUNS runs"
TARGET="issue 35's target: at most 15"

base=$(seconds "INSERT INTO public.bench_dst SELECT id, 0 FROM public.bench_src")
bulk=$(seconds "INSERT INTO public.bench_dst SELECT id, queryclaw.api_call_async(url, 'POST',
	body => format('{\"id\": %s}', id), callback => 'public.bench_done(bigint, jsonb, text, jsonb)',
	context => jsonb_build_object('id', id)) FROM public.bench_src")
echo "1. INSERT ... SELECT calling api_call_async: $(per_row "$bulk" "$base") us/request ($TARGET; ${bulk}s, ${base}s without the call)"

plain=$(seconds "INSERT INTO public.bench_plain SELECT id, url FROM public.bench_src")
trig=$(seconds "INSERT INTO public.bench_items SELECT id, url FROM public.bench_src")
echo "2. AFTER INSERT trigger calling api_call_async: $(per_row "$trig" "$plain") us/request (${trig}s, ${plain}s without the trigger)"

secret=$(seconds "INSERT INTO public.bench_dst SELECT id, queryclaw.api_call_async(url, 'POST',
	'{\"Authorization\": \"Bearer sk-bench-0123456789\"}', format('{\"id\": %s}', id)) FROM public.bench_src")
echo "3. as 1, with a secret header (request_secrets row too): $(per_row "$secret" "$base") us/request (${secret}s)"

# Microseconds a request of one committed INSERT ... SELECT of ROWS
# api_call_async, as async.sh times it (from the client, start to commit),
# less the same INSERT without the call, on a fresh queue, once the last
# run's requests are final and their audit rows written.
committed() {
	qc_psql -q -At -d postgres <<SQL
SET client_min_messages = warning;
DO \$\$ BEGIN WHILE EXISTS (SELECT FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying'))
LOOP PERFORM pg_sleep(0.05); END LOOP; END \$\$;
$(qc_sql_wait_for_audit)
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE public.bench_dst;
SELECT clock_timestamp() AS p0 \\gset
INSERT INTO public.bench_dst SELECT g, 0 FROM generate_series(1, $ROWS) g;
SELECT clock_timestamp() AS p1 \\gset
TRUNCATE public.bench_dst;
SELECT clock_timestamp() AS e0 \\gset
INSERT INTO public.bench_dst SELECT g, queryclaw.api_call_async('http://127.0.0.1:9/delay',
	callback => 'public.bench_done(bigint, jsonb, text, jsonb)'::regprocedure) FROM generate_series(1, $ROWS) g;
SELECT clock_timestamp() AS t0 \\gset
SELECT extract(epoch FROM (:'t0'::timestamptz - :'e0'::timestamptz) - (:'p1'::timestamptz - :'p0'::timestamptz))
       * 1e6 / $ROWS;
SQL
}
values=()
for _ in $(seq "$RUNS"); do values+=("$(committed)"); done
commit=$(printf '%s\n' "${values[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)]}')
echo "4. committed, as async.sh queues its batches (GET, callback): $commit us/request ($TARGET; min $(printf '%s\n' "${values[@]}" | sort -g | head -1 | xargs printf '%.1f'))"
