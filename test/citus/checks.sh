#!/usr/bin/env bash
# test/citus/checks.sh: the checks on a Citus cluster that test/citus/run.sh
# starts (a coordinator on port 5432, workers on 5433 and 5434, and a third
# worker on 5435 that joins midway, each with database queryclaw_citus as
# queryclaw.database).
#
# Makes the cluster (nodes added, CREATE EXTENSION on the coordinator
# alone), then checks what docs/citus.md says: the extension propagated,
# the distributed UPDATE Citus refuses and the patterns that work instead,
# requests queued by a pushed-down SELECT with callbacks that update the
# distributed table, ids distinct across nodes and wait, cancel_requests and
# retry_requests on ids of another node refused, an enrichment of a
# distributed table (backfill, live inserts on each worker's shard, no lost
# update, its rows seen from the coordinator, alter, pause, resume, retry,
# refresh and drop reaching every node; of a reference table and a Citus
# local table on the coordinator, of the coordinator's own table), a trigger and a colocated
# distributed function queueing on the shard's node, GRANT and REVOKE on
# the coordinator reaching the workers (what took effect there, as the role
# that ran it, on the objects it named), a two-phase commit waking the async
# workers, the third worker joining with every privilege given before and
# the limits' shares following the number of nodes, limits shared out
# between the nodes with nothing set by hand (the token budget with the
# scripted model), and the audit of the whole cluster.  Prints "ok - ..." /
# "not ok - ..." lines and "== " figures.
#
# Arguments: the work directory and the bin directory (test/lib.sh's
# QC_WORK, QC_BINDIR), the fixture server's port and the scripted model's.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
QC_WORK=$1 QC_BINDIR=$2 port=$3 llm_port=$4
base="http://127.0.0.1:$port"
db=queryclaw_citus
workers=(5433 5434)
later=5435

# SQL (stdin or -c ...) on the node of port $1, as the superuser, rows unaligned.
nsql() {
	local p=$1
	shift
	qc_as_pg "$QC_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$QC_WORK" -p "$p" -d "$db" "$@"
}
csql() { nsql 5432 "$@"; }

# The SQLSTATE of the error the SQL $2 raises on node $1 ("none" if none).
sqlstate() {
	nsql "$1" -c "DO \$qc\$ BEGIN EXECUTE \$s\$ $2 \$s\$;
		RAISE EXCEPTION USING ERRCODE = 'QC000';
	EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'state=%', SQLSTATE; END \$qc\$" 2>&1 |
		sed -n 's/.*state=\(.....\).*/\1/p' | sed 's/QC000/none/'
}

# Poll (every 50 ms, at most $2 s, default 30) until SQL $1 on the
# coordinator prints t.
until_true() {
	for _ in $(seq $((${2:-30} * 20))); do
		[ "$(csql -c "$1")" = t ] && return 0
		sleep 0.05
	done
	return 1
}

# The sum over the workers of the integer SQL $1 prints there.
on_workers_sum() {
	csql -c "SELECT coalesce(sum(result::bigint), 0) FROM run_command_on_workers(\$q\$ $1 \$q\$)"
}

# ---- the cluster (the third worker joins it midway)
for p in 5432 "${workers[@]}" "$later"; do
	nsql "$p" -c "CREATE EXTENSION citus" ||
		{ echo "not ok - citus in database $db of the node on port $p"; exit 1; }
done
csql <<SQL >/dev/null || { echo "not ok - the nodes made one cluster"; exit 1; }
SELECT citus_set_coordinator_host('127.0.0.1', 5432);
SELECT citus_add_node('127.0.0.1', 5433);
SELECT citus_add_node('127.0.0.1', 5434);
SQL
echo "ok - a coordinator and two workers made one Citus cluster"

version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$QC_ROOT/queryclaw_ext.control")
csql -c "CREATE EXTENSION queryclaw_ext" || { echo "not ok - CREATE EXTENSION queryclaw_ext on the coordinator"; exit 1; }
qc_check "CREATE EXTENSION on the coordinator reaches both workers" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'queryclaw_ext'\$\$)")" \
	"$version,$version"
qc_check "the async workers run on every node" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'queryclaw async%'\$\$)")" \
	"2,2,2"

# ---- a distributed table, and the patterns
csql <<SQL >/dev/null || { echo "not ok - the distributed table companies"; exit 1; }
CREATE TABLE companies (id bigint PRIMARY KEY, url text NOT NULL, status int, homepage text, request_id bigint);
SELECT create_distributed_table('companies', 'id');
INSERT INTO companies (id, url) SELECT i, '$base/json?c=' || i FROM generate_series(1, 1000) i;
SQL

qc_check "a volatile function in a distributed UPDATE is refused by Citus (0A000)" \
	"$(sqlstate 5432 "UPDATE companies SET homepage = queryclaw.web_fetch(url) WHERE id <= 3")" 0A000

qc_check "a MATERIALIZED CTE feeding UPDATE ... FROM calls on the shards" \
	"$(csql -c "WITH fetched AS MATERIALIZED (
		SELECT id, queryclaw.api_call(url) AS r FROM companies WHERE id <= 100)
	UPDATE companies c SET status = (f.r->>'status')::int FROM fetched f WHERE c.id = f.id
	RETURNING 1" | wc -l) $(csql -c "SELECT count(*) FROM companies WHERE status = 200")" "100 100"

csql <<SQL >/dev/null
CREATE TABLE fetched (id bigint PRIMARY KEY, status int);
SELECT create_distributed_table('fetched', 'id', colocate_with => 'companies');
SQL
qc_check "INSERT ... SELECT then UPDATE ... FROM" \
	"$(csql -c "INSERT INTO fetched SELECT id, (queryclaw.api_call(url)->>'status')::int FROM companies WHERE id > 100 AND id <= 200" &&
		csql -c "UPDATE companies c SET status = f.status FROM fetched f WHERE c.id = f.id" &&
		csql -c "SELECT count(*) FROM companies WHERE status = 200")" 200

until_true "SELECT sum(result::int) >= 200 FROM run_command_on_workers(\$\$SELECT count(*) FROM queryclaw.audit_log WHERE func = 'api_call'\$\$)" 10
qc_check "the calls ran on the workers, whose audit holds them" \
	"$(on_workers_sum "SELECT count(*) FROM queryclaw.audit_log WHERE func = 'api_call'") $(csql -c "SELECT count(*) FROM queryclaw.audit_log")" "200 0"

# ---- an enrichment of a Citus table made on a worker: refused (0A000), with
# nothing made on any node
csql -c "CREATE TABLE country (code text PRIMARY KEY, url text, page text)" -c "SELECT create_reference_table('country')" \
	-c "INSERT INTO country SELECT 'c' || i, '$base/echo?country=' || i FROM generate_series(1, 5) i" >/dev/null ||
	echo "not ok - the reference table country"
qc_check "an enrichment of a distributed table is refused on a worker (0A000): it is made on the coordinator" \
	"$(sqlstate 5433 "SELECT queryclaw.create_enrichment('company_page', source => 'companies',
		request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'homepage')")" 0A000
qc_check "... and of a reference table too (0A000)" \
	"$(sqlstate 5433 "SELECT queryclaw.create_enrichment('country_page', source => 'country',
		request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'page')")" 0A000
qc_check "the refused enrichments left nothing on any node (definitions, triggers)" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT (SELECT count(*) FROM queryclaw.enrichment_definitions)
		+ (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgfoid::regproc::text LIKE '%enrich%')\$\$)")" "0,0,0"

# ---- an enrichment of a reference table (or a Citus local table): run on
# the coordinator, from its copy of the rows, written to every copy through
# Citus
said=$(csql -c "SELECT queryclaw.create_enrichment('country_page', source => 'country',
	request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'page')" 2>&1)
csql -c "INSERT INTO country VALUES ('c6', '$base/echo?country=6')" >/dev/null
until_true "SELECT done = 6 FROM queryclaw.enrichments WHERE name = 'country_page'" 60
qc_check "an enrichment of a reference table: its backfill and a live insert, asked once each on the coordinator, written to every copy" \
	"$said|$(csql -c "SELECT string_agg(result, ',' ORDER BY nodeid) FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM queryclaw.requests WHERE context->>'enrichment' = 'country_page'\$\$)")|$(csql -c "SELECT string_agg(result, ',' ORDER BY nodeid) FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM country WHERE page LIKE '%\"country\": \"' || substr(code, 2) || '\"%'\$\$)")" \
	"|6,0,0|6,6,6"
csql -c "SELECT queryclaw.drop_enrichment('country_page')" >/dev/null
csql -c "CREATE TABLE memos (id bigint PRIMARY KEY, url text, page text)" -c "SELECT citus_add_local_table_to_metadata('memos')" \
	-c "INSERT INTO memos SELECT i, '$base/echo?memo=' || i FROM generate_series(1, 3) i" \
	-c "SELECT queryclaw.create_enrichment('memo_page', source => 'memos', request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'page')" >/dev/null ||
	echo "not ok - the Citus local table memos and its enrichment"
until_true "SELECT done = 3 FROM queryclaw.enrichments WHERE name = 'memo_page'" 60
qc_check "an enrichment of a Citus local table runs on the coordinator" \
	"$(csql -c "SELECT count(*) FROM memos WHERE page LIKE '%\"memo\": \"' || id || '\"%'")" 3
# (dropped: a Citus local table keeps the coordinator in Citus's metadata,
# which a check below takes it out of)
csql -c "SELECT queryclaw.drop_enrichment('memo_page')" -c "DROP TABLE memos" >/dev/null

# ---- an enrichment of a distributed table: each row asked on its shard's
# node, its state there, written back through Citus
# The number SQL $1 prints on each worker, comma-separated.
on_each_worker() {
	csql -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$q\$ $1 \$q\$)"
}
csql <<SQL >/dev/null || echo "not ok - the distributed table articles"
CREATE TABLE articles (id bigint PRIMARY KEY, url text NOT NULL, body text);
SELECT create_distributed_table('articles', 'id', colocate_with => 'none');
INSERT INTO articles SELECT i, '$base/echo?article=' || i FROM generate_series(1, 60) i;
SQL
said=$(csql -c "SELECT queryclaw.create_enrichment('article_body', source => 'articles',
	request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'body')" 2>&1)
qc_check "an enrichment of a distributed table is made on the coordinator, with no warning" "$said" ""
until_true "SELECT done = 60 FROM queryclaw.enrichments WHERE name = 'article_body'" 60
qc_check "its backfill writes every row through Citus, each from its own request" \
	"$(csql -c "SELECT count(*) FROM articles WHERE body LIKE '%\"article\": \"' || id || '\"%'")" 60
qc_check "each worker asked for the rows of its own shards, the coordinator for none" \
	"$(on_each_worker "SELECT count(*) FROM queryclaw.requests WHERE context->>'enrichment' = 'article_body'")|$(csql -c "SELECT count(*) FROM queryclaw.requests WHERE context->>'enrichment' = 'article_body'")" \
	"$(on_each_worker "SELECT count(*) FROM articles WHERE get_shard_id_for_distribution_column('articles', id) IN
		(SELECT shardid FROM pg_dist_placement WHERE groupid = (SELECT groupid FROM pg_dist_local_group))")|0"
qc_check "... and keeps their states (enrichment_rows) beside them" \
	"$(on_each_worker "SELECT count(*) FROM queryclaw.enrichment_rows WHERE state = 'done'")" \
	"$(on_each_worker "SELECT count(*) FROM queryclaw.requests WHERE context->>'enrichment' = 'article_body'")"
qc_check "queryclaw.enrichments on the coordinator shows the whole cluster's rows and calls" \
	"$(csql -c "SELECT rows || ' ' || done || ' ' || stale || ' ' || running || ' ' || failed || ' ' || calls || ' ' || coalesce(last_error, '-')
		FROM queryclaw.enrichments WHERE name = 'article_body'")" "60 60 0 0 0 60 -"

# a live insert of a row on each worker's shard
live=$(csql -c "SELECT string_agg(i::text, ',') FROM (SELECT min(i) AS i FROM generate_series(1001, 1100) i
	JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('articles', i)
	JOIN pg_dist_node n ON n.groupid = p.groupid AND n.noderole = 'primary' GROUP BY n.nodeport ORDER BY n.nodeport) s")
csql -c "INSERT INTO articles SELECT i, '$base/echo?article=' || i FROM unnest('{$live}'::bigint[]) i" >/dev/null ||
	echo "not ok - the live insert into articles"
until_true "SELECT count(*) = 2 FROM articles WHERE id IN ($live) AND body LIKE '%\"article\": \"' || id || '\"%'" 60
qc_check "a live insert of a row on each worker's shard is asked and written there" \
	"$(on_each_worker "SELECT count(*) FROM queryclaw.enrichment_rows WHERE (key->>'id')::bigint IN ($live) AND state = 'done'")|$(csql -c "SELECT count(*) FROM articles WHERE id IN ($live) AND body LIKE '%\"article\": \"' || id || '\"%'")" \
	"1,1|2"

# no lost update: a row whose input changes while its request is on the
# wire ends with the last input's value (the slow answer is not written)
csql -c "UPDATE articles SET url = '$base/slow?ms=4000&article=old' WHERE id = 7" >/dev/null
until_true "SELECT bool_or(result = 't') FROM run_command_on_workers(\$q\$SELECT EXISTS (SELECT FROM queryclaw.requests
	WHERE request->>'url' LIKE '%article=old' AND state = 'running')\$q\$)" 60 ||
	echo "not ok - the slow request for article 7 went out"
csql -c "UPDATE articles SET url = '$base/echo?article=new' WHERE id = 7" >/dev/null
until_true "SELECT bool_or(result = 't') FROM run_command_on_workers(\$q\$SELECT EXISTS (SELECT FROM queryclaw.requests
	WHERE request->>'url' LIKE '%article=old' AND finished_at IS NOT NULL)\$q\$)" 60
until_true "SELECT done = rows FROM queryclaw.enrichments WHERE name = 'article_body'" 60
qc_check "a row changed while its request is on the wire ends with the last input's value" \
	"$(csql -c "SELECT body LIKE '%\"article\": \"new\"%' FROM articles WHERE id = 7")|$(on_workers_sum "SELECT count(*) FROM queryclaw.requests
		WHERE request->>'url' LIKE '%article=old' AND state = 'done'")" "t|1"

# pause, resume and drop on the coordinator reach the workers' copies
csql -c "SELECT queryclaw.pause_enrichment('article_body')" >/dev/null
qc_check "pause_enrichment on the coordinator pauses every worker's copy" \
	"$(on_each_worker "SELECT paused FROM queryclaw.enrichment_definitions WHERE name = 'article_body'")" "t,t"
csql -c "UPDATE articles SET url = url || '&again' WHERE id <= 4" >/dev/null
qc_check "... a row changed meanwhile waits, stale, on its worker" \
	"$(csql -c "SELECT stale FROM queryclaw.enrichments WHERE name = 'article_body'")" 4
csql -c "SELECT queryclaw.resume_enrichment('article_body')" >/dev/null
until_true "SELECT done = rows FROM queryclaw.enrichments WHERE name = 'article_body'" 60
qc_check "resume_enrichment resumes them: the rows are asked again" \
	"$(csql -c "SELECT count(*) FROM articles WHERE id <= 4 AND body LIKE '%again%'")" 4
# retry_enrichment on the coordinator asks the workers' failed rows again
csql -c "UPDATE articles SET url = '$base/reflect/404?article=9' WHERE id = 9" >/dev/null
until_true "SELECT failed = 1 FROM queryclaw.enrichments WHERE name = 'article_body'" 60
qc_check "retry_enrichment on the coordinator puts the workers' failed rows back" \
	"$(csql -c "SELECT queryclaw.retry_enrichment('article_body')")" 1
until_true "SELECT sum(result::int) = 2 FROM run_command_on_workers(\$q\$SELECT count(*) FROM queryclaw.requests
	WHERE request->>'url' LIKE '%reflect/404%' AND finished_at IS NOT NULL\$q\$)" 60
qc_check "... which asks them again" \
	"$(csql -c "SELECT failed || ' ' || (last_error LIKE '%404%') FROM queryclaw.enrichments WHERE name = 'article_body'")" "1 true"
# alter_enrichment on the coordinator: every worker's copy changes, and its
# rows are asked again under the new definition
qc_check "alter_enrichment of a distributed table's enrichment on a worker is refused (0A000): it is done on the coordinator" \
	"$(sqlstate 5433 "SELECT queryclaw.alter_enrichment('article_body', request => \$r\$queryclaw.web_fetch_request(url || '&v=2')\$r\$)")" 0A000
csql -c "SELECT queryclaw.alter_enrichment('article_body', request => \$r\$queryclaw.web_fetch_request(url || '&v=2')\$r\$)" >/dev/null ||
	echo "not ok - alter_enrichment of article_body on the coordinator"
until_true "SELECT count(*) FILTER (WHERE body LIKE '%\"v\": \"2\"%') = count(*) - 1 FROM articles" 60
qc_check "alter_enrichment on the coordinator changes every worker's copy: each row is asked again under the new request" \
	"$(on_each_worker "SELECT request FROM queryclaw.enrichment_definitions WHERE name = 'article_body'")|$(csql -c "SELECT count(*) FILTER (WHERE body LIKE '%\"v\": \"2\"%') || ' of ' || count(*) FROM articles")" \
	"queryclaw.web_fetch_request(url || '&v=2'),queryclaw.web_fetch_request(url || '&v=2')|$(csql -c "SELECT count(*) - 1 FROM articles") of $(csql -c "SELECT count(*) FROM articles")"
csql -c "SELECT queryclaw.drop_enrichment('article_body')" >/dev/null
qc_check "drop_enrichment on the coordinator drops it on every node, its triggers on the shards too" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT (SELECT count(*) FROM queryclaw.enrichment_definitions)
		+ (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgfoid::regproc::text LIKE '%enrich%')\$\$)")" "0,0,0"

# manual mode: refresh_enrichment on the coordinator asks the rows whose
# inputs changed on every worker
csql -c "SELECT queryclaw.create_enrichment('article_manual', source => 'articles', mode => 'manual',
	request => \$r\$queryclaw.api_call_request(url)\$r\$, apply => \$a\$body = result->>'body'\$a\$)" >/dev/null ||
	echo "not ok - the manual enrichment article_manual"
until_true "SELECT done + failed = rows FROM queryclaw.enrichments WHERE name = 'article_manual'" 60
csql -c "UPDATE articles SET url = url || '&refreshed' WHERE id IN ($live)" >/dev/null
qc_check "a manual enrichment of a distributed table: refresh_enrichment on the coordinator makes the changed rows of every worker stale" \
	"$(csql -c "SELECT queryclaw.refresh_enrichment('article_manual')")" 2
until_true "SELECT count(*) = 2 FROM articles WHERE body LIKE '%refreshed%'" 60
qc_check "... and they are asked again, their results written" \
	"$(csql -c "SELECT count(*) FROM articles WHERE id IN ($live) AND body LIKE '%\"refreshed\"%'")" 2
csql -c "SELECT queryclaw.drop_enrichment('article_manual')" >/dev/null

# an enrichment owned by a role that is not a superuser, with the
# privileges docs/enrichments.md names, runs on the workers as that role
csql <<SQL >/dev/null || echo "not ok - the role editor and the table notes"
CREATE ROLE editor LOGIN;
GRANT queryclaw_user TO editor;
CREATE TABLE notes (id bigint PRIMARY KEY, url text NOT NULL, body text);
SELECT create_distributed_table('notes', 'id', colocate_with => 'articles');
INSERT INTO notes SELECT i, '$base/echo?note=' || i FROM generate_series(1, 20) i;
GRANT SELECT, UPDATE, TRIGGER ON notes TO editor;
SQL
nsql 5432 -U editor -c "SELECT queryclaw.create_enrichment('note_body', source => 'notes',
	request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'body')" >/dev/null ||
	echo "not ok - create_enrichment as editor"
until_true "SELECT count(*) = 20 FROM notes WHERE body LIKE '%\"note\": \"' || id || '\"%'" 60
qc_check "an enrichment owned by a role that is not a superuser is asked and written on the workers as that role" \
	"$(on_each_worker "SELECT owner::text || ' ' || count(*) FROM queryclaw.enrichment_definitions d
		JOIN queryclaw.requests q ON q.context->>'enrichment' = d.name AND q.role = d.owner WHERE d.name = 'note_body' GROUP BY d.owner")|$(csql -c "SELECT count(*) FROM notes WHERE body LIKE '%\"note\": \"' || id || '\"%'")" \
	"$(on_each_worker "SELECT 'editor ' || count(*) FROM notes WHERE get_shard_id_for_distribution_column('notes', id) IN
		(SELECT shardid FROM pg_dist_placement WHERE groupid = (SELECT groupid FROM pg_dist_local_group))")|20"
qc_check "... and its owner reads the whole cluster's rows in queryclaw.enrichments on the coordinator" \
	"$(nsql 5432 -U editor -c "SELECT name || ' ' || rows || ' ' || done FROM queryclaw.enrichments")" "note_body 20 20"
# (DROP TRIGGER takes the table's owner, TRIGGER is not enough: so does
# drop_enrichment, on one server too)
csql -c "ALTER TABLE notes OWNER TO editor" >/dev/null
nsql 5432 -U editor -c "SELECT queryclaw.drop_enrichment('note_body')" >/dev/null
qc_check "... who drops it on every node" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM queryclaw.enrichment_definitions\$\$)")" "0,0,0"

# an enrichment of a table of the coordinator's own works as on one server,
# without Citus's warnings; once that table is distributed, building the
# enrichment again is refused, and it can be dropped
csql -c "CREATE TABLE sites (id bigint PRIMARY KEY, url text, page text)" \
	-c "INSERT INTO sites SELECT i, '$base/json?s=' || i FROM generate_series(1, 5) i" >/dev/null ||
	echo "not ok - the coordinator's table sites"
said=$(csql -c "SELECT queryclaw.create_enrichment('site_page', source => 'sites',
	request => \$r\$queryclaw.web_fetch_request(url)\$r\$, target => 'page')" 2>&1)
until_true "SELECT done = 5 FROM queryclaw.enrichments WHERE name = 'site_page'" 10
qc_check "an enrichment of a table of the coordinator's own fills it, with no warning" \
	"$(csql -c "SELECT count(page) FROM sites")|$said" "5|"
csql -c "SELECT create_distributed_table('sites', 'id')" >/dev/null 2>&1 || echo "not ok - sites distributed"
qc_check "... distributed later: alter_enrichment refuses it (0A000)" \
	"$(sqlstate 5432 "SELECT queryclaw.alter_enrichment('site_page', request => \$r\$queryclaw.web_fetch_request(url || '&v=2')\$r\$)")" 0A000
qc_check "... and drop_enrichment drops it" \
	"$(csql -c "SELECT queryclaw.drop_enrichment('site_page')" >/dev/null 2>&1; csql -c "SELECT count(*) FROM queryclaw.enrichments")" 0

# ---- a pushed-down SELECT queueing requests whose callbacks update the table
csql <<'SQL' >/dev/null || echo "not ok - the callback store_status"
CREATE FUNCTION public.store_status(bigint, jsonb, text, jsonb) RETURNS void LANGUAGE sql
AS $$ UPDATE public.companies SET status = ($2->>'status')::int, request_id = $1
      WHERE companies.id = ($4->>'id')::bigint $$;
SQL
start=$(date +%s%N)
csql -c "CREATE TABLE pushed AS SELECT id AS company,
	queryclaw.api_call_async(url, callback => 'store_status(bigint,jsonb,text,jsonb)',
	                         context => jsonb_build_object('id', id)) AS request
	FROM companies" || echo "not ok - a pushed-down SELECT queued requests"
queued_ms=$((($(date +%s%N) - start) / 1000000))
qc_check "1,000 requests queued by a pushed-down SELECT have 1,000 distinct ids" \
	"$(csql -c "SELECT count(DISTINCT request) FROM pushed")" 1000
qc_check "each worker queued its shards' requests, in its own range of ids" \
	"$(csql -c "SELECT string_agg(g::text, ',' ORDER BY g) FROM (SELECT DISTINCT request >> 48 AS g FROM pushed) s")" \
	"$(csql -c "SELECT string_agg(groupid::text, ',' ORDER BY groupid) FROM pg_dist_node WHERE groupid > 0")"

# wait() on each node for the ids of that node: they are its requests, and they end
ids=$(csql -c "SELECT array_agg(request)::text FROM pushed")
per_node_wait="SELECT count(*) || ' ' || count(*) FILTER (WHERE state = 'done') || ' ' || coalesce(sum(id), 0)
	FROM queryclaw.wait((SELECT array_agg(i) FROM unnest('$ids'::bigint[]) i
	                     WHERE i >> 48 = (SELECT groupid FROM pg_dist_local_group)), '60 s')"
got=$(csql -c "SELECT sum(split_part(result, ' ', 1)::int) || ' ' || sum(split_part(result, ' ', 2)::int)
	|| ' ' || sum(split_part(result, ' ', 3)::numeric)
	FROM run_command_on_all_nodes(\$q\$$per_node_wait\$q\$)")
final_ms=$((($(date +%s%N) - start) / 1000000))
qc_check "wait() on each node returns exactly its requests, all done" \
	"$got" "$(csql -c "SELECT '1000 1000 ' || sum(request) FROM pushed")"
echo "== 1,000 pushed-down api_call_async: queued in $queued_ms ms, all final $final_ms ms after the start"
until_true "SELECT count(*) = 1000 FROM companies c JOIN pushed p ON p.company = c.id AND p.request = c.request_id" 10
qc_check "every callback updated its row of the distributed table" \
	"$(csql -c "SELECT count(*) FROM companies c JOIN pushed p ON p.company = c.id AND p.request = c.request_id WHERE c.status = 200")" 1000

# ids of another node, on the coordinator: refused, never another request
some=$(csql -c "SELECT request FROM pushed ORDER BY request LIMIT 1")
local_id=$(csql -c "SELECT queryclaw.api_call_async('$base/json')")
qc_check "a request queued on the coordinator has an id of group 0" \
	"$(csql -c "SELECT $local_id >> 48")" 0
qc_check "wait() on the coordinator for the workers' ids is refused (0A000)" \
	"$(sqlstate 5432 "SELECT * FROM queryclaw.wait('$ids'::bigint[], '1 s')")" 0A000
qc_check "wait() for the coordinator's own request with a worker's id is refused too" \
	"$(sqlstate 5432 "SELECT * FROM queryclaw.wait(ARRAY[$local_id, $some], '1 s')")" 0A000
qc_check "wait() for the coordinator's own request" \
	"$(csql -c "SELECT id || ' ' || state FROM queryclaw.wait(ARRAY[$local_id], '30 s')")" "$local_id done"
qc_check "cancel_requests() of a worker's id on the coordinator is refused (0A000)" \
	"$(sqlstate 5432 "SELECT queryclaw.cancel_requests(ARRAY[$some])")" 0A000
qc_check "retry_requests() of a worker's id on the coordinator is refused (0A000)" \
	"$(sqlstate 5432 "SELECT queryclaw.retry_requests(ARRAY[$some])")" 0A000
said=$(csql -c "SELECT * FROM queryclaw.wait(ARRAY[$some])" 2>&1)
grep -q 'HINT:.*run_command_on_all_nodes' <<<"$said" &&
	echo "ok - the refusal says where to call it" || echo "not ok - the refusal says where to call it: $said"
qc_check "the worker's request is as it was" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_workers(\$\$SELECT coalesce(string_agg(state, ','), '') FROM queryclaw.requests WHERE id = $some\$\$)" | tr -d ',')" done

# ---- a trigger on a distributed table, and the two-phase commit's wake-up
csql <<'SQL' >/dev/null || echo "not ok - the trigger on events"
CREATE TABLE events (id bigint PRIMARY KEY, url text NOT NULL);
SELECT create_distributed_table('events', 'id', colocate_with => 'companies');
CREATE FUNCTION public.events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM queryclaw.api_call_async(NEW.url, context => jsonb_build_object('event', NEW.id));
	RETURN NEW;
END $$;
CREATE TRIGGER events_enqueue AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_enqueue();
SQL
csql -c "INSERT INTO events SELECT i, '$base/json?e=' || i FROM generate_series(1, 40) i" ||
	echo "not ok - a multi-row INSERT into events"
qc_check "a multi-row INSERT's trigger queued each row's request on its shard's node" \
	"$(on_workers_sum "SELECT count(*) FROM queryclaw.requests WHERE context ? 'event'") $(csql -c "SELECT count(*) FROM queryclaw.requests WHERE context ? 'event'")" "40 0"
twopc_ms=
until_true "SELECT sum(result::int) = 40 FROM run_command_on_workers(\$\$SELECT count(*) FROM queryclaw.requests WHERE context ? 'event' AND finished_at IS NOT NULL\$\$)" 10 &&
twopc_ms=$(csql -c "SELECT max(result::numeric)::int FROM run_command_on_workers(\$\$
	SELECT coalesce(max(extract(epoch FROM finished_at - created_at) * 1000), 0)
	FROM queryclaw.requests WHERE context ? 'event'\$\$)")

# the same on one worker: prepared and committed in one session (as Citus
# does), then prepared in one and committed in another (as a transaction
# manager's recovery does)
one_worker_2pc() {
	nsql 5433 <<SQL >/dev/null
BEGIN;
SELECT queryclaw.api_call_async('$base/json', context => '{"twopc": "$1"}');
PREPARE TRANSACTION 'qc_$1';
$([ "$1" = same ] && echo "COMMIT PREPARED 'qc_$1';")
SQL
	if [ "$1" != same ]; then
		sleep 0.1
		nsql 5433 -c "COMMIT PREPARED 'qc_$1'" >/dev/null
	fi
	for _ in $(seq 100); do
		got=$(nsql 5433 -c "SELECT round(extract(epoch FROM finished_at - created_at) * 1000
			- CASE WHEN '$1' = 'same' THEN 0 ELSE 100 END)
			FROM queryclaw.requests WHERE context->>'twopc' = '$1' AND finished_at IS NOT NULL")
		[ -n "$got" ] && { echo "$got"; return; }
		sleep 0.05
	done
}
same_ms=$(one_worker_2pc same)
other_ms=$(one_worker_2pc other)
# and what the workers do without a wake-up (as before for any two-phase
# commit): a row written by hand, found at their next poll
nsql 5433 -c "INSERT INTO queryclaw.requests (role, func, request, context)
	SELECT role, func, request, '{\"twopc\": \"poll\"}' FROM queryclaw.requests WHERE context->>'twopc' = 'same'" >/dev/null
until_poll="SELECT round(extract(epoch FROM finished_at - created_at) * 1000) FROM queryclaw.requests
	WHERE context->>'twopc' = 'poll' AND finished_at IS NOT NULL"
for _ in $(seq 100); do
	poll_ms=$(nsql 5433 -c "$until_poll")
	[ -n "$poll_ms" ] && break
	sleep 0.05
done
echo "== from commit to final state: $twopc_ms ms at most for a Citus multi-row INSERT (40 rows, two-phase);" \
	"$same_ms ms for COMMIT PREPARED in the session that prepared, $other_ms ms in another session;" \
	"${poll_ms:-?} ms without a wake-up (the workers' poll)"
# The requests of a two-phase commit reach their final state, committed
# in the session that prepared them or in another: the event, waited for
# above (10 s at most each).  How soon (a wake-up, not the workers' next
# poll) is the figure above: on a loaded machine a wake-up took 420 ms,
# which a stopwatch bound of 300 ms failed while every behaviour was right.
qc_check "a two-phase commit's requests are run, committed in any session" \
	"$([ -n "${twopc_ms:-}" ] && [ -n "${same_ms:-}" ] && [ -n "${other_ms:-}" ] && echo yes)" yes

# ---- a colocated distributed function queues on the node of its shard
csql <<'SQL' >/dev/null || echo "not ok - the distributed function enrich"
CREATE FUNCTION public.enrich(cid bigint) RETURNS bigint LANGUAGE sql AS $$
	SELECT queryclaw.api_call_async(url, context => jsonb_build_object('enrich', id))
	  FROM public.companies WHERE id = cid $$;
SELECT create_distributed_function('enrich(bigint)', 'cid', colocate_with => 'companies');
SQL
for c in 7 8; do
	qc_check "a colocated distributed function's request for company $c is queued on its shard's node" \
		"$(csql -c "SELECT enrich($c) >> 48")" \
		"$(csql -c "SELECT groupid FROM pg_dist_placement WHERE shardid = get_shard_id_for_distribution_column('companies', $c)")"
done

# ---- GRANT and REVOKE on the extension's functions, given on the coordinator
api_call='queryclaw.api_call(text, text, jsonb, text, integer)'
can_call() {
	csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT has_function_privilege('$1', '$api_call', 'EXECUTE')\$\$)"
}
csql <<SQL >/dev/null || echo "not ok - the role alice"
CREATE ROLE alice LOGIN;
GRANT SELECT ON companies TO alice;
SQL
qc_check "a role not granted EXECUTE is refused by the workers a query is pushed to (42501)" \
	"$(sqlstate 5432 "SET ROLE alice; SELECT count(queryclaw.api_call(url)) FROM companies WHERE id <= 10")" 42501
csql -c "GRANT EXECUTE ON FUNCTION $api_call TO alice" || echo "not ok - GRANT EXECUTE on the coordinator"
qc_check "GRANT EXECUTE on the coordinator reaches every node" "$(can_call alice)" "t,t,t"
qc_check "the role then calls on the workers a query is pushed to" \
	"$(csql -c "SET ROLE alice" -c "SELECT count(queryclaw.api_call(url)) FROM companies WHERE id <= 10")" 10
csql -c "REVOKE EXECUTE ON FUNCTION $api_call FROM alice" || echo "not ok - REVOKE EXECUTE on the coordinator"
qc_check "REVOKE EXECUTE on the coordinator reaches every node" "$(can_call alice)" "f,f,f"
csql <<SQL >/dev/null 2>&1
BEGIN;
GRANT EXECUTE ON FUNCTION $api_call TO alice;
ROLLBACK;
BEGIN;
SAVEPOINT s;
GRANT EXECUTE ON FUNCTION $api_call TO alice;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SQL
qc_check "a GRANT rolled back (or in a savepoint rolled back) reaches no node" "$(can_call alice)" "f,f,f"
qc_check "a GRANT on the extension's functions and another function at once is refused (0A000)" \
	"$(sqlstate 5432 "GRANT EXECUTE ON FUNCTION $api_call, public.enrich(bigint) TO alice")" 0A000
csql -c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA queryclaw TO alice" >/dev/null &&
	qc_check "GRANT ... ON ALL FUNCTIONS IN SCHEMA queryclaw reaches every node" "$(can_call alice)" "t,t,t"
csql -c "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA queryclaw FROM alice" >/dev/null
csql -c "GRANT queryclaw_admin TO alice" >/dev/null
qc_check "queryclaw_admin's members are the same on every node" \
	"$(csql -c "SELECT string_agg(result, ',') FROM run_command_on_all_nodes(\$\$SELECT pg_has_role('alice', 'queryclaw_admin', 'MEMBER')\$\$)")" "t,t,t"
csql -c "REVOKE queryclaw_admin FROM alice" >/dev/null

# ---- what a GRANT or REVOKE sends to the workers: what took effect on the
# coordinator, as the role that ran it, on the objects it named there.
# Every role holds SELECT on queryclaw.requests (through PUBLIC), so
# mallory's GRANT of another privilege on it grants nothing (a WARNING).
# What SQL $1 prints on each node, the coordinator first.
on_all() {
	csql -c "SELECT string_agg(result, ',' ORDER BY nodeid) FROM run_command_on_all_nodes(\$q\$ $1 \$q\$)"
}
# May role $1 use privilege $2 on queryclaw.requests, on each node?
on_requests() { on_all "SELECT has_table_privilege('$1', 'queryclaw.requests', '$2')"; }
api_call_async='queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)'
csql <<SQL >/dev/null || echo "not ok - mallory's functions and materialized view"
CREATE ROLE mallory LOGIN;
CREATE ROLE carol LOGIN;
CREATE ROLE grantors;
CREATE SCHEMA mallory AUTHORIZATION mallory;
SET ROLE mallory;
CREATE FUNCTION mallory.grant_truncate() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
AS \$\$ BEGIN GRANT TRUNCATE ON queryclaw.requests TO mallory; END \$\$;
CREATE FUNCTION mallory.grant_update() RETURNS int LANGUAGE plpgsql
AS \$\$ BEGIN GRANT UPDATE ON queryclaw.requests TO mallory; RETURN 1; END \$\$;
CREATE MATERIALIZED VIEW mallory.refreshed AS SELECT mallory.grant_update() AS x WITH NO DATA;
CREATE FUNCTION mallory.revoke_alice() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
AS \$\$ BEGIN REVOKE EXECUTE ON FUNCTION $api_call FROM alice; END \$\$;
CREATE FUNCTION mallory.grant_schema() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
AS \$\$ BEGIN GRANT CREATE ON SCHEMA queryclaw TO mallory; END \$\$;
RESET ROLE;
CREATE FUNCTION public.grant_api_call_to_mallory() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
AS \$\$ BEGIN GRANT EXECUTE ON FUNCTION $api_call TO mallory; END \$\$;
SQL
csql -c "SELECT mallory.grant_truncate()" >/dev/null 2>&1
qc_check "mallory's GRANT in her SECURITY DEFINER function, called by the DBA, grants nothing on any node" \
	"$(on_requests mallory TRUNCATE)" "f,f,f"
csql >/dev/null 2>&1 <<'SQL'
BEGIN;
SET LOCAL ROLE mallory;
GRANT DELETE ON queryclaw.requests TO mallory;
RESET ROLE;
COMMIT;
SQL
qc_check "a GRANT under SET ROLE mallory in the DBA's transaction grants nothing on any node" \
	"$(on_requests mallory DELETE)" "f,f,f"
csql -c "REFRESH MATERIALIZED VIEW mallory.refreshed" >/dev/null 2>&1
qc_check "a GRANT in the query of mallory's materialized view, refreshed by the DBA, grants nothing on any node" \
	"$(on_requests mallory UPDATE)" "f,f,f"
nsql 5432 -U mallory -c "SELECT public.grant_api_call_to_mallory()" >/dev/null
qc_check "the DBA's SECURITY DEFINER function, called by mallory, grants on every node as the DBA" \
	"$(on_all "SELECT has_function_privilege('mallory', '$api_call', 'EXECUTE')")" "t,t,t"
csql >/dev/null 2>&1 <<SQL
GRANT EXECUTE ON FUNCTION $api_call TO grantors WITH GRANT OPTION;
BEGIN;
SET LOCAL ROLE grantors;
GRANT EXECUTE ON FUNCTION $api_call TO carol;
COMMIT;
SQL
qc_check "a GRANT under SET ROLE to a role that cannot log in is given by that role on every node" \
	"$(on_all "SELECT array_to_string(ARRAY(SELECT a::text FROM unnest(proacl) a WHERE a::text LIKE 'carol=%'), ' ') FROM pg_proc WHERE oid = '$api_call'::regprocedure")" \
	"carol=X/grantors,carol=X/grantors,carol=X/grantors"

# a GRANT that grants nothing on the coordinator is not sent, even where
# the workers (made to differ here) would let it grant
csql -c "SELECT run_command_on_workers('GRANT INSERT ON queryclaw.requests TO mallory WITH GRANT OPTION')" >/dev/null
nsql 5432 -U mallory -c "GRANT INSERT ON queryclaw.requests TO carol" >/dev/null 2>&1
qc_check "a GRANT that grants nothing on the coordinator is not sent to the workers" \
	"$(on_requests carol INSERT)" "f,f,f"
csql -c "SELECT run_command_on_workers('REVOKE INSERT ON queryclaw.requests FROM mallory CASCADE')" >/dev/null

# names as the coordinator resolved them: a table public.audit_log on every
# node, and the DBA's search_path naming queryclaw first
csql -c "SELECT run_command_on_all_nodes('CREATE TABLE public.audit_log (id bigint)')" >/dev/null
csql -c "SET search_path = queryclaw, public" -c "GRANT SELECT ON audit_log TO carol" \
	-c "GRANT EXECUTE ON FUNCTION api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) TO carol" >/dev/null 2>&1
qc_check "a table named under the coordinator's search_path is the one granted on every node" \
	"$(on_all "SELECT has_table_privilege('carol', 'queryclaw.audit_log', 'SELECT') || '/' || has_table_privilege('carol', 'public.audit_log', 'SELECT')")" \
	"true/false,true/false,true/false"
qc_check "a routine named under the coordinator's search_path is granted on every node" \
	"$(on_all "SELECT has_function_privilege('carol', '$api_call_async', 'EXECUTE')")" "t,t,t"

# (mallory may call api_call, so that her REVOKE is refused with a WARNING,
# not an error)
csql -c "GRANT EXECUTE ON FUNCTION $api_call TO alice, mallory" -c "SELECT mallory.revoke_alice()" >/dev/null 2>&1
qc_check "mallory's REVOKE in her SECURITY DEFINER function, called by the DBA, revokes nothing on any node" \
	"$(on_all "SELECT has_function_privilege('alice', '$api_call', 'EXECUTE')")" "t,t,t"
secrets_alice_carol="SELECT has_table_privilege('alice', 'queryclaw.request_secrets', 'SELECT') || '/' || has_table_privilege('carol', 'queryclaw.request_secrets', 'SELECT')"
csql -c "GRANT SELECT ON queryclaw.request_secrets TO alice WITH GRANT OPTION" \
	-c "SET ROLE alice" -c "GRANT SELECT ON queryclaw.request_secrets TO carol" >/dev/null
qc_check "a GRANT WITH GRANT OPTION, and the grantee's own GRANT, reach every node" \
	"$(on_all "$secrets_alice_carol")" "true/true,true/true,true/true"
csql -c "REVOKE GRANT OPTION FOR SELECT ON queryclaw.request_secrets FROM alice CASCADE" >/dev/null
qc_check "REVOKE GRANT OPTION FOR ... CASCADE reaches every node" \
	"$(on_all "$secrets_alice_carol")" "true/false,true/false,true/false"
csql -c "REVOKE SELECT ON queryclaw.request_secrets FROM alice" >/dev/null

csql >/dev/null <<SQL
BEGIN;
SAVEPOINT a;
GRANT EXECUTE ON FUNCTION $api_call_async TO alice;
RELEASE SAVEPOINT a;
SAVEPOINT b;
ROLLBACK TO SAVEPOINT b;
COMMIT;
SQL
qc_check "a GRANT in a savepoint released, then another savepoint rolled back, reaches every node" \
	"$(on_all "SELECT has_function_privilege('alice', '$api_call_async', 'EXECUTE')")" "t,t,t"

csql -c "SET citus.enable_ddl_propagation = off" -c "CREATE ROLE coordinator_only" >/dev/null 2>&1
said=$(csql -c "GRANT EXECUTE ON FUNCTION $api_call TO coordinator_only" 2>&1)
qc_check "a GRANT a worker refuses is rolled back on the coordinator, with the worker's error" \
	"$(grep -c 'could not run .* as role postgres on worker' <<<"$said") $(csql -c "SELECT has_function_privilege('coordinator_only', '$api_call', 'EXECUTE')")" "1 f"
csql -c "SET citus.enable_ddl_propagation = off" -c "DROP ROLE coordinator_only" >/dev/null 2>&1
qc_check "column privileges on the extension's tables are refused on the coordinator (0A000)" \
	"$(sqlstate 5432 "GRANT SELECT (id) ON queryclaw.audit_log TO carol")" 0A000

csql -c "GRANT SELECT ON ALL TABLES IN SCHEMA queryclaw TO carol" >/dev/null
tables=$(csql -c "SELECT count(*) FROM pg_class WHERE relnamespace = 'queryclaw'::regnamespace AND relkind IN ('r', 'v')")
qc_check "GRANT ... ON ALL TABLES IN SCHEMA queryclaw reaches every node, views included" \
	"$(on_all "SELECT count(*) FROM pg_class WHERE relnamespace = 'queryclaw'::regnamespace AND relkind IN ('r', 'v') AND has_table_privilege('carol', oid, 'SELECT')")" \
	"$tables,$tables,$tables"

# the schema, the wrapper's servers: Citus sends those itself, as the role
# that ran them
csql -c "GRANT CREATE ON SCHEMA queryclaw TO carol" >/dev/null 2>&1
qc_check "GRANT on the schema queryclaw works on the coordinator and reaches every node" \
	"$(on_all "SELECT has_schema_privilege('carol', 'queryclaw', 'CREATE')")" "t,t,t"
csql -c "REVOKE CREATE ON SCHEMA queryclaw FROM carol" >/dev/null 2>&1
qc_check "REVOKE on the schema queryclaw reaches every node" \
	"$(on_all "SELECT has_schema_privilege('carol', 'queryclaw', 'CREATE')")" "f,f,f"
csql -c "SELECT mallory.grant_schema()" >/dev/null 2>&1
qc_check "mallory's GRANT on the schema in her SECURITY DEFINER function, called by the DBA, grants nothing on any node" \
	"$(on_all "SELECT has_schema_privilege('mallory', 'queryclaw', 'CREATE')")" "f,f,f"
csql -c "CREATE SERVER citus_grants FOREIGN DATA WRAPPER queryclaw OPTIONS (url '$base/citus-grants/')" \
	-c "GRANT USAGE ON FOREIGN SERVER citus_grants TO carol" >/dev/null 2>&1
qc_check "GRANT on a server of the queryclaw wrapper reaches every node" \
	"$(on_all "SELECT has_server_privilege('carol', 'citus_grants', 'USAGE')")" "t,t,t"
csql -c "SELECT run_command_on_all_nodes('DROP TABLE public.audit_log')" >/dev/null 2>&1

# the schema's USAGE, the views by name, a membership of a queryclaw role
csql >/dev/null <<'SQL' || echo "not ok - the grants on the schema, the views and queryclaw_admin"
CREATE ROLE dave LOGIN;
GRANT USAGE ON SCHEMA queryclaw TO dave;
REVOKE SELECT ON queryclaw.my_audit, queryclaw.queue_status, queryclaw.queue_hosts FROM PUBLIC;
GRANT SELECT ON queryclaw.my_audit, queryclaw.queue_status, queryclaw.queue_hosts TO dave;
GRANT queryclaw_admin TO dave;
SQL
schema_usage="SELECT array_to_string(ARRAY(SELECT a::text FROM unnest(nspacl) a WHERE a::text LIKE 'dave=%'), ' ') FROM pg_namespace WHERE nspname = 'queryclaw'"
qc_check "GRANT USAGE ON SCHEMA queryclaw works on the coordinator and reaches every node" \
	"$(on_all "$schema_usage")" "dave=U/postgres,dave=U/postgres,dave=U/postgres"
views_of="SELECT string_agg(has_table_privilege(r, v, 'SELECT')::text, '/' ORDER BY r, v)
	FROM unnest(ARRAY['alice', 'dave']) r, unnest(ARRAY['queryclaw.my_audit', 'queryclaw.queue_hosts', 'queryclaw.queue_status']) v"
qc_check "GRANT and REVOKE on the views my_audit, queue_status and queue_hosts reach every node" \
	"$(on_all "$views_of")" "$(printf 'false/false/false/true/true/true,%.0s' 1 2 3 | sed 's/,$//')"
qc_check "a membership of queryclaw_admin given on the coordinator reaches every node" \
	"$(on_all "SELECT pg_has_role('dave', 'queryclaw_admin', 'MEMBER')")" "t,t,t"

# ---- a node added later: the privileges given before it joined, and the
# limits' shares (host_limits, my_budget) that follow the number of nodes.
# The privileges of every object of the extension, by name, on each node.
acls="SELECT md5(string_agg((pg_identify_object(d.classid, d.objid, 0)).identity || ' '
	|| coalesce(CASE WHEN d.classid = 'pg_proc'::regclass THEN (SELECT proacl FROM pg_proc WHERE oid = d.objid)
	                 ELSE (SELECT relacl FROM pg_class WHERE oid = d.objid) END::text, 'default'), ';' ORDER BY 1))
	FROM pg_depend d WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queryclaw_ext')
	 AND d.deptype = 'e' AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass)"
# What role limited may spend on the node of port $1: host_limits of a
# host no call goes to, and my_budget, in a session of its own as limited.
csql >/dev/null <<'SQL' || echo "not ok - the limits of role limited"
CREATE ROLE limited LOGIN;
ALTER ROLE limited SET queryclaw.max_calls_per_hour = 30;
ALTER ROLE limited SET queryclaw.max_tokens_per_day = 300;
SQL
# (the node to add has the same configuration, as docs/citus.md asks)
for p in 5432 "${workers[@]}" $later; do
	nsql "$p" -c "ALTER SYSTEM SET queryclaw.host_rate_limit = 'shares.example=12/s'" \
		-c "ALTER SYSTEM SET queryclaw.max_host_concurrency = 12" -c "SELECT pg_reload_conf()" >/dev/null
done
shares_on() {
	nsql "$1" -U limited -c "SELECT h.rate_limit || ' ' || h.max_concurrency || ' ' || b.calls_per_hour || ' ' || b.tokens_per_day
		FROM queryclaw.host_limits('shares.example') h, queryclaw.my_budget b"
}
# the shares on every node of ports $@, and what they should be
shares() {
	local p out=()
	for p in "$@"; do out+=("$(shares_on "$p")"); done
	(IFS=,; echo "${out[*]}")
}
for _ in $(seq 100); do [ "$(shares 5432 "${workers[@]}" | tr , '\n' | sort -u)" = "4/s 4 10 100" ] && break; sleep 0.05; done
qc_check "each node shows its share of the limits for three nodes, with nothing set by hand (host_limits, my_budget)" \
	"$(shares 5432 "${workers[@]}")" "4/s 4 10 100,4/s 4 10 100,4/s 4 10 100"

# a session of a worker that has read its shares, open while the node joins
nsql 5433 -U limited >"$QC_WORK/session.out" 2>&1 <<SQL &
SELECT 'before ' || rate_limit FROM queryclaw.host_limits('shares.example');
DO \$\$ BEGIN
	FOR i IN 1..1200 LOOP
		EXIT WHEN (SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary') = 4;
		PERFORM pg_sleep(0.05);
	END LOOP;
END \$\$;
SELECT 'after ' || rate_limit FROM queryclaw.host_limits('shares.example');
SQL
session=$!
# and a GRANT in progress on the coordinator as the node is added: the
# node waits for it, and has it when it joins
csql -c "CREATE ROLE erin" >/dev/null
csql >"$QC_WORK/grant.out" 2>&1 <<SQL &
BEGIN;
GRANT EXECUTE ON FUNCTION $api_call TO erin;
SET application_name = 'grant_in_progress';
DO \$\$ BEGIN
	FOR i IN 1..1200 LOOP
		EXIT WHEN EXISTS (SELECT FROM pg_locks WHERE relation = 'pg_dist_node'::regclass AND NOT granted)
		       OR EXISTS (SELECT FROM pg_dist_node WHERE nodeport = $later);
		PERFORM pg_sleep(0.05);
	END LOOP;
END \$\$;
SELECT 'waited ' || EXISTS (SELECT FROM pg_locks WHERE relation = 'pg_dist_node'::regclass AND NOT granted);
COMMIT;
SQL
granting=$!
until_true "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'grant_in_progress')"
csql -c "SELECT citus_add_node('127.0.0.1', $later)" >/dev/null || echo "not ok - citus_add_node of the third worker"
wait $granting $session
qc_check "a node added while a GRANT on the extension's objects runs waits for it" \
	"$(cat "$QC_WORK/grant.out")" "waited true"
qc_check "the node added later has the extension, and its async workers run" \
	"$(nsql $later -c "SELECT extversion || ' ' || (SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'queryclaw async%')
		FROM pg_extension WHERE extname = 'queryclaw_ext'")" "$version 2"
qc_check "the node added later has the privileges given on the coordinator on every object of the extension" \
	"$(on_all "$acls" | tr , '\n' | sort -u | wc -l) $(on_all "$acls" | tr , '\n' | wc -l)" "1 4"
qc_check "... among them the GRANT in progress as it was added" \
	"$(nsql $later -c "SELECT has_function_privilege('erin', '$api_call', 'EXECUTE')")" t
qc_check "... the grantor of each, as on the coordinator" \
	"$(nsql $later -c "SELECT array_to_string(ARRAY(SELECT a::text FROM unnest(proacl) a WHERE a::text LIKE 'carol=%'), ' ') FROM pg_proc WHERE oid = '$api_call'::regprocedure")" \
	"carol=X/grantors"
qc_check "... the REVOKEs: the views revoked from PUBLIC, what mallory could not grant or revoke" \
	"$(nsql $later -c "$views_of") $(nsql $later -c "SELECT has_table_privilege('mallory', 'queryclaw.requests', 'TRUNCATE') || ' ' || has_function_privilege('alice', '$api_call', 'EXECUTE')")" \
	"false/false/false/true/true/true false true"
qc_check "... and, from Citus, the schema's USAGE, the server's and the membership of queryclaw_admin" \
	"$(nsql $later -c "$schema_usage") $(nsql $later -c "SELECT has_server_privilege('carol', 'citus_grants', 'USAGE') || ' ' || pg_has_role('dave', 'queryclaw_admin', 'MEMBER')")" \
	"dave=U/postgres true true"
csql -c "GRANT EXECUTE ON FUNCTION queryclaw.check_url(text) TO dave" >/dev/null
qc_check "a GRANT given once the node has joined reaches it too" \
	"$(on_all "SELECT has_function_privilege('dave', 'queryclaw.check_url(text)', 'EXECUTE')")" "t,t,t,t"
csql -c "DROP SERVER citus_grants CASCADE" >/dev/null 2>&1
qc_check "each node's shares follow: four nodes now, the one added later included" \
	"$(shares 5432 "${workers[@]}" $later)" "3/s 3 7 75,3/s 3 7 75,3/s 3 7 75,3/s 3 7 75"
qc_check "... in a session that read its shares before the node joined, without a restart" \
	"$(grep -o 'before .*\|after .*' "$QC_WORK/session.out" | tr '\n' ' ')" "before 4/s after 3/s "
csql -c "SELECT run_command_on_all_nodes('ALTER SYSTEM RESET queryclaw.host_rate_limit')" \
	-c "SELECT run_command_on_all_nodes('ALTER SYSTEM RESET queryclaw.max_host_concurrency')" \
	-c "SELECT run_command_on_all_nodes('SELECT pg_reload_conf()')" >/dev/null

# ---- limits shared out between the four nodes, with nothing set by hand
csql <<SQL >/dev/null || echo "not ok - the grants of role limited"
GRANT SELECT ON companies TO limited;
GRANT EXECUTE ON FUNCTION $api_call, queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) TO limited;
SQL
# How many of the calls of statement $4, run for i from $2 to $3, role $1
# is admitted to make (the others refused for a limit, 53400).
admitted() {
	csql -c "SET ROLE $1" -c "DO \$\$
DECLARE ok int := 0;
BEGIN
	FOR i IN $2..$3 LOOP
		BEGIN
			$4;
			ok := ok + 1;
		EXCEPTION WHEN SQLSTATE '53400' THEN NULL;
		END;
	END LOOP;
	RAISE NOTICE 'admitted=%', ok;
END \$\$" 2>&1 | sed -n 's/.*admitted=//p'
}
admitted=$(admitted limited 301 360 "PERFORM queryclaw.api_call(url) FROM companies WHERE id = i")
echo "== max_calls_per_hour = 30 on 4 nodes: $admitted of 60 calls on two workers admitted"
qc_check "max_calls_per_hour holds for the cluster, not for each node" \
	"$([ "${admitted:-99}" -le 30 ] && [ "${admitted:-0}" -ge 10 ] && echo yes)" yes

# the same budget for queued requests (another role: the first spent its hour)
csql <<SQL >/dev/null || echo "not ok - the role limited_async"
CREATE ROLE limited_async LOGIN;
GRANT SELECT ON companies TO limited_async;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text) TO limited_async;
ALTER ROLE limited_async SET queryclaw.max_calls_per_hour = 30;
SQL
csql -c "SET ROLE limited_async" -c "SELECT count(queryclaw.api_call_async(url || '&budget')) FROM companies WHERE id BETWEEN 401 AND 460" >/dev/null
until_true "SELECT sum(result::int) = 60 FROM run_command_on_workers(\$\$SELECT count(*) FROM queryclaw.requests WHERE role = 'limited_async'::regrole AND (state IN ('done', 'failed') OR waiting LIKE 'max_calls_per_hour%')\$\$)" 20
states=$(csql -c "SELECT string_agg(result, ' ') FROM run_command_on_workers(\$\$SELECT count(*) FILTER (WHERE state = 'done') || ' done, ' || count(*) FILTER (WHERE state = 'failed') || ' failed, ' || count(*) FILTER (WHERE state NOT IN ('done', 'failed')) || ' waiting;' FROM queryclaw.requests WHERE role = 'limited_async'::regrole\$\$)")
done_async=$(on_workers_sum "SELECT count(*) FROM queryclaw.requests WHERE role = 'limited_async'::regrole AND state = 'done'")
echo "== max_calls_per_hour = 30 on 4 nodes, 60 queued requests on two workers: $states"
qc_check "max_calls_per_hour holds for the cluster's queued requests too" \
	"$([ "${done_async:-99}" -le 30 ] && [ "${done_async:-0}" -ge 10 ] && echo yes)" yes

# Set the setting $1 to $2 on every node, and wait until every node has
# it (the async workers then take it before their next claim).
set_everywhere() {
	csql -c "SELECT run_command_on_all_nodes(\$q\$ALTER SYSTEM SET queryclaw.$1 = '$2'\$q\$)" \
		-c "SELECT run_command_on_all_nodes('SELECT pg_reload_conf()')" >/dev/null ||
		echo "not ok - $1 set on every node"
	until_true "SELECT bool_and(result = '$2') FROM run_command_on_all_nodes(\$q\$SHOW queryclaw.$1\$q\$)" ||
		echo "not ok - every node has $1 = $2"
}
reset_everywhere() {
	csql -c "SELECT run_command_on_all_nodes('ALTER SYSTEM RESET queryclaw.$1')" \
		-c "SELECT run_command_on_all_nodes('SELECT pg_reload_conf()')" >/dev/null
}

# host_rate_limit = 20/s on 4 nodes: 5 a second from each worker, 10 from
# the two that hold the table.  The fixture counts the requests it serves:
# the rate is taken from the 20th request to the 60th, past the buckets'
# first burst, by the clock of the moments it reached them.
# A GET (or with $2 = POST, a POST) of the fixture's URL $1, its body on
# stdout: with python3, which the roots of the other majors have (not curl),
# and no proxy.
fixture_http() {
	"$QC_PYTHON" - "$1" "${2:-GET}" <<'PY'
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
request = urllib.request.Request(sys.argv[1], method=sys.argv[2],
                                 data=b"" if sys.argv[2] == "POST" else None)
sys.stdout.write(opener.open(request, timeout=10).read().decode())
PY
}
fixture_requests() {
	fixture_http "$base/stats" | sed -n 's/.*"requests": *\([0-9]*\).*/\1/p'
}
# The time in ms at which the fixture has served $1 requests (empty if it
# does not within 30 s).
when_served() {
	for _ in $(seq 1500); do
		[ "$(fixture_requests)" -ge "$1" ] 2>/dev/null && { echo $(($(date +%s%N) / 1000000)); return; }
		sleep 0.02
	done
}
set_everywhere host_rate_limit 127.0.0.1=20/s
fixture_http "$base/stats/reset" POST >/dev/null
csql -c "SELECT count(queryclaw.api_call_async(url || '&rate', context => '{\"rate\": true}')) FROM companies WHERE id <= 80" >/dev/null
from_ms=$(when_served 20)
to_ms=$(when_served 60)
rate=$(awk -v f="${from_ms:-0}" -v t="${to_ms:-0}" 'BEGIN { if (t > f) printf "%.1f", 40000 / (t - f); else print "?" }')
until_true "SELECT sum(result::int) = 80 FROM run_command_on_workers(\$\$SELECT count(*) FROM queryclaw.requests WHERE context ? 'rate' AND finished_at IS NOT NULL\$\$)" 30
echo "== host_rate_limit = 127.0.0.1=20/s on 4 nodes, nothing set by hand: 80 requests from two workers, $rate a second at the fixture"
qc_check "host_rate_limit holds for the cluster (at most 20 a second, and a fifth more), with nothing set by hand" \
	"$(awk -v r="$rate" 'BEGIN { print (r != "?" && r <= 24) ? "yes" : "no" }')" yes
reset_everywhere host_rate_limit

# max_host_concurrency = 6 on 4 nodes: each async worker's transfers to the
# fixture one at a time (its node's share), so at most 4 from the two
# workers' two each
set_everywhere max_host_concurrency 6
fixture_http "$base/stats/reset" POST >/dev/null
csql -c "SELECT count(queryclaw.api_call_async('$base/slow?ms=300&c=' || id, context => '{\"conc\": true}')) FROM companies WHERE id <= 60" >/dev/null
until_true "SELECT sum(result::int) = 60 FROM run_command_on_workers(\$\$SELECT count(*) FROM queryclaw.requests WHERE context ? 'conc' AND finished_at IS NOT NULL\$\$)" 60
peak=$(fixture_http "$base/stats" | sed -n 's/.*"slow_peak": *\([0-9]*\).*/\1/p')
echo "== max_host_concurrency = 6 on 4 nodes: at most $peak requests at once from two workers (two async workers each)"
qc_check "max_host_concurrency holds for the cluster, not for each node" \
	"$([ "${peak:-99}" -le 4 ] && echo yes)" yes
reset_everywhere max_host_concurrency

# ---- max_tokens_per_day shared out between the nodes: embeddings of the
# scripted model (4 tokens a text), from a role whose budget is 40 tokens,
# 10 on each of the 4 nodes.  A node admits a call while the role has
# used less than its share (a call's tokens are known once it returns).
csql <<SQL >/dev/null || echo "not ok - the table texts and the role spender"
CREATE TABLE texts (id bigint PRIMARY KEY, body text);
SELECT create_distributed_table('texts', 'id', colocate_with => 'companies');
INSERT INTO texts SELECT i, 'one two three four' FROM generate_series(1, 40) i;
CREATE ROLE spender LOGIN;
GRANT SELECT ON texts TO spender;
GRANT EXECUTE ON FUNCTION queryclaw.llm_embed(text, text) TO spender;
ALTER ROLE spender SET queryclaw.max_tokens_per_day = 40;
SQL
embedded=$(admitted spender 1 40 "PERFORM queryclaw.llm_embed(body) FROM texts WHERE id = i")
budgets=()
for p in "${workers[@]}"; do
	budgets+=("$(nsql "$p" -U spender -c "SELECT tokens_per_day || ' ' || tokens_used || ' ' || tokens_left FROM queryclaw.my_budget")")
done
echo "== max_tokens_per_day = 40 on 4 nodes: $embedded of 40 embeddings of 4 tokens on two workers admitted; my_budget there: ${budgets[*]}"
qc_check "max_tokens_per_day holds for the cluster: each worker spends its share of 10 tokens (and the call that passes it)" \
	"$embedded $(IFS=,; echo "${budgets[*]}")" "6 10 12 0,10 12 0"

# ---- the audit of the whole cluster
qc_check "the audit of every node, from the coordinator" \
	"$(csql -c "SELECT count(*) FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM queryclaw.audit_log\$\$) WHERE result::int > 0")" 3

# ---- a node removed: the shares of the others follow
csql -c "SELECT citus_remove_node('127.0.0.1', $later)" >/dev/null || echo "not ok - citus_remove_node of the third worker"
qc_check "a node removed: each node's shares are those of three nodes again (my_budget)" \
	"$(for p in 5432 "${workers[@]}"; do nsql "$p" -U limited -c "SELECT calls_per_hour || ' ' || tokens_per_day FROM queryclaw.my_budget"; done | paste -sd,)" \
	"10 100,10 100,10 100"

# ... and added again, without the coordinator in Citus's metadata: refused
# (it could not copy the privileges); with it, the node has those given
# while it was out
csql -c "REVOKE EXECUTE ON FUNCTION queryclaw.check_url(text) FROM dave" -c "SELECT citus_remove_node('127.0.0.1', 5432)" >/dev/null ||
	echo "not ok - the coordinator taken out of Citus's metadata"
# (the node refuses as Citus commits the transaction that adds it: no
# sqlstate(), whose block is rolled back before that)
said=$(csql -v VERBOSITY=verbose -c "SELECT citus_add_node('127.0.0.1', $later)" 2>&1)
qc_check "a node cannot join while Citus's metadata names no coordinator to copy the privileges from (55000)" \
	"$(sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<<"$said") $(csql -c "SELECT count(*) FROM pg_dist_node WHERE nodeport = $later")" "55000 0"
csql -c "SELECT citus_set_coordinator_host('127.0.0.1', 5432)" -c "SELECT citus_add_node('127.0.0.1', $later)" >/dev/null ||
	echo "not ok - the third worker added again"
qc_check "a node added again has the privileges given on the coordinator while it was out" \
	"$(on_all "$acls" | tr , '\n' | sort -u | wc -l) $(on_all "$acls" | tr , '\n' | wc -l) $(nsql $later -c "SELECT has_function_privilege('dave', 'queryclaw.check_url(text)', 'EXECUTE')")" "1 4 f"

# ---- QC_CITUS_BENCH=1: 10,000 async requests on one node against two workers
# (docs/citus.md quotes the figures; not run by default: about a minute)
if [ -n "${QC_CITUS_BENCH:-}" ]; then
	n=10000
	csql <<SQL >/dev/null
CREATE TABLE bench_local (id bigint PRIMARY KEY, url text);
INSERT INTO bench_local SELECT i, '$base/slow?ms=20&b=' || i FROM generate_series(1, $n) i;
CREATE TABLE bench_dist (id bigint PRIMARY KEY, url text);
SELECT create_distributed_table('bench_dist', 'id');
INSERT INTO bench_dist SELECT * FROM bench_local;
SQL
	# $1: the table; $2: the SQL of the nodes' unfinished bench requests
	bench() {
		local start=$(date +%s%N)
		csql -c "SELECT count(queryclaw.api_call_async(url, context => '{\"bench\": true}')) FROM $1" >/dev/null
		until_true "SELECT ($2) = 0" 600
		echo $((($(date +%s%N) - start) / 1000000))
	}
	one=$(bench bench_local "SELECT count(*) FROM queryclaw.requests WHERE context ? 'bench' AND finished_at IS NULL")
	two=$(bench bench_dist "SELECT sum(result::int) FROM run_command_on_workers(\$q\$SELECT count(*) FROM queryclaw.requests WHERE context ? 'bench' AND finished_at IS NULL\$q\$)")
	echo "== $n api_call_async to a 20 ms loopback API, from the SELECT until all final: $one ms on one node, $two ms on two workers"
fi
