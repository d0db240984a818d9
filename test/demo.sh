#!/usr/bin/env bash
# test/demo.sh: `make demo` — the main job, end to end, on a fresh machine.
#
# Installs what is missing, builds and installs the extension, serves the
# sample company site (test/demo/site.py) on a free loopback port, starts a
# scratch cluster whose policy allows exactly that site, enriches a table of
# companies with one UPDATE, and prints the rows and the audit summary.
# Everything it started is stopped when it ends.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

qc_install_deps || exit 1
qc_build_install || exit 1
qc_make_workdir

port=$(qc_start_server "$QC_ROOT/test/demo/site.py" site) || exit 1
qc_log "sample site on http://127.0.0.1:$port"
qc_start_cluster <<CONF || exit 1
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
CONF
qc_log "scratch cluster in $QC_WORK/data"

qc_psql -q -d postgres -c "CREATE DATABASE demo" || exit 1
qc_psql -q -d demo -c "CREATE EXTENSION queryclaw_ext" || exit 1
# on stdin, so the cluster's OS user need not be able to read this tree
qc_psql -d demo -v base="http://127.0.0.1:$port" -f - <"$QC_ROOT/test/demo/demo.sql"
rc=$?

echo
qc_log "done: the cluster and the sample site are being stopped; nothing is left running"
exit $rc
