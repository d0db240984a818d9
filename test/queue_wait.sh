#!/usr/bin/env bash
# test/queue_wait.sh: queryclaw.wait() sees what other sessions commit
# (run by test/run.sh on its preloaded cluster, after the suite).
#
# pg_regress has one session; wait() is about another one finishing the
# requests.  Here a role queues a request (kept waiting by the workers:
# queryclaw.enabled is off for it), a session waits for it, and a
# superuser session finishes the row by hand a second later, as a worker
# would.  The waiter must return the row final within a moment of that
# commit, not at its timeout; while it waits, pg_stat_activity shows the
# wait event.  A waiter without a timeout (NULL) waits as long as the
# row is not final, and returns at the commit that makes it so.  A last
# waiter is cancelled with pg_cancel_backend and must stop at once with
# 57014.  Prints TAP-style "ok - ..." / "not ok -
# ..." lines.
#
# Arguments: the work directory and the bin directory of the running
# cluster (test/lib.sh's QC_WORK, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_BINDIR=$2
role=qc_waiter

id=$(qc_sql <<SQL
CREATE ROLE $role;
ALTER ROLE $role SET queryclaw.enabled = off;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.wait(bigint[], interval) TO $role;
SET ROLE $role;
SELECT queryclaw.api_call_async('http://127.0.0.1:9/never');
SQL
) || { echo "not ok - a request was queued"; exit 1; }
echo "ok - a request was queued"

# The waiter: the state it got back, and whether it came before the timeout.
# (a timeout far longer than the test waits: a loaded machine slows it,
# and a waiter that missed the commit still stands out)
qc_sql -c "SET ROLE $role" -c "SELECT state || ' ' || (clock_timestamp() - statement_timestamp() < interval '30 s')
	FROM queryclaw.wait(ARRAY[$id]::bigint[], '60 s')" >"$QC_WORK/wait.out" 2>&1 &
waiter=$!
waiting="SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE '%queryclaw.wait(%'
	AND wait_event IN ('Extension', 'QueryclawRequestsWait') AND pid <> pg_backend_pid())"
qc_until_true "$waiting"
qc_check "the waiter shows its wait event in pg_stat_activity" "$?" 0
sleep 1
qc_sql -c "UPDATE queryclaw.requests SET state = 'done', finished_at = now(), result = '{\"ok\": true}'
	WHERE id = $id"
wait "$waiter"
qc_check "wait() returned the row once another session finished it, before its timeout" \
	"$(cat "$QC_WORK/wait.out")" "done true"

# With a NULL timeout the waiter waits until the row is final, and
# returns at that commit.
qc_sql -c "UPDATE queryclaw.requests SET state = 'queued', finished_at = NULL WHERE id = $id"
# (statement_timeout, so that a waiter that never returned fails the check)
qc_sql -c "SET ROLE $role" -c "SET statement_timeout = '20s'" \
	-c "SELECT state || ' ' || (clock_timestamp() - statement_timestamp() < interval '60 s')
	FROM queryclaw.wait(ARRAY[$id]::bigint[], NULL)" >"$QC_WORK/wait.out" 2>&1 &
waiter=$!
qc_until_true "$waiting"
sleep 2
qc_check "wait(ids, NULL) is still waiting after 2 s" "$(kill -0 "$waiter" 2>/dev/null && echo waiting)" waiting
qc_sql -c "UPDATE queryclaw.requests SET state = 'failed', finished_at = now(), error = 'by hand'
	WHERE id = $id"
wait "$waiter"
qc_check "wait(ids, NULL) returned the row at the commit that made it final" \
	"$(cat "$QC_WORK/wait.out")" "failed true"

# A cancel stops a wait at once.
qc_sql -c "UPDATE queryclaw.requests SET state = 'queued', finished_at = NULL WHERE id = $id"
qc_sql -c "SET ROLE $role" -c "SELECT count(*) FROM queryclaw.wait(ARRAY[$id]::bigint[], '30 s')" \
	>"$QC_WORK/wait.out" 2>&1 &
waiter=$!
qc_until_true "$waiting"
start=$(date +%s%N)
qc_sql -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
	WHERE query LIKE '%queryclaw.wait(%' AND pid <> pg_backend_pid()" >/dev/null
wait "$waiter"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
qc_check "a cancelled wait() stops with 57014" \
	"$(grep -c 'canceling statement due to user request' "$QC_WORK/wait.out")" 1
qc_check "long before its 30 s timeout" "$([ "$elapsed_ms" -lt 10000 ] && echo yes || echo "no: $elapsed_ms ms")" yes

qc_sql -c "DELETE FROM queryclaw.requests WHERE id = $id" -c "DROP OWNED BY $role" -c "DROP ROLE $role"
