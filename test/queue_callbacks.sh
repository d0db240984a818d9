#!/usr/bin/env bash
# test/queue_callbacks.sh: where the callbacks of asynchronous requests run,
# and what they may do (run by test/run.sh on its preloaded cluster, after
# the suite; it restarts the cluster once).
#
# 1. A callback's own network calls never touch another role's transfers.
#    While bob's slow requests are on the wire, alice's callbacks call
#    api_call, web_fetch, api_call_many and web_fetch_many: each is refused
#    (55000) with a hint to queue a request instead, and a callback that
#    does not catch the refusal fails its request with it; alice's
#    callbacks never see bob's responses; bob's requests all end done with
#    their own responses and their callbacks run once; none is left
#    running.  A callback may still queue a request (api_call_async), which
#    goes and is called back in turn.  A fast shutdown then stops the
#    workers.  (When callbacks ran inside the async worker's run, such a
#    call reset the slots of bob's transfers, took their responses, left
#    them running for ever, or spun the worker so that a fast shutdown
#    could not stop it.)
# 2. One role's slow callbacks hold up neither another role's outcome nor
#    its callback for more than one of them.  Alice's six requests each have
#    a callback that takes 2 s; bob's request, queued once hers were
#    answered, has a callback, carol's has none.  The order of events is
#    asserted from the times the callbacks write, not by a stopwatch: bob's
#    callback ran (and his request was final) before alice's third callback
#    ended; carol's request was final before alice's second callback ended;
#    alice's requests waiting for their callbacks said "callback queued".
#    (When the worker ran callbacks one after another in its loop, bob's and
#    carol's requests ended after all six of alice's callbacks.)
# Prints TAP-style "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory, the data directory and the bin directory
# of the running cluster (test/lib.sh's QC_WORK, QC_PGDATA, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_PGDATA=$2 QC_BINDIR=$3
alice=qc_cb_alice
bob=qc_cb_bob
carol=qc_cb_carol

qc_sql >/dev/null <<SQL || { echo "not ok - the test was set up"; exit 1; }
SET client_min_messages = warning;
CREATE ROLE $alice;
CREATE ROLE $bob;
CREATE ROLE $carol;
GRANT USAGE ON SCHEMA qc_test TO $alice, $bob, $carol;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.web_fetch(text, text, integer, text),
    queryclaw.api_call_many(jsonb, integer),
    queryclaw.web_fetch_many(text[], text, integer)
    TO $alice, $bob, $carol;
-- what each callback saw: who, the request, when it ended, what it tried,
-- the SQLSTATE that raised, and the data it got
CREATE TABLE qc_cb_seen (who text, id bigint, at timestamptz, what text, sqlstate text, data text);
GRANT INSERT ON qc_cb_seen TO $alice, $bob, $carol;
-- a callback that makes the network call context->>'fn' names, catching
-- what it raises
CREATE FUNCTION qc_cb_netcall(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
    fn text := context->>'fn';
    got text;
    base text := current_setting('qc_test.base');
BEGIN
    BEGIN
        CASE fn
        WHEN 'api_call' THEN
            got := queryclaw.api_call(base || '/echo?who=alice')::text;
        WHEN 'web_fetch' THEN
            got := queryclaw.web_fetch(base || '/echo?who=alice');
        WHEN 'api_call_many' THEN
            SELECT string_agg(coalesce(m.url, '') || ' ' || coalesce(m.response::text, m.error), E'\n')
              INTO got
              FROM queryclaw.api_call_many(jsonb_build_array(jsonb_build_object('url', base || '/echo?who=alice-1'),
                                                             jsonb_build_object('url', base || '/echo?who=alice-2'))) m;
        WHEN 'web_fetch_many' THEN
            SELECT string_agg(coalesce(m.url, '') || ' ' || coalesce(m.content, m.error), E'\n')
              INTO got
              FROM queryclaw.web_fetch_many(ARRAY[base || '/echo?who=alice-1', base || '/echo?who=alice-2']) m;
        END CASE;
        INSERT INTO qc_cb_seen VALUES ('alice', id, clock_timestamp(), fn, NULL, got);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS got = PG_EXCEPTION_HINT;
        INSERT INTO qc_cb_seen VALUES ('alice', id, clock_timestamp(), fn, SQLSTATE,
                                       SQLERRM || ' / ' || coalesce(got, ''));
    END;
END
\$\$;
-- the same, not catching it
CREATE FUNCTION qc_cb_netcall_raw(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$
SELECT queryclaw.web_fetch(current_setting('qc_test.base') || '/hello')::text IS NULL;
\$\$;
-- a callback that notes what it got
CREATE FUNCTION qc_cb_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$
INSERT INTO qc_cb_seen VALUES (context->>'who', id, clock_timestamp(), 'note', NULL,
                               coalesce(result->'body'->>'key', result::text, error));
\$\$;
-- a callback that queues a request of its own, called back in turn
CREATE FUNCTION qc_cb_followup(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$
INSERT INTO qc_cb_seen
SELECT 'followup-queued', queryclaw.api_call_async(current_setting('qc_test.base') || '/flaky?fail=0&run=followup',
                                                   callback => 'qc_cb_note(bigint,jsonb,text,jsonb)'::regprocedure,
                                                   context => '{"who": "followup"}'),
       clock_timestamp(), 'queued', NULL, NULL;
\$\$;
-- a callback that takes 2 s
CREATE FUNCTION qc_cb_slow(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS \$\$
SELECT pg_sleep(2);
INSERT INTO qc_cb_seen VALUES (context->>'who', id, clock_timestamp(), 'slow', NULL, NULL);
\$\$;
GRANT EXECUTE ON FUNCTION qc_cb_netcall(bigint, jsonb, text, jsonb), qc_cb_netcall_raw(bigint, jsonb, text, jsonb),
                          qc_cb_followup(bigint, jsonb, text, jsonb), qc_cb_note(bigint, jsonb, text, jsonb),
                          qc_cb_slow(bigint, jsonb, text, jsonb)
    TO $alice, $bob, $carol;
SQL

# Queue, as role $1, one api_call_async to path $2 with callback $3 (or
# none) and context $4; prints its id.
queue() {
	local cb=NULL
	[ "$3" != - ] && cb="'$3(bigint,jsonb,text,jsonb)'::regprocedure"
	qc_sql -c "SET ROLE $1" -c "SELECT queryclaw.api_call_async(qc_test.url('$2'), callback => $cb, context => '$4')"
}

# Wait (at most $2 s) until the SQL condition $1 holds.
wait_for() {
	for _ in $(seq $(($2 * 10))); do
		[ "$(qc_sql -c "SELECT $1" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	return 1
}

settled="NOT EXISTS (SELECT FROM queryclaw.requests WHERE state IN ('queued', 'running', 'retrying'))
         AND NOT EXISTS (SELECT FROM queryclaw.requests WHERE finished_at IS NULL)"

# ---- 1. a callback's network calls, while another role's are on the wire

qc_sql -c "TRUNCATE queryclaw.requests CASCADE" >/dev/null
for i in $(seq 8); do
	queue $bob "/flaky?fail=0&ms=1500&run=bob-$i" qc_cb_note "{\"who\": \"bob\", \"n\": $i}" >/dev/null
done
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE state = 'running' AND role = '$bob'::regrole) = 8" 20 ||
	echo "not ok - bob's requests went on the wire"
for fn in api_call web_fetch api_call_many web_fetch_many; do
	queue $alice /hello qc_cb_netcall "{\"fn\": \"$fn\"}" >/dev/null
done
raw=$(queue $alice /hello qc_cb_netcall_raw '{}')
queue $alice /hello qc_cb_followup '{}' >/dev/null
wait_for "$settled AND EXISTS (SELECT FROM qc_cb_seen WHERE who = 'followup')" 40 ||
	echo "not ok - the requests settled ($(qc_sql -c "SELECT string_agg(r.role || ' ' || r.state || coalesce(' ' || r.waiting, ''), ', ') FROM queryclaw.requests r WHERE r.finished_at IS NULL"))"

qc_check "a callback's api_call, web_fetch, api_call_many and web_fetch_many are refused (55000)" \
	"$(qc_sql -c "SELECT string_agg(what || ' ' || coalesce(sqlstate, 'not refused'), ', ' ORDER BY what) FROM qc_cb_seen WHERE who = 'alice'")" \
	"api_call 55000, api_call_many 55000, web_fetch 55000, web_fetch_many 55000"
qc_check "the refusal's hint says to queue a request instead" \
	"$(qc_sql -c "SELECT count(*) FROM qc_cb_seen WHERE who = 'alice' AND data LIKE '%/ Queue %api_call_async%'")" 4
qc_check "no callback of alice's saw a response of bob's" \
	"$(qc_sql -c "SELECT count(*) FROM qc_cb_seen WHERE who = 'alice' AND data LIKE '%bob%'")
$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE role = '$alice'::regrole AND result::text LIKE '%bob%'")" "0
0"
qc_check "a callback that does not catch the refusal fails its request with it" \
	"$(qc_sql -c "SELECT state || ' ' || sqlstate || ' ' || (error LIKE 'callback failed: %') || ' ' || (result->>'status')
	                FROM queryclaw.requests WHERE id = $raw")" "failed 55000 true 200"
qc_check "bob's requests all ended done, each with its own response" \
	"$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE role = '$bob'::regrole AND state = 'done'
	                AND result->'body'->>'key' = 'bob-' || (context->>'n')")" 8
qc_check "bob's callbacks ran once each, with his responses" \
	"$(qc_sql -c "SELECT count(DISTINCT s.id) || ' ' || count(*) FROM qc_cb_seen s JOIN queryclaw.requests r USING (id)
	                WHERE s.who = 'bob' AND s.data = 'bob-' || (r.context->>'n')")" "8 8"
qc_check "no request is left running" \
	"$(qc_sql -c "SELECT count(*) FROM queryclaw.requests WHERE state = 'running'")" 0
qc_check "a callback queued a request of its own, which went and was called back" \
	"$(qc_sql -c "SELECT count(*) FROM qc_cb_seen q JOIN queryclaw.requests r ON r.id = q.id
	                JOIN qc_cb_seen n ON n.id = q.id AND n.who = 'followup' AND n.data = 'followup'
	                WHERE q.who = 'followup-queued' AND r.state = 'done'")" 1

# ---- 2. fairness between roles' callbacks

qc_sql -c "TRUNCATE queryclaw.requests CASCADE" -c "TRUNCATE qc_cb_seen" -c "SELECT qc_test.reset_requests()" >/dev/null
for i in $(seq 6); do
	queue $alice /hello qc_cb_slow '{"who": "alice"}' >/dev/null
done
# her six responses came (the first callback runs)
wait_for "qc_test.requests_served() >= 6" 20 || echo "not ok - alice's requests were answered"
waiting_seen=no
wait_for "(SELECT count(*) FROM queryclaw.requests WHERE role = '$alice'::regrole AND state = 'running'
           AND waiting = 'callback queued') >= 5" 5 && waiting_seen=yes
bob_id=$(queue $bob /hello qc_cb_note '{"who": "bob"}')
carol_id=$(queue $carol /hello - '{}')
wait_for "$settled" 40 || echo "not ok - the requests settled"
qc_check "alice's requests waiting for their callbacks say 'callback queued'" "$waiting_seen" yes
# the end of alice's n-th callback, and whether $1 (a timestamp) came before it
before_alice() {
	qc_sql -c "SELECT $1 < (SELECT at FROM qc_cb_seen WHERE who = 'alice' ORDER BY at OFFSET $2 - 1 LIMIT 1)"
}
qc_check "bob's callback ran before alice's third callback ended" \
	"$(before_alice "(SELECT at FROM qc_cb_seen WHERE who = 'bob')" 3)" t
qc_check "bob's request was final before alice's third callback ended" \
	"$(before_alice "(SELECT finished_at FROM queryclaw.requests WHERE id = $bob_id)" 3)" t
qc_check "carol's request, without a callback, was final before alice's second callback ended" \
	"$(before_alice "(SELECT finished_at FROM queryclaw.requests WHERE id = $carol_id)" 2)" t
qc_check "alice's six callbacks ran, and her requests are done" \
	"$(qc_sql -c "SELECT (SELECT count(*) FROM qc_cb_seen WHERE who = 'alice') || ' '
	                || (SELECT count(*) FROM queryclaw.requests WHERE role = '$alice'::regrole AND state = 'done')")" "6 6"

# ---- a fast shutdown stops every worker (pg_ctl waits at most 30 s)
qc_pg_ctl -t 30 -m fast restart
qc_check "a fast shutdown stops the workers" "$?" 0

qc_sql >/dev/null <<SQL
SET client_min_messages = warning;
TRUNCATE queryclaw.requests CASCADE;
DROP TABLE qc_cb_seen;
DROP OWNED BY $alice, $bob, $carol;
DROP FUNCTION qc_cb_netcall(bigint, jsonb, text, jsonb), qc_cb_netcall_raw(bigint, jsonb, text, jsonb),
              qc_cb_followup(bigint, jsonb, text, jsonb), qc_cb_note(bigint, jsonb, text, jsonb),
              qc_cb_slow(bigint, jsonb, text, jsonb);
DROP ROLE $alice, $bob, $carol;
SQL
