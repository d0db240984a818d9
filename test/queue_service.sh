#!/usr/bin/env bash
# test/queue_service.sh: the queue runs as a service, not in batches (run
# by test/run.sh on its preloaded cluster, after the suite).
#
# One role keeps a slow host busy: 24 requests that each take 4 s, at
# most 8 of them on the wire at once (queryclaw.max_host_concurrency).
# Meanwhile:
# - a request of another role, and one of the same role to another host,
#   go out at once and end before any of the slow ones (they waited for
#   the whole slow batch when a pass ran its claim to the end): the order
#   of the events, which a loaded machine does not change, not a time;
# - "running" counts what is on the wire: never more than the 8;
# - finished_at is when the response came, not when a pass began;
# - the worker holds no snapshot while requests are on the wire (its
#   backend_xmin is empty between its short transactions);
# - a role with a backlog of 300 requests to one host does not hold up
#   another role's single request to that host: slots go round-robin;
# - a request whose transaction began before its role's backlog and
#   committed after the worker claimed past it goes while the backlog
#   runs (each role's claims resume where the last ended: a commit that
#   queued makes the worker look from the start again).
# The slow host is the fixture as 127.0.0.1, the other host the same
# fixture as fast.loopback.test (another host name, so another host to
# the limits; the test's DNS fixture answers 127.0.0.1 for it).
# Prints TAP-style "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory and the bin directory of the running
# cluster (test/lib.sh's QC_WORK, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_BINDIR=$2
busy=qc_svc_busy
other=qc_svc_other

qc_sql <<SQL || { echo "not ok - the roles were set up"; exit 1; }
CREATE ROLE $busy;
CREATE ROLE $other;
GRANT USAGE ON SCHEMA qc_test TO $busy, $other;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.wait(bigint[], interval), queryclaw.cancel_requests(bigint[])
    TO $busy, $other;
SQL

# Queue n requests as role $1 to URL $3 (n = $2); prints the last id.
queue() {
	qc_sql -c "SET ROLE $1" -c "SELECT max(queryclaw.api_call_async('$3')) FROM generate_series(1, $2)"
}

# Milliseconds from now until request $1 is done (at most 20 s); a
# request that failed prints its error instead.
ms_until_done() {
	local start=$(date +%s%N) state
	state=$(qc_sql -c "SELECT state || coalesce(': ' || error, '') FROM queryclaw.wait(ARRAY[$1]::bigint[], '20 s')")
	[ "$state" = done ] || { echo "$state"; return; }
	echo $((($(date +%s%N) - start) / 1000000))
}

# Cancel every open request of role $1 (as $1: a role cancels only its
# own), until none is left.
cancel_all() {
	qc_sql -c "SET ROLE $1" -c "SELECT queryclaw.cancel_requests(array_agg(id)) FROM queryclaw.requests" >/dev/null
	qc_until_true "SELECT count(*) = 0 FROM queryclaw.requests WHERE role = '$1'::regrole
	                  AND state IN ('queued', 'running', 'retrying')" ||
		echo "not ok - the requests of $1 were cancelled"
	qc_until_true "SELECT count(*) = 0 FROM queryclaw.requests WHERE state = 'running'" ||
		echo "not ok - the requests on the wire were cut off"
}

# Is $1 (a number) below $2?  "yes", or "no: $1".
below() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -lt "$2" ] && echo yes || echo "no: $1"
}

port=$(cat "$QC_WORK/fixture.port")
slow_url="http://127.0.0.1:$port/slow?ms=4000"
other_host="http://fast.loopback.test:$port/hello"

queue $busy 24 "$slow_url" >/dev/null
qc_until_true "SELECT count(*) = 8 FROM queryclaw.requests WHERE state = 'running'" ||
	echo "not ok - eight slow requests went on the wire"
sleep 0.5

# Ended before the busy host's first slow request did (they take 4 s):
# the order of two events, not a stopwatch.  "yes", or what was seen.
before_the_slow_ones() {
	local id=$1 state
	state=$(ms_until_done "$id")
	[[ "$state" =~ ^[0-9]+$ ]] || { echo "$state"; return; }
	qc_sql -c "SELECT CASE WHEN r.finished_at < coalesce(min(s.finished_at), 'infinity') THEN 'yes'
	                       ELSE 'no: after a slow one, in $state ms' END
	             FROM queryclaw.requests r, queryclaw.requests s
	            WHERE r.id = $id AND s.role = '$busy'::regrole AND s.request->>'url' = '$slow_url'
	            GROUP BY r.finished_at"
}
qc_check "another role's request to another host ends at once beside a busy host" \
	"$(before_the_slow_ones "$(queue $other 1 "$other_host")")" yes
qc_check "the busy role's own request to another host ends at once too" \
	"$(before_the_slow_ones "$(queue $busy 1 "$other_host")")" yes

running=$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE state = 'running'")
qc_check "'running' counts the requests on the wire" "$running" 8
waiting=$(qc_sql -c "SELECT DISTINCT waiting FROM queryclaw.requests WHERE state = 'queued' AND role = '$busy'::regrole")
qc_check "the others say why they wait" "$waiting" "host concurrency 8 reached"

# a request answered in 300 ms among the slow ones is finished then, not
# with the slow ones' outcomes (queued before the looks below, which take
# seconds on a loaded machine, so that it starts well before the slow
# ones end)
fast=$(queue $other 1 "http://fast.loopback.test:$port/slow?ms=300")
seen=$(before_the_slow_ones "$fast")
late=$(qc_sql -c "SELECT (extract(epoch FROM finished_at - created_at) * 1000)::int FROM queryclaw.requests WHERE id = $fast")
qc_check "finished_at is when the response came, before the slow ones' ($late ms after it was queued)" \
	"$seen" yes

# between its outcomes, the worker holds no snapshot
held=0
for _ in $(seq 20); do
	xmin=$(qc_sql -c "SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE backend_type = 'queryclaw async worker'")
	[ "$xmin" = t ] && held=$((held + 1))
	sleep 0.1
done
qc_check "the worker holds no snapshot while requests are on the wire (held in $held of 20 looks)" \
	"$(below "$held" 3)" yes

cancel_all $busy

# fairness: a 300-request backlog of one role, one request of another
queue $busy 300 "http://127.0.0.1:$port/slow?ms=150" >/dev/null
qc_until_true "SELECT count(*) > 0 FROM queryclaw.requests WHERE state = 'running'" ||
	echo "not ok - the backlog started"
ms=$(ms_until_done "$(queue $other 1 "http://127.0.0.1:$port/hello")")
left=$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE role = '$busy'::regrole AND state IN ('queued', 'running')")
qc_check "another role's request to the same host went between the backlog's (in $ms ms, $left of 300 left)" \
	"$([ "$left" -gt 150 ] && echo many)" many

cancel_all $busy

# a request queued by a transaction that began before a backlog of its
# role and committed after the worker claimed past it (its next_attempt_at
# is when its transaction began): claimed once that commit wakes the
# worker, while the backlog still runs, not when the backlog ends
late_url="http://fast.loopback.test:$port/hello?late=1"
qc_sql <<SQL >/dev/null &
SET ROLE $busy;
BEGIN;
SELECT queryclaw.api_call_async('$late_url');
SELECT pg_sleep(1.5);
COMMIT;
SQL
late_pid=$!
sleep 0.3
queue $busy 300 "http://127.0.0.1:$port/slow?ms=150" >/dev/null
wait $late_pid
late=$(qc_sql -c "SELECT id FROM queryclaw.requests WHERE request->>'url' = '$late_url'")
ms=$(ms_until_done "$late")
left=$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE role = '$busy'::regrole AND request->>'url' <> '$late_url'
                   AND (finished_at IS NULL OR finished_at > (SELECT finished_at FROM queryclaw.requests WHERE id = $late))")
qc_check "a request queued before its role's backlog and committed after the worker claimed past it went while the backlog ran (in $ms ms, $left of 300 left)" \
	"$([ "$left" -gt 100 ] && echo many)" many
cancel_all $busy

qc_sql -c "DELETE FROM queryclaw.requests WHERE role IN ('$busy'::regrole, '$other'::regrole)" \
	-c "DROP OWNED BY $busy, $other" -c "DROP ROLE $busy, $other"
