#!/usr/bin/env bash
# test/bench/memory.sh: backend memory under hostile bodies and long runs
# (`make bench-memory`).
#
# Starts the fixture server, the scripted model and search API
# (test/fixture/llm_server.py) and a scratch cluster with a private install
# of the extension, then prints, from the backend's own /proc/self/status,
# its private memory (RssAnon) before and after, and how far it peaked:
#   1. for each hostile body (1 GB plain, 1 GB gzip and brotli bombs, all
#      three in one batch), one call in a fresh session.  Target: < 20 MB.
#   2. for each SQL function, 10,000 calls in one statement (a PL/pgSQL
#      loop), after 100 to warm up.  Target: < 5 MB.
# It is a benchmark: it prints figures, and a verdict per line, and exits
# non-zero when a figure misses its target.  Only loopback is contacted.
#
# The lists below take one line per case: a name, then a SQL expression
# that makes one call (BASE stands for the fixture's URL).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

BODIES=(
	"1 GB body, web_fetch raw|queryclaw.web_fetch('BASE/big?bytes=1073741824', 'raw')"
	"1 GB body, api_call|queryclaw.api_call('BASE/big?bytes=1073741824')"
	"1 GB gzip bomb, web_fetch raw|queryclaw.web_fetch('BASE/gzip-bomb?mb=1024', 'raw')"
	"1 GB brotli bomb, api_call|queryclaw.api_call('BASE/brotli-bomb?mb=1024')"
	"all three in one web_fetch_many|(SELECT count(*) FROM queryclaw.web_fetch_many(ARRAY['BASE/big?bytes=1073741824', 'BASE/gzip-bomb?mb=1024', 'BASE/brotli-bomb?mb=1024'], 'raw'))"
)
CALLS=(
	"web_fetch|queryclaw.web_fetch('BASE/hello')"
	"web_fetch, HTML to text|queryclaw.web_fetch('BASE/html')"
	"web_fetch, article|queryclaw.web_fetch('BASE/html', 'article')"
	"web_fetch, markdown|queryclaw.web_fetch('BASE/html', 'markdown')"
	"web_fetch, metadata|queryclaw.web_fetch('BASE/html', 'metadata')"
	"api_call|queryclaw.api_call('BASE/json')"
	"api_call POST|queryclaw.api_call('BASE/echo', 'POST', '{\"X-Token\": \"t\"}', '{\"a\": 1}')"
	"check_url|queryclaw.check_url('BASE/hello')"
	"check_url, a name resolved|queryclaw.check_url('http://localhost/')"
	"html_to_text|queryclaw.html_to_text(repeat('<p>Hello <b>world</b> &amp; <a href=\"/x\">more</a></p>', 50))"
	"html_to_text, markdown|queryclaw.html_to_text(repeat('<h2>T</h2><p>Hello <a href=\"/x\">more</a></p>', 50), 'markdown', 'http://example.com/')"
	"html_to_text, metadata|queryclaw.html_to_text('<html><head><title>T</title><meta name=\"author\" content=\"A\"></head><body><p>x</p></body></html>', 'metadata')"
	"web_fetch_many (2 URLs)|(SELECT count(*) FROM queryclaw.web_fetch_many(ARRAY['BASE/hello', 'BASE/json']))"
	"api_call_many (2 requests)|(SELECT count(*) FROM queryclaw.api_call_many('[{\"url\": \"BASE/hello\"}, {\"url\": \"BASE/echo\", \"method\": \"POST\", \"body\": \"{}\"}]'))"
	"refused (private address)|(SELECT count(*) FROM queryclaw.web_fetch_many(ARRAY['http://10.0.0.1/']))"
	"llm_chat_tools, one answer|queryclaw.llm_chat_tools('SCENARIO:plain')"
	"llm_chat_tools, one tool call|queryclaw.llm_chat_tools('SCENARIO:tool_call URL:BASE/hello')"
	"web_search|(SELECT count(*) FROM queryclaw.web_search('queryclaw', 2))"
)
N=${QC_MEMORY_CALLS:-10000}
BODY_LIMIT_KB=$((20 * 1024))
CALLS_LIMIT_KB=$((5 * 1024))

qc_setup_private || exit 1
port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture) || exit 1
llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.timeout = '60s'
queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1'
queryclaw.llm_model = 'fake-model'
queryclaw.search_url = 'http://127.0.0.1:$llm_port/search'
CONF
base="http://127.0.0.1:$port"
qc_psql -q -d postgres <<'SQL' || exit 1
CREATE EXTENSION queryclaw_ext;
-- a field of the backend's /proc/self/status, in kB
CREATE FUNCTION proc_kb(field text) RETURNS bigint LANGUAGE sql
AS $$ SELECT substring(pg_read_file('/proc/self/status') FROM field || ':\s+(\d+)')::bigint $$;
SQL

# Run a statement in a fresh session after a warm-up; prints the private
# memory (RssAnon, kB) before and after it, and how far the memory peaked
# above the start, as the SQL expression peak computes it.
measure() {
	local warmup=$1 statement=$2 peak=$3
	qc_psql -qAt -F ' ' -d postgres <<SQL | tr '\n' ' '
$warmup
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT proc_kb('RssAnon') AS anon, proc_kb('VmRSS') AS rss \gset before_
$statement
SELECT :before_anon, proc_kb('RssAnon'), $peak;
SQL
}

# One call can only be watched from outside: its peak is the resident set's
# high-water mark (VmHWM, reset just before the call by writing 5 to
# /proc/self/clear_refs) above the resident set before it.  That also
# counts the shared buffers the call touches first, so it is an upper
# bound of the private peak.
BODY_PEAK="proc_kb('VmHWM') - :before_rss"

# A loop of calls samples its own private memory every 100 calls: in a
# query, the planner could also evaluate an uncorrelated call only once.
calls() {
	echo "DO \$\$ DECLARE peak bigint := 0; BEGIN FOR i IN 1..$1 LOOP PERFORM $2;
		IF i % 100 = 0 THEN peak := greatest(peak, proc_kb('RssAnon')); END IF; END LOOP;
		PERFORM set_config('bench.peak', peak::text, false); END \$\$;"
}
CALLS_PEAK="current_setting('bench.peak')::bigint - :before_anon"

# Print a result line; returns 1 when a figure misses its limit.
report() {
	local name=$1 limit=$2 before after peak
	read -r before after peak <<<"$3"
	local growth=$((after - before)) worst verdict=ok
	worst=$((growth > peak ? growth : peak))
	[ "$worst" -lt "$limit" ] || verdict="OVER $((limit / 1024)) MB"
	printf '  %-34s RssAnon %7d kB -> %7d kB (%+6d kB), peak %+6d kB  %s\n' \
		"$name" "$before" "$after" "$growth" "$peak" "$verdict"
	[ "$verdict" = ok ]
}

failed=0
echo "machine: $(nproc) cores; queryclaw.max_bytes = $(qc_psql -At -d postgres -c 'SHOW queryclaw.max_bytes')"
echo "1. one hostile body per fresh session (target < 20 MB):"
for entry in "${BODIES[@]}"; do
	name=${entry%%|*}
	expr=${entry#*|}
	expr=${expr//BASE/$base}
	figures=$(measure "SELECT queryclaw.web_fetch('$base/hello') \\g /dev/null" \
		"SELECT $expr \\g /dev/null" "$BODY_PEAK")
	report "$name" "$BODY_LIMIT_KB" "$figures" || failed=$((failed + 1))
done

echo "2. $N calls in one loop, after 100 to warm up (target < 5 MB):"
for entry in "${CALLS[@]}"; do
	name=${entry%%|*}
	expr=${entry#*|}
	expr=${expr//BASE/$base}
	figures=$(measure "$(calls 100 "$expr")" "$(calls "$N" "$expr")" "$CALLS_PEAK")
	report "$name" "$CALLS_LIMIT_KB" "$figures" || failed=$((failed + 1))
done
echo "audit rows written: $(qc_psql -At -d postgres -c 'SELECT count(*) FROM queryclaw.audit_log')"
[ "$failed" -eq 0 ]
