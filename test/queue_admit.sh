#!/usr/bin/env bash
# test/queue_admit.sh: queryclaw.max_queued_per_role holds against
# concurrent transactions (run by test/run.sh on its preloaded cluster,
# after the suite).
#
# pg_regress has one session; the limit is about several.  Four sessions
# of one role each open a transaction, queue two requests, sleep and
# commit, all at once, under a limit of 5: the first two to commit hold 4
# requests and the other two are refused (53400), as one after the other
# would be.  Counted each in its own snapshot, all four got in (8 of 5).
# A second role is not held up by the first one's open transactions.  The
# role's requests stay queued: queryclaw.enabled is off for it.  Prints
# TAP-style "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory and the bin directory of the running
# cluster (test/lib.sh's QC_WORK, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_BINDIR=$2
role=qc_admitted
other=qc_admitted_too

qc_sql <<SQL || { echo "not ok - the roles were set up"; exit 1; }
CREATE ROLE $role;
CREATE ROLE $other;
ALTER ROLE $role SET queryclaw.enabled = off;
ALTER ROLE $other SET queryclaw.enabled = off;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
	TO $role, $other;
SQL

# One session of role $1: a transaction that queues two requests, waits
# $2 seconds and commits; its output in $QC_WORK/admit.$3.
session() {
	qc_sql -c "SET queryclaw.max_queued_per_role = 5" -c "SET ROLE $1" -c "BEGIN" \
		-c "SELECT queryclaw.api_call_async('http://127.0.0.1:9/a'), queryclaw.api_call_async('http://127.0.0.1:9/b')" \
		-c "SELECT pg_sleep($2)" -c "COMMIT" >"$QC_WORK/admit.$3" 2>&1
}

pids=()
for i in 1 2 3 4; do
	session $role 2 "$i" &
	pids+=($!)
done
# the role's transactions queue one after the other (under its enqueue
# lock): one sleeps while the others wait
qc_until_true "SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(2)'" ||
	echo "not ok - the first role's transactions are open"
session $other 0 other
# were they still open when the other role's transaction was done?  (the
# order of two events, not a time: a loaded machine does not change it)
still_open=$(qc_sql -c "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(2)'")
for pid in "${pids[@]}"; do wait "$pid"; done

queued=$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE role = '$role'::regrole AND state = 'queued'")
qc_check "four concurrent transactions of a role hold at most max_queued_per_role requests" "$queued" 4
qc_check "the two that came last were refused with 53400" \
	"$(cat "$QC_WORK"/admit.[1-4] | grep -c 'too many unfinished asynchronous requests')" 2
qc_check "another role queued while the first role's transactions were open" \
	"$([ "$still_open" -gt 0 ] && echo yes || echo "no: they had ended")" yes

qc_sql -c "DELETE FROM queryclaw.requests WHERE role IN ('$role'::regrole, '$other'::regrole)" \
	-c "DROP OWNED BY $role, $other" -c "ALTER ROLE $role RESET ALL" \
	-c "ALTER ROLE $other RESET ALL" -c "DROP ROLE $role, $other"
