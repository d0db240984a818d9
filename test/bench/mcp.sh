#!/usr/bin/env bash
# test/bench/mcp.sh: what an MCP tool call costs over a plain API call.
#
# One loopback fixture server (test/fixture/server.py) serves both: its MCP
# server (/mcp/json, test/fixture/mcp_fixture.py) and its plain HTTP
# endpoint /echo.  In a scratch cluster with the durable audit on, each run
# times, call by call and taking turns in one session:
#   - mcp_call of the fixture's echo tool on a warm session (initialized,
#     the tool list not asked for: one tools/call, one POST);
#   - api_call POSTing the same JSON-RPC body to /echo (one POST).
# It prints, per run, the minimum and the median microseconds of each and
# the ratio of the medians (the target: mcp_call within 1.5x api_call).
# Both include the fixture's own time (Python), which is most of a call.
# Only loopback is contacted.  A benchmark: it prints figures and asserts
# nothing.
# Usage: bash test/bench/mcp.sh [calls]   (default 2000 of each per run;
# QC_RUNS runs, default 3)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

n=${1:-2000}
RUNS=${QC_RUNS:-3}
qc_setup_private || exit 1
port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture) || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
CONF
base="http://127.0.0.1:$port"
qc_psql -q -d postgres -v base="$base" <<'SQL' || exit 1
CREATE EXTENSION queryclaw_ext;
SELECT format('CREATE SERVER bench_mcp FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, protocol ''mcp'')',
              :'base' || '/mcp/json') \gexec
SQL

echo "machine: $(nproc) cores; $n calls of each per run, taking turns; $RUNS runs"
for run in $(seq "$RUNS"); do
	qc_psql -q -At -F ' ' -d postgres -v n="$n" -v base="$base" -v run="$run" <<'SQL'
CREATE TEMP TABLE timing (what text, us numeric);
CREATE FUNCTION pg_temp.bench(n int, base text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    body text := '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}';
    t0 timestamptz;
BEGIN
    -- the session begun and warm, as a caller's would be
    PERFORM queryclaw.mcp_call('bench_mcp', 'echo', '{"message": "hi"}');
    PERFORM queryclaw.api_call(base || '/echo', 'POST', NULL, body);
    FOR i IN 1..n LOOP
        t0 := clock_timestamp();
        PERFORM queryclaw.api_call(base || '/echo', 'POST', NULL, body);
        INSERT INTO timing VALUES ('api', extract(epoch FROM clock_timestamp() - t0) * 1e6);
        t0 := clock_timestamp();
        PERFORM queryclaw.mcp_call('bench_mcp', 'echo', '{"message": "hi"}');
        INSERT INTO timing VALUES ('mcp', extract(epoch FROM clock_timestamp() - t0) * 1e6);
    END LOOP;
END $$;
SELECT pg_temp.bench(:n, :'base') \g /dev/null
WITH f AS (
    SELECT what, min(us) AS lo, percentile_cont(0.5) WITHIN GROUP (ORDER BY us) AS med
      FROM timing GROUP BY what)
SELECT format('run %s: api_call min %s us, median %s us; mcp_call min %s us, median %s us; mcp/api: min %sx, median %sx',
              :run, round(a.lo), round(a.med::numeric), round(m.lo), round(m.med::numeric),
              round(m.lo / a.lo, 2), round((m.med / a.med)::numeric, 2))
  FROM f a, f m WHERE a.what = 'api' AND m.what = 'mcp';
SQL
done
# What was sent and audited: one row per request, each POST of mcp_call
# (its initialize and notifications/initialized too) with func 'mcp'.
qc_psql -q -d postgres -c "$(qc_sql_wait_for_audit)" &&
	qc_psql -q -d postgres <<'SQL'
\pset footer off
SELECT func, detail->>'method' AS method, count(*) AS audit_rows, count(*) FILTER (WHERE status BETWEEN 200 AND 299) AS answered_2xx
  FROM queryclaw.audit_log GROUP BY 1, 2 ORDER BY 1, 2;
SQL
