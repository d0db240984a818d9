#!/usr/bin/env bash
# test/demo.sh: `make demo` — the main job, end to end, on a fresh machine.
#
# Installs what is missing, builds and installs the extension, serves the
# sample company site (test/demo/site.py) on a free loopback port, starts a
# scratch cluster whose policy allows exactly that site, enriches a table of
# companies with one UPDATE, then more rows through the queue (an AFTER
# INSERT trigger and a callback; the same declared once as an enrichment,
# with its backfill and a live insert; one request retried after a 503, one
# that fails), and prints each statement, its rows and the audit trail.
# Its last step asks a model that browses (llm_chat_tools): the endpoint in
# QC_LLM_URL (with QC_LLM_KEY and QC_LLM_MODEL) when it is set, otherwise
# the bundled scripted model (test/fixture/llm_server.py), and it says which.
# Everything it started is stopped when it ends.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

qc_install_deps || exit 1
qc_build_install || exit 1
qc_make_workdir

port=$(qc_start_server "$QC_ROOT/test/demo/site.py" site) || exit 1
qc_log "sample site on http://127.0.0.1:$port"

# ---- the LLM step's endpoint ----
if [ -n "${QC_LLM_URL:-}" ]; then
	llm_url=$QC_LLM_URL
	llm_model=${QC_LLM_MODEL:-gpt-4o-mini}
	llm_key=${QC_LLM_KEY:-}
	llm_which="the endpoint at $llm_url, model $llm_model (from QC_LLM_URL)"
else
	llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || exit 1
	llm_url="http://127.0.0.1:$llm_port/v1"
	llm_model=scripted
	llm_key=
	llm_which="the bundled scripted model (test/fixture/llm_server.py), not a real LLM; set QC_LLM_URL, QC_LLM_KEY and QC_LLM_MODEL to use one"
fi
qc_log "LLM step: $llm_which"
# a postgresql.conf string: single quotes doubled
conf_quote() { printf "'%s'" "${1//\'/\'\'}"; }
# ---- end of the LLM step's endpoint ----

qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.database = 'demo'
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.host_rate_limit = '*=10/s'
queryclaw.retry_max = 2
queryclaw.retry_base_delay = '300ms'
queryclaw.llm_url = $(conf_quote "$llm_url")
queryclaw.llm_model = $(conf_quote "$llm_model")
queryclaw.llm_api_key = $(conf_quote "$llm_key")
CONF
qc_log "scratch cluster in $QC_WORK/data"

qc_psql -q -d postgres -c "CREATE DATABASE demo" || exit 1
# the queue's workers connect to queryclaw.database as the server starts
qc_restart_cluster || exit 1
qc_psql -q -d demo -c "CREATE EXTENSION queryclaw_ext" || exit 1
# on stdin, so the cluster's OS user need not be able to read this tree
qc_psql -d demo -v base="http://127.0.0.1:$port" -v llm_which="$llm_which" \
	-f - <"$QC_ROOT/test/demo/demo.sql"
rc=$?

echo
qc_log "done: the cluster, the sample site and any scripted model are being stopped; nothing is left running"
exit $rc
