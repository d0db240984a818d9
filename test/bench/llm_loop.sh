#!/usr/bin/env bash
# test/bench/llm_loop.sh: what the LLM tool loop costs, apart from the model.
#
# Against the scripted model (test/fixture/llm_server.py) on loopback, in a
# private cluster as `make test` builds it, prints:
#   - milliseconds per llm_chat_tools call: a plain answer (1 request), one
#     web_fetch tool call (2 requests, 1 fetch), three tool calls in one
#     reply;
#   - milliseconds per round of a 50-round run whose every round makes a
#     check_url tool call (no network): the loop's and the subtransaction's
#     own cost;
#   - the backend's memory (its memory contexts, and its resident set)
#     after 100 and after 1,000 calls in one session: it must not grow.
# The figures include the scripted model's own time (Python, JSON).
# Usage: bash test/bench/llm_loop.sh [calls]   (default 200 per timing)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

n=${1:-200}
qc_setup_private || exit 1
port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture) || exit 1
llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.audit = off
queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1'
queryclaw.llm_model = 'bench'
queryclaw.llm_max_rounds = 100
CONF
qc_psql -q -d postgres -c "CREATE EXTENSION queryclaw_ext" || exit 1
base="http://127.0.0.1:$port"

qc_log "per call, $n calls each (ms)"
qc_psql -q -d postgres -v n="$n" -v base="$base" <<'SQL'
\pset footer off
CREATE TEMP TABLE timing (what text, ms numeric);
CREATE FUNCTION pg_temp.per_call(what text, prompt text, tools text[], n int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..n LOOP
        PERFORM queryclaw.llm_chat_tools(prompt, tools);
    END LOOP;
    INSERT INTO timing VALUES (what, round(extract(epoch FROM clock_timestamp() - t0) * 1000 / n, 2));
END $$;
\o /dev/null
SELECT pg_temp.per_call('plain answer (1 request)', 'SCENARIO:plain', '{}', :n);
SELECT pg_temp.per_call('one tool call (2 requests, 1 fetch)', 'SCENARIO:tool_call URL:' || :'base' || '/hello', '{web_fetch}', :n);
SELECT pg_temp.per_call('three tool calls in one reply', 'SCENARIO:multi_tool URL:' || :'base' || '/hello', '{web_fetch,api_call,check_url}', :n);
SELECT pg_temp.per_call('50 rounds of check_url, per call', 'SCENARIO:loop URL:http://192.0.2.1/', '{check_url}', 1);
\o
UPDATE timing SET what = '50-round run, per round', ms = round(ms / 50, 2) WHERE what LIKE '50 rounds%';
SELECT what, ms FROM timing;
SQL

qc_log "backend memory over 1,000 calls in one session"
qc_psql -q -d postgres -v base="$base" <<'SQL'
\pset footer off
CREATE TEMP TABLE mem (after int, contexts_kb bigint, rss_kb bigint);
CREATE FUNCTION pg_temp.note(after int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO mem SELECT after, (SELECT sum(total_bytes) / 1024 FROM pg_backend_memory_contexts),
        (SELECT substring(l FROM '\d+')::bigint
           FROM regexp_split_to_table(pg_read_file('/proc/' || pg_backend_pid() || '/status'), E'\n') AS l
          WHERE l LIKE 'VmRSS:%')
$$;
CREATE FUNCTION pg_temp.calls(n int, base text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..n LOOP
        PERFORM queryclaw.llm_chat_tools('SCENARIO:tool_call URL:' || base || '/html', '{web_fetch}');
    END LOOP;
END $$;
\o /dev/null
SELECT pg_temp.calls(10, :'base'), pg_temp.note(10);
SELECT pg_temp.calls(90, :'base'), pg_temp.note(100);
SELECT pg_temp.calls(900, :'base'), pg_temp.note(1000);
\o
SELECT after AS calls, contexts_kb, rss_kb FROM mem ORDER BY after;
SQL
