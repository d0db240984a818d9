#!/usr/bin/env bash
# test/hostile_dump.sh: what hostile servers send survives pg_dump and a
# restore.
#
# test/run.sh calls it once the main suite has run, with the cluster still
# up.  In a database, it fills a table from api_call() and web_fetch() of
# the fixture's /hostile/ routes (bytes that are not valid text: see
# test/fixture/server.py), dumps the whole database with the cluster's
# pg_dump, restores it with pg_restore into a fresh database, and compares
# that table and queryclaw.audit_log in both.  Text that is not valid in
# the database encoding would be dumped as it is and refused by the
# restore.  Prints "ok - ..." or "not ok - ..." for run.sh to count.
#
# Usage: test/hostile_dump.sh WORKDIR BINDIR DATABASE [ENCODING]
#
# Without ENCODING, DATABASE is the regression database, where audit rows
# are durable, so that failed calls keep theirs.  With it, DATABASE is
# created in that encoding (and the extension in it): its audit rows are
# written in the caller's transaction, so only the calls that succeed
# keep theirs; what does not fit the encoding must become '?'.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1
QC_BINDIR=$2
db=$3
encoding=${4:-}
restored=${db}_hostile_restored
dump="$QC_WORK/$db.hostile.dump"
log="$QC_WORK/$db.hostile.log"
: >"$log"

# One statement per call, each in its own transaction: a failed call's
# error goes into the table.
fill_sql() {
	echo "DROP TABLE IF EXISTS public.hostile_results;"
	echo "CREATE TABLE public.hostile_results (call text PRIMARY KEY, result jsonb, error text);"
	for route in location location-host headers nul-header reason content-type json error-page 'many-headers?n=3000'; do
		for call in "queryclaw.api_call(%L)" "to_jsonb(queryclaw.web_fetch(%L))"; do
			cat <<SQL
DO \$\$
DECLARE
    stmt text := format('SELECT $call', current_setting('qc_test.base') || '/hostile/$route');
    r jsonb;
BEGIN
    EXECUTE stmt INTO r;
    INSERT INTO public.hostile_results VALUES (stmt, r, NULL);
EXCEPTION WHEN OTHERS THEN
    INSERT INTO public.hostile_results VALUES (stmt, NULL, SQLERRM);
END
\$\$;
SQL
		done
	done
	qc_sql_wait_for_audit
}

# The same digest of the table and of the audit log from either database.
digest_sql="SELECT (SELECT count(*) FROM public.hostile_results) || ' results, '
    || (SELECT count(*) FROM queryclaw.audit_log WHERE url LIKE '%/hostile/%') || ' hostile audit rows, '
    || (SELECT md5(string_agg(h::text, '|' ORDER BY call)) FROM public.hostile_results h) || ' '
    || (SELECT md5(string_agg(a::text, '|' ORDER BY id)) FROM queryclaw.audit_log a)"

digest() {
	qc_psql -At -d "$1" -c "$digest_sql" 2>>"$log"
}

# createdb in the encoding asked for (template0: the template's is UTF-8)
create_db() {
	local name=$1
	qc_psql -q -d postgres -c "DROP DATABASE IF EXISTS $name" >>"$log" 2>&1 &&
		if [ -n "$encoding" ]; then
			qc_psql -q -d postgres -c "CREATE DATABASE $name TEMPLATE template0 ENCODING '$encoding' LOCALE 'C'" >>"$log" 2>&1
		else
			qc_psql -q -d postgres -c "CREATE DATABASE $name" >>"$log" 2>&1
		fi
}

what="results and audit rows of hostile responses${encoding:+ in a database in $encoding}"
if { [ -z "$encoding" ] || { create_db "$db" && qc_psql -q -d "$db" -c "CREATE EXTENSION queryclaw_ext" >>"$log" 2>&1; }; } &&
	fill_sql | qc_psql -q -d "$db" >>"$log" 2>&1 &&
	qc_as_pg "$QC_BINDIR/pg_dump" -h "$QC_WORK" -p 5432 -Fc -f "$dump" "$db" >>"$log" 2>&1 &&
	create_db "$restored" &&
	qc_as_pg "$QC_BINDIR/pg_restore" -h "$QC_WORK" -p 5432 --exit-on-error -d "$restored" "$dump" >>"$log" 2>&1; then
	before=$(digest "$db")
	after=$(digest "$restored")
	if [ -n "$before" ] && [ "$before" = "$after" ] && [[ "$before" != 0* ]] && [[ "$before" != *" 0 hostile"* ]]; then
		echo "ok - pg_dump and pg_restore keep the $what ($(sed 's/, [0-9a-f]* [0-9a-f]*$//' <<<"$before"))"
		exit 0
	fi
	echo "not ok - after pg_dump and pg_restore the $what differ: '$before' vs '$after'"
else
	echo "not ok - pg_dump and pg_restore of the $what failed:"
fi
sed 's/^/#   /' "$log" | tail -20
exit 1
