#!/usr/bin/env bash
# test/enrich_service.sh: an enrichment's backfill as a service (run by
# test/run.sh on its preloaded cluster, after the suite).
#
# 1. A backfill of 3,000 rows, each asking the fixture's /flaky under a key
#    of its own (answered after 50 ms), never has more than the cap of the
#    enrichment's requests unfinished; meanwhile another role's single
#    request is final long before the backfill is.  The server is stopped
#    hard (pg_ctl -m immediate) mid-backfill and started again: every row
#    ends done with its own answer, and no row that was done before the
#    crash is asked again (the fixture counts the requests of each key).
# 2. Live inserts while the backfill runs are asked too.
# 3. The enrichment's final requests leave queryclaw.requests as it goes:
#    about the cap of its rows are in the table at the end, not every one.
#
# Arguments: the work directory, the data directory and the bin directory
# of the running cluster (test/lib.sh's QC_WORK, QC_PGDATA, QC_BINDIR).
# Prints TAP-style "ok - ..." / "not ok - ..." lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_PGDATA=$2 QC_BINDIR=$3
db=queryclaw_regression
owner=qc_enrich_owner
other=qc_enrich_other
rows=3000

sql() { QC_DB=$db qc_sql "$@"; }

sql >/dev/null <<SQL || { echo "not ok - the test was set up"; exit 1; }
CREATE ROLE $owner;
CREATE ROLE $other;
GRANT USAGE ON SCHEMA qc_test TO $owner, $other;
GRANT EXECUTE ON FUNCTION
    queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval),
    queryclaw.web_fetch_request(text, text, integer),
    queryclaw.api_call_request(text, text, jsonb, text, integer, text),
    queryclaw.llm_request(text, text[], text, text, integer, jsonb),
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
    TO $owner, $other;
CREATE TABLE qc_enrich_big (id int PRIMARY KEY, answer text);
INSERT INTO qc_enrich_big (id) SELECT generate_series(1, $rows);
ALTER TABLE qc_enrich_big OWNER TO $owner;
-- the most of the enrichment's requests unfinished at once, seen by a sampler
CREATE TABLE qc_enrich_peak (unfinished bigint);
SQL

# The backfill starts as the creating transaction commits.
sql >/dev/null <<SQL || { echo "not ok - the enrichment was created"; exit 1; }
SET ROLE $owner;
SELECT queryclaw.create_enrichment('big', 'qc_enrich_big',
    request => \$\$queryclaw.api_call_request(qc_test.url('/flaky?fail=0&ms=50&run=enr-big-' || id))\$\$,
    apply => \$\$answer = result #>> '{body,key}'\$\$);
SQL

# Another role's single request, queued once the backfill is under way.
QC_DB=$db qc_wait_for "SELECT (SELECT done FROM queryclaw.enrichments WHERE name = 'big') > 0" 60
other_id=$(sql -c "SET ROLE $other" -c "SELECT queryclaw.api_call_async(qc_test.url('/flaky?fail=0&run=enr-other'))")
peak=0
for _ in $(seq 100); do
	n=$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE context ->> 'enrichment' = 'big'
	                                                   AND state IN ('queued', 'running', 'retrying')")
	[ "${n:-0}" -gt "$peak" ] && peak=$n
	[ "$(sql -c "SELECT state FROM queryclaw.requests WHERE id = $other_id")" = done ] && break
	sleep 0.05
done
left=$(sql -c "SELECT stale + running FROM queryclaw.enrichments WHERE name = 'big'")
qc_check "another role's request is final while the backfill still has rows to ask (${left} left)" \
	"$([ "$(sql -c "SELECT state FROM queryclaw.requests WHERE id = $other_id")" = done ] && [ "${left:-0}" -gt 0 ] && echo yes)" yes

# Stop the server hard mid-backfill, and start it again.
done_before=$(sql -c "SELECT count(*) FROM queryclaw.enrichment_rows WHERE state = 'done'")
sql -c "CREATE TABLE qc_enrich_done_before AS SELECT key FROM queryclaw.enrichment_rows WHERE state = 'done'"
qc_pg_ctl -m immediate restart || { echo "not ok - the server restarted"; exit 1; }
qc_check "the crash came mid-backfill ($done_before of $rows done)" \
	"$([ "$done_before" -gt 0 ] && [ "$done_before" -lt "$rows" ] && echo yes)" yes

# Live inserts during the rest of the backfill are asked too (at most 5
# minutes for all: a loaded machine does a few hundred rows a second).
sql -c "INSERT INTO qc_enrich_big (id) SELECT generate_series($rows + 1, $rows + 100)"
for _ in $(seq 3000); do
	n=$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE context ->> 'enrichment' = 'big'
	                                                   AND state IN ('queued', 'running', 'retrying')")
	[ "${n:-0}" -gt "$peak" ] && peak=$n
	[ "$(sql -c "SELECT stale + running FROM queryclaw.enrichments WHERE name = 'big'")" = 0 ] && break
	sleep 0.1
done
qc_check "every row is done with its own answer after the crash" \
	"$(sql -c "SELECT count(*) FILTER (WHERE answer = 'enr-big-' || id) || ' of ' || count(*) FROM qc_enrich_big")" \
	"$((rows + 100)) of $((rows + 100))"
qc_check "at most the cap of the enrichment's requests were unfinished at once (peak $peak)" \
	"$([ "$peak" -le 1000 ] && [ "$peak" -gt 0 ] && echo yes)" yes
# its final requests leave queryclaw.requests as the backfill goes (half
# the cap of them at most are kept), not only after async_retention
kept=$(sql -c "SELECT count(*) FROM queryclaw.requests WHERE context ->> 'enrichment' = 'big'")
qc_check "at most about the cap of the enrichment's requests are kept in queryclaw.requests ($kept of $((rows + 100)))" \
	"$([ "$kept" -le 1500 ] && echo yes)" yes
sql -c "CREATE TABLE qc_enrich_counts AS
        SELECT queryclaw.api_call(qc_test.url('/flaky/counts?prefix=enr-big-')) -> 'body' AS c"
qc_check "no row done before the crash was asked again" \
	"$(sql -c "SELECT count(*) FROM qc_enrich_done_before b, qc_enrich_counts
	            WHERE c -> 'repeated' ? ('enr-big-' || (b.key ->> 'id'))")" 0
qc_check "every row was asked (a request on the wire at the crash may have gone twice)" \
	"$(sql -c "SELECT c ->> 'keys' FROM qc_enrich_counts")" "$((rows + 100))"

sql >/dev/null <<SQL
SET client_min_messages = warning;
DROP TABLE qc_enrich_big CASCADE;
DROP TABLE qc_enrich_peak, qc_enrich_done_before, qc_enrich_counts;
DROP OWNED BY $owner, $other;
DROP ROLE $owner, $other;
SQL
