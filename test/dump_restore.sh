#!/usr/bin/env bash
# test/dump_restore.sh: pg_dump and pg_restore keep the extension's rows.
#
# Usage (from test/run.sh, with the cluster of qc_start_cluster running):
#     test/dump_restore.sh WORKDIR BINDIR DATABASE
#
# Dumps DATABASE (custom format, with the cluster's own pg_dump), restores
# it into a new database with pg_restore, and compares, for every table
# and sequence the extension marks with pg_extension_config_dump, the rows
# (and the sequence's position) before and after, and a foreign server of
# the extension's wrapper with its user mapping, and an enrichment whose
# rows are done (nothing asked again after the restore).  Prints one "ok - " or
# "not ok - " line per check, for test/run.sh to count.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1
QC_BINDIR=$2
db=$3
restored=${db}_restored
dump="$QC_WORK/$db.dump"

sql() {
	qc_as_pg "$QC_BINDIR/psql" -X -At -v ON_ERROR_STOP=1 -h "$QC_WORK" -p 5432 "$@"
}

# The extension's config-dump relations, one per line, as kind and name.
config_relations() {
	sql -d "$1" -c "SELECT c.relkind::text || ' ' || c.oid::regclass::text
	                  FROM pg_extension e, unnest(e.extconfig) AS x(oid)
	                  JOIN pg_class c ON c.oid = x.oid
	                 WHERE e.extname = 'queryclaw_ext' ORDER BY 1"
}

# A relation's contents as one line: rows (count and digest, in a stable
# order) for a table, the position for a sequence.
contents() {
	local database=$1 kind=$2 rel=$3
	if [ "$kind" = S ]; then
		sql -d "$database" -c "SELECT 'at ' || last_value || CASE WHEN is_called THEN ', called' ELSE '' END FROM $rel"
	else
		sql -d "$database" -c "SELECT count(*) || ' rows, ' || coalesce(md5(string_agg(r::text, E'\n' ORDER BY r::text)), 'none')
		                         FROM $rel r"
	fi
}

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

relations=$(config_relations "$db") || { not_ok "could not list the extension's config-dump tables"; exit 1; }
if ! grep -q ' queryclaw.audit_log$' <<<"$relations"; then
	not_ok "queryclaw.audit_log is not marked with pg_extension_config_dump"
fi
# Every table of the extension holds rows that matter (the enrichments'
# kept results too: a restored database must not ask them again): a table
# added without pg_extension_config_dump would be emptied by a dump and
# restore.
unmarked=$(sql -d "$db" -c "SELECT string_agg(c.oid::regclass::text, ', ')
                              FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
                             WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
                               AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queryclaw_ext')
                               AND c.relkind = 'r'
                               AND c.oid <> ALL ((SELECT extconfig FROM pg_extension
                                                   WHERE extname = 'queryclaw_ext')::oid[])")
if [ -n "$unmarked" ]; then
	not_ok "tables of the extension not marked with pg_extension_config_dump: $unmarked"
else
	ok "every table of the extension is marked with pg_extension_config_dump"
fi
rows=$(sql -d "$db" -c "SELECT count(*) FROM queryclaw.audit_log")
[ "${rows:-0}" -gt 0 ] || not_ok "database $db has no audit rows to dump"

# The user's endpoints: a server of the extension's wrapper, a user
# mapping and a grant, which pg_dump writes as the user's own objects
# (the options in any order).
endpoints() {
	sql -d "$1" -c "SELECT s.srvname || ' ' || s.srvacl::text || ' ' || u.umoptions::text || ' '
	                       || (SELECT string_agg(o, ',' ORDER BY o) FROM unnest(s.srvoptions) AS o)
	                  FROM pg_foreign_server s JOIN pg_user_mapping u ON u.umserver = s.oid
	                 WHERE s.srvname = 'qc_dump_api'"
}
sql -d "$db" -q -c "SET client_min_messages = warning" \
	-c "DROP ROLE IF EXISTS qc_dump_etl" -c "CREATE ROLE qc_dump_etl" \
	-c "CREATE SERVER qc_dump_api FOREIGN DATA WRAPPER queryclaw
	      OPTIONS (url 'https://api.example.com/v1/', rate_limit '5/s')" \
	-c "CREATE USER MAPPING FOR PUBLIC SERVER qc_dump_api
	      OPTIONS (headers '{\"Authorization\": \"Bearer dump-0123456789\"}')" \
	-c "GRANT USAGE ON FOREIGN SERVER qc_dump_api TO qc_dump_etl" \
	-c "GRANT queryclaw_user TO qc_dump_etl" ||
	not_ok "could not make a queryclaw server in $db"

# An enrichment whose rows are all done: its definition, states, view,
# write-back and triggers must come back, and the restored rows must not
# be asked again (the restore loads the table before its triggers exist).
sql -d "$db" -q >/dev/null <<'SQL' || not_ok "could not make an enrichment in $db"
SET client_min_messages = warning;
CREATE TABLE qc_dump_firms (id int PRIMARY KEY, name text, asked text);
INSERT INTO qc_dump_firms VALUES (1, 'one'), (2, 'two'), (3, 'three');
SELECT queryclaw.create_enrichment('qc_dump_firms', 'qc_dump_firms',
    request => $$queryclaw.api_call_request(current_setting('qc_test.base') || '/echo?n=' || name)$$,
    apply => $$asked = result #>> '{body,query,n}'$$);
SQL
enriched() {
	sql -d "$1" -c "SELECT done || ' done, ' || stale || ' stale, ' || running || ' running'
	                  FROM queryclaw.enrichments WHERE name = 'qc_dump_firms'"
}
for _ in $(seq 300); do
	[ "$(enriched "$db")" = "3 done, 0 stale, 0 running" ] && break
	sleep 0.1
done
qc_check "the enrichment to dump is done" "$(enriched "$db")" "3 done, 0 stale, 0 running"

sql -d postgres -q -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $restored"
if qc_as_pg "$QC_BINDIR/pg_dump" -h "$QC_WORK" -p 5432 -Fc -f "$dump" "$db" 2>"$dump.log" &&
	sql -d postgres -q -c "CREATE DATABASE $restored" &&
	qc_as_pg "$QC_BINDIR/pg_restore" -h "$QC_WORK" -p 5432 --exit-on-error -d "$restored" "$dump" 2>>"$dump.log"; then
	ok "pg_dump -Fc of $db and pg_restore into a new database"
else
	not_ok "pg_dump -Fc of $db and pg_restore into a new database"
	cat "$dump.log"
	exit 1
fi

version=$(sql -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext'")
restored_version=$(sql -d "$restored" -c "SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext'")
if [ "$version" = "$restored_version" ]; then
	ok "the restored database has queryclaw_ext $restored_version"
else
	not_ok "the restored database has queryclaw_ext '$restored_version', the dumped one '$version'"
fi

while read -r kind rel; do
	before=$(contents "$db" "$kind" "$rel")
	after=$(contents "$restored" "$kind" "$rel")
	if [ -n "$before" ] && [ "$before" = "$after" ]; then
		ok "$rel kept by pg_dump and pg_restore (${before%%,*})"
	else
		not_ok "$rel changed by pg_dump and pg_restore: before $before, after ${after:-nothing}"
	fi
done <<<"$relations"

before=$(endpoints "$db")
after=$(endpoints "$restored")
if [ -n "$before" ] && [ "$before" = "$after" ]; then
	ok "a queryclaw server, its user mapping and its grant kept by pg_dump and pg_restore"
else
	not_ok "a queryclaw server changed by pg_dump and pg_restore: before '$before', after '${after:-nothing}'"
fi

# queryclaw_user's privileges come back with the extension, and the
# restore (in the same cluster) takes the role as it is, with the member
# the DBA granted: that member may call what a caller calls, not sql_query.
can_call() {
	sql -d "$1" -c "SELECT string_agg(has_function_privilege('qc_dump_etl', f, 'EXECUTE')::text, ' ' ORDER BY n)
	                  FROM unnest(ARRAY['queryclaw.web_fetch(text, text, integer, text)',
	                                    'queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)',
	                                    'queryclaw.sql_query(text)']) WITH ORDINALITY AS x(f, n)"
}
before=$(can_call "$db")
after=$(can_call "$restored")
if [ "$before" = "true true false" ] && [ "$after" = "$before" ]; then
	ok "queryclaw_user's privileges kept by pg_dump and pg_restore, its member taken as it is"
else
	not_ok "queryclaw_user's privileges (web_fetch, api_call_async, sql_query) before '$before', after '${after:-nothing}'"
fi

qc_check "a restored enrichment has its rows done, none asked again" \
	"$(enriched "$restored")" "3 done, 0 stale, 0 running"
qc_check "a restored enrichment's values" \
	"$(sql -d "$restored" -c "SELECT string_agg(asked, ',' ORDER BY id) FROM qc_dump_firms")" "one,two,three"
sql -d "$restored" -q -c "INSERT INTO qc_dump_firms VALUES (4, 'four')" -c "UPDATE qc_dump_firms SET name = 'uno' WHERE id = 1"
qc_check "a restored enrichment's triggers make an inserted and an updated row stale" \
	"$(sql -d "$restored" -c "SELECT string_agg(key ->> 'id', ',' ORDER BY key ->> 'id') FROM queryclaw.enrichment_rows WHERE state = 'stale'")" "1,4"
qc_check "a restored enrichment's request view reads the new rows" \
	"$(sql -d "$restored" -c "SELECT count(*) FROM queryclaw.enrichment_definitions d,
	       LATERAL (SELECT 1) x WHERE d.name = 'qc_dump_firms'
	       AND (SELECT pg_catalog.to_regclass('queryclaw.enrichment_' || d.id || '_request')) IS NOT NULL")" 1

# A restored log goes on: the next row gets the next id.
next=$(sql -q -d "$restored" -c "INSERT INTO queryclaw.audit_log (role, pid, func, method, url, outcome)
                              VALUES (current_user, 0, 'restore_test', 'GET', 'http://restored/', 'ok')
                              RETURNING id > (SELECT max(id) FROM queryclaw.audit_log WHERE func <> 'restore_test')")
if [ "$next" = t ]; then
	ok "a row added after the restore gets an id above every restored one"
else
	not_ok "a row added after the restore reuses an id (got: ${next:-an error})"
fi
sql -d postgres -q -c "DROP DATABASE $restored"
sql -d "$db" -q -c "DROP SERVER qc_dump_api CASCADE" -c "DROP ROLE qc_dump_etl" \
	-c "SET client_min_messages = warning" -c "DROP TABLE qc_dump_firms CASCADE"
