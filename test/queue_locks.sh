#!/usr/bin/env bash
# test/queue_locks.sh: no user transaction can make the async worker wait
# (run by test/run.sh on its preloaded cluster, after the suite).
#
# cancel_requests() updates the request's row in the caller's transaction,
# and holds it until that transaction ends.  A worker that then records the
# request's outcome must not wait for it: here one session cancels a
# request while it is on the wire and keeps its transaction open for 8 s;
# another role's request, queued meanwhile, must still end within a few
# seconds (it waited the 8 s when the worker's final UPDATE waited on the
# row).  The held request ends as the canceller's transaction says:
# cancelled once it commits, or done (its outcome recorded then) once it
# rolls back; its callback (the held outcome is handed to the callback
# workers once the row is free) is called once, with 'cancelled' or with
# the response.  Prints TAP-style "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory and the bin directory of the running
# cluster (test/lib.sh's QC_WORK, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_BINDIR=$2
holder=qc_lock_holder
other=qc_lock_other

qc_sql <<SQL || { echo "not ok - the roles were set up"; exit 1; }
CREATE ROLE $holder;
CREATE ROLE $other;
GRANT USAGE ON SCHEMA qc_test TO $holder, $other;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
                          queryclaw.cancel_requests(bigint[]), queryclaw.wait(bigint[], interval)
    TO $holder, $other;
CREATE TABLE qc_lock_seen (id bigint, error text, status text);
GRANT INSERT ON qc_lock_seen TO $holder;
CREATE FUNCTION qc_lock_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$ INSERT INTO qc_lock_seen VALUES (id, error, result->>'status') \$\$;
GRANT EXECUTE ON FUNCTION qc_lock_note(bigint, jsonb, text, jsonb) TO $holder;
SQL

# Queue a request as role $1 to path $2 (with callback $3, if given);
# prints its id.
queue() {
	qc_sql -c "SET ROLE $1" -c "SELECT queryclaw.api_call_async(qc_test.url('$2'), callback => ${3:-NULL})"
}

# The time another role's request takes from its queueing to its final
# state, in ms.
other_request_ms() {
	local start fast
	start=$(date +%s%N)
	fast=$(queue $other /hello)
	qc_sql -c "SELECT count(*) FROM queryclaw.wait(ARRAY[$fast]::bigint[], '20 s')" >/dev/null
	echo $((($(date +%s%N) - start) / 1000000))
}

# A cancel of a request on the wire, holding its row for 8 s and then
# committing: the held request ends cancelled, without a result; or rolling
# back: the outcome the worker held back is recorded then, whole (the
# response's body as the fixture sent it).  Meanwhile
# another role's request is timed.
for case in "COMMIT:state = 'cancelled' AND result IS NULL:cancelled " \
	"ROLLBACK:state = 'done' AND result->>'status' = '200' AND result->>'body' = E'slow done\\n': 200"; do
	end=${case%%:*}
	called=${case##*:}
	case=${case%:*}
	slow=$(queue $holder '/slow?ms=1500' "'qc_lock_note(bigint,jsonb,text,jsonb)'::regprocedure")
	qc_until_true "SELECT state = 'running' FROM queryclaw.requests WHERE id = $slow" ||
		echo "not ok - request $slow went on the wire"
	qc_sql -c "SET ROLE $holder" -c "BEGIN" -c "SELECT queryclaw.cancel_requests(ARRAY[$slow]::bigint[])" \
		-c "SELECT pg_sleep(8)" -c "$end" >/dev/null &
	canceller=$!
	qc_until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(8)')" ||
		echo "not ok - the cancel holds the row"
	ms=$(other_request_ms)
	qc_check "another role's request ended while a cancel ($end) held a running request's row" \
		"$([ "$ms" -lt 4000 ] && echo yes || echo "no: $ms ms")" yes
	wait "$canceller"
	qc_until_true "SELECT ${case#*:} FROM queryclaw.requests WHERE id = $slow"
	qc_check "the held request ended as the cancel's $end says" "$?" 0 ||
		qc_sql -c "SELECT '# it is ' || state || ', ' || coalesce(error, 'no error') || ', '
			|| coalesce(left(result::text, 60), 'no result') FROM queryclaw.requests WHERE id = $slow"
	qc_until_true "SELECT finished_at IS NOT NULL FROM queryclaw.requests WHERE id = $slow"
	sleep 0.5	# a second call, if any, would come now
	qc_check "its callback was called once, as the cancel's $end says" \
		"$(qc_sql -c "SELECT count(*) || ' ' || string_agg(coalesce(error, '') || ' ' || coalesce(status, ''), ',')
		                FROM qc_lock_seen WHERE id = $slow")" "1 $called"
done

qc_sql -c "DELETE FROM queryclaw.requests WHERE role IN ('$holder'::regrole, '$other'::regrole)" \
	-c "DROP TABLE qc_lock_seen" -c "DROP FUNCTION qc_lock_note(bigint, jsonb, text, jsonb)" \
	-c "DROP OWNED BY $holder, $other" -c "DROP ROLE $holder, $other"
