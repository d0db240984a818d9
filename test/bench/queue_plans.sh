#!/usr/bin/env bash
# test/bench/queue_plans.sh: the plans the queue's workers run, on a queue
# that holds a million finished requests (`make bench-plans`).
#
# The workers' statements must stay cheap however the queue looks: fresh,
# drained and vacuumed, or a million rows long (README, "How the queue
# runs").  This starts a scratch cluster with auto_explain loaded beside
# the extension, fills queryclaw.requests with 1,000,000 requests that are
# final (QC_PLANS_ROWS), as a day of async_retention keeps them (20,000 of
# them older, for the retention to delete), and VACUUM ANALYZEs it: the
# statistics then say no request is open.  Then,
# with auto_explain logging every statement's plan with its buffers, it
# runs 200 api_call_async to a 20 ms endpoint with callbacks, cancels a
# queued request and retries it, and prints, for each distinct statement
# the async worker and the callback worker ran, its last plan: the nodes,
# the rows each returned and the buffers each touched.  A statement whose
# work grew with the finished rows would show thousands of buffers where
# the others show a handful.
# Only loopback is contacted.  It prints plans and asserts nothing.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

ROWS=${QC_PLANS_ROWS:-1000000}

qc_start_bench_with_nginx <<CONF || exit 1
shared_preload_libraries = 'queryclaw_ext, auto_explain'
queryclaw.database = 'postgres'
log_line_prefix = '%b: '
CONF
qc_psql -q -d postgres <<SQL || exit 1
CREATE EXTENSION queryclaw_ext;
CREATE TABLE bench_done (id bigint);
CREATE FUNCTION bench_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$ INSERT INTO bench_done VALUES (id) \$\$;
INSERT INTO queryclaw.requests (id, role, func, state, attempts, request, result, finished_at)
     OVERRIDING SYSTEM VALUE
     SELECT g, 'postgres'::regrole, 'api_call_async', 'done', 1,
            jsonb_build_object('url', '$base/delay', 'method', 'GET'),
            '{"status": 200, "ok": true}',
            CASE WHEN g <= 20000 THEN now() - interval '2 days' ELSE now() END
       FROM generate_series(1, $ROWS) g;
SELECT setval('queryclaw.requests_id_seq', $ROWS) \\gset
VACUUM ANALYZE queryclaw.requests, queryclaw.request_secrets;
SQL
echo "queryclaw.requests: $(qc_psql -At -d postgres -c "SELECT count(*) FROM queryclaw.requests") rows, all final, vacuumed and analyzed"

# SQL that waits until $1 callbacks have run.
callbacks_ran() {
	printf 'DO $$ BEGIN WHILE (SELECT count(*) FROM bench_done) < %d LOOP PERFORM pg_sleep(0.05); END LOOP; END $$;\n' "$1"
}

log_from=$(stat -c %s "$QC_WORK/postgres.log" 2>/dev/null || echo 0)
qc_psql -q -d postgres <<'SQL'
ALTER SYSTEM SET auto_explain.log_min_duration = 0;
ALTER SYSTEM SET auto_explain.log_analyze = on;
ALTER SYSTEM SET auto_explain.log_buffers = on;
ALTER SYSTEM SET auto_explain.log_timing = off;
ALTER SYSTEM SET auto_explain.log_nested_statements = on;
SELECT pg_reload_conf() \gset
SQL
sleep 1
qc_psql -q -At -d postgres <<SQL >/dev/null
SELECT count(queryclaw.api_call_async('$base/delay', callback => 'bench_note(bigint,jsonb,text,jsonb)'::regprocedure))
  FROM generate_series(1, 200);
SELECT queryclaw.api_call_async('$base/delay', callback => 'bench_note(bigint,jsonb,text,jsonb)'::regprocedure)
    AS late \\gset
SELECT queryclaw.cancel_requests(ARRAY[:late]);
$(callbacks_ran 201)
SELECT queryclaw.retry_requests(ARRAY[:late]);
$(callbacks_ran 202)
SQL
qc_psql -q -d postgres -c "ALTER SYSTEM RESET ALL" -c "SELECT pg_reload_conf()" >/dev/null

# Each distinct statement of the workers, with its last plan.
tail -c +"$((log_from + 1))" "$QC_WORK/postgres.log" | "$QC_PYTHON" -c '
import re, sys
plans, order, current = {}, [], None
for line in sys.stdin:
    m = re.match(r"(queryclaw (?:async|callback) worker): LOG:  duration: .*? plan:$", line.rstrip())
    if m:
        current = [m.group(1)]
        continue
    if current is None:
        continue
    if not line.startswith("\t"):
        if len(current) > 2:
            query = " ".join(current[1].split())
            if query not in plans:
                order.append(query)
            plans[query] = current
        current = None
        continue
    current.append(line.rstrip())
for query in order:
    plan = plans[query]
    print("==", plan[0] + ":", query[len("Query Text: "):] if query.startswith("Query Text: ") else query)
    for line in plan[2:]:
        print(line)
    print()
'
