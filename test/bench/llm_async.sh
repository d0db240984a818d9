#!/usr/bin/env bash
# test/bench/llm_async.sh: LLM enrichment of a table through the queue.
#
# 500 rows (or $1) each get an llm_chat_tools_async request, enqueued by
# one INSERT ... SELECT, whose callback writes the model's answer back into
# the row.  The scripted model (test/fixture/llm_server.py, scenario
# slow:200) answers each request in 200 ms; the worker runs up to
# queryclaw.async_concurrency (64) of them at once, the model requests of
# all its LLM jobs in one batch of the transport (src/requests/llmjob.c), so the
# floor is 500 / 64 * 200 ms = 1.6 s, where one after the other would take
# 100 s.  Prints the time from the enqueuing commit until the last callback
# wrote its row, the requests per second, and the target (< 4 s for 500).
# Usage: bash test/bench/llm_async.sh [rows]   (default 500)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

n=${1:-500}
qc_setup_private || exit 1
llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || exit 1
qc_start_cluster <<CONF || exit 1
queryclaw.database = 'postgres'
queryclaw.async_concurrency = 64
queryclaw.max_host_concurrency = 64
queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1'
queryclaw.llm_model = 'bench'
queryclaw.enabled = on
CONF
qc_psql -q -d postgres -c "CREATE EXTENSION queryclaw_ext" || exit 1

qc_log "$n llm_chat_tools_async prompts, the model answering in 200 ms"
qc_psql -q -d postgres -v n="$n" <<'SQL'
\set ON_ERROR_STOP on
\pset footer off
CREATE TABLE items (id int PRIMARY KEY, answer text, error text);
INSERT INTO items (id) SELECT g FROM generate_series(1, :n) AS g;
CREATE FUNCTION item_done(id bigint, result jsonb, error text, context jsonb) RETURNS void
LANGUAGE sql AS $$
    UPDATE items SET answer = coalesce(result->>'answer', ''), error = item_done.error
     WHERE items.id = (context->>'item')::int
$$;
SELECT clock_timestamp() AS t0 \gset
SELECT count(queryclaw.llm_chat_tools_async('SCENARIO:slow:200 item ' || id, '{}',
                                            callback => 'item_done(bigint,jsonb,text,jsonb)',
                                            context => jsonb_build_object('item', id)))
  FROM items \gset
DO $$
BEGIN
    FOR i IN 1..1200 LOOP
        EXIT WHEN NOT EXISTS (SELECT FROM items WHERE answer IS NULL AND error IS NULL);
        PERFORM pg_sleep(0.02);
    END LOOP;
END $$;
SELECT count(*) FILTER (WHERE answer = 'slow answer') AS answered,
       count(*) FILTER (WHERE error IS NOT NULL) AS failed,
       round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2) AS seconds,
       round(count(*) / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric) AS per_second,
       CASE WHEN :n = 500 THEN '< 4 s' END AS target
  FROM items;
SQL
