#!/usr/bin/env bash
# test/run.sh: `make test` — every test, on a fresh machine, in one command.
#
# Installs what is missing, builds the extension and installs it into a
# private copy of PostgreSQL (nothing system-wide), runs the unit tests,
# builds the fuzz targets and replays their seed corpora (test/fuzz/check.sh;
# not in test/pgroot.sh's roots), checks that no two files of src/ use each
# other's functions (test/layering/),
# starts the fixture server and the scripted model (test/fixture/) on free
# loopback ports and a scratch cluster with the extension preloaded, runs
# pg_regress over sql/*.sql against expected/, then test/hostile_dump.sh
# (results and audit rows of servers sending bytes that are not valid
# text, through pg_dump and pg_restore, in three database encodings), then
# test/worker_hijack.sh (the audit worker attacked through its database's
# settings, with restarts), then test/queue_wait.sh (wait() against other
# sessions), then test/queue_admit.sh (max_queued_per_role against
# concurrent transactions), then test/queue_locks.sh (the async worker
# against rows a user's transaction holds), then test/queue_service.sh (the
# queue as a service: slow hosts beside fast ones, several roles), then
# test/queue_callbacks.sh (the callbacks' own calls, and fairness between
# roles' callbacks), then test/async_restart.sh (the async queue through a
# crash and a killed worker), then test/enrich_service.sh (an enrichment's
# backfill through a crash), then test/enrich_vector.sh (an enrichment into
# a pgvector column), then
# test/worker_database.sh (the workers before queryclaw.database exists, on
# a cluster of their own), then pg_regress over test/nopreload/ on a cluster
# without preload, then the upgrade from release 0.1 (test/upgrade/) and a
# pg_dump/pg_restore round trip on a third cluster, then the README's SQL
# examples (test/readme/) on a fourth, then make installcheck (from a copy
# in its work directory) on a fifth, shows the diffs of any failure, stops
# everything, and ends with "N passed, N failed" (", N skipped" when a
# step was skipped, each saying why in a "skip - " line).  A step that
# could not run counts as failed (test/meta/counts.sh shows it).
#
# As root, everything after the package installation runs in a network
# namespace of its own that has only loopback, with a DNS fixture as its
# name server (see qc_isolate): the tests cannot reach any other address
# even by mistake, and 019_dns can show a cancel during name resolution.
# Elsewhere (QC_NO_ISOLATION=1, or not root) that test is skipped.
#
# PG=NN (make test PG=17) runs all this against another PostgreSQL major,
# from the Debian release that ships it, in a root test/pgroot.sh makes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${PG:-}" ] && [ "$PG" != "$QC_PG_MAJOR" ]; then
	exec env -u PG bash "$QC_ROOT/test/pgroot.sh" test "$PG" "$@"
fi

# The fuzz targets' compiler, but not in a root of test/pgroot.sh (below).
qc_in_pgroot || QC_PACKAGES="$QC_PACKAGES $QC_FUZZ_PACKAGES"

if [ -z "${QC_ISOLATED:-}" ]; then
	qc_install_deps || exit 1
	# the real MCP server, from the npm registry, while it can be reached
	if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" mcp_everything "* ]]; then
		bash "$QC_ROOT/test/mcp_everything.sh" install
	fi
	qc_reexec_isolated "$0" "$@"
fi
qc_setup_test || exit 1

passed=0
failed=0
skipped=0

# Run a command that prints "ok - ...", "not ok - ..." and "skip - ..."
# lines, and add them up (test/lib.sh): one that fails or says nothing
# counts as failed.
run_checks() { qc_run_checks "$@"; }

# A step that cannot go on: it counts as failed, and the run ends with
# the total so far.
give_up() {
	echo "not ok - $*"
	failed=$((failed + 1))
	qc_summary
	exit 1
}

# Unit tests of the pure C parts: they need no server.
qc_log "unit tests"
run_checks make -C "$QC_ROOT" -s unit-tests

qc_make_tls || give_up "could not make the test certificates"
port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture \
	--tls-port-file "$QC_WORK/fixture-tls.port" \
	--tls-cert "$QC_WORK/tls/server.pem" --tls-key "$QC_WORK/tls/server.key" \
	--blackhole-port-file "$QC_WORK/fixture-blackhole.port") || give_up "the fixture server did not start"
tls_port=$(cat "$QC_WORK/fixture-tls.port")
blackhole_port=$(cat "$QC_WORK/fixture-blackhole.port")
# The scripted model and search API.  Its port is deliberately not in
# local_allowlist: the LLM and search endpoints are trusted, tool calls not.
llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || give_up "the scripted model did not start"
llm_key=sk-test-0123456789		# the tests look for it where it must not be
policy="queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.timeout = '5s'
queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1'
queryclaw.llm_model = 'fake-model'
queryclaw.llm_api_key = '$llm_key'
queryclaw.search_url = 'http://127.0.0.1:$llm_port/search'
qc_test.base = 'http://127.0.0.1:$port'
qc_test.port = '$port'
qc_test.tls_port = '$tls_port'
qc_test.blackhole_port = '$blackhole_port'
qc_test.ca_file = '$QC_WORK/tls/ca.pem'
qc_test.llm_base = 'http://127.0.0.1:$llm_port'"

# The fuzz targets (test/fuzz/) build, and each replays its seed corpus
# once (test/fuzz/check.sh), so that a change of the code they call cannot
# leave them behind; fuzzing for longer is `make fuzz-run`.  They are built
# with Debian 12's clang-14 against the native major's headers: the roots
# of the other majors (test/pgroot.sh) have no clang, and the code the
# targets fuzz is the same C whatever the major.
if qc_in_pgroot; then
	qc_skip "the fuzz targets are built and replayed for the native major only, not in a test/pgroot.sh root (PostgreSQL $QC_PG_MAJOR)"
else
	qc_log "fuzz targets: build, and replay of the seed corpora"
	run_checks bash "$QC_ROOT/test/fuzz/check.sh" "$QC_PG_CONFIG"
fi

# No two files of src/ use each other's functions, and each header declares
# only its own file's (the build is done).
qc_log "layering"
run_checks "$QC_PYTHON" "$QC_ROOT/test/layering/cycles.py"

# The scripts of released versions are as they were released.
qc_log "released SQL scripts"
run_checks bash "$QC_ROOT/test/upgrade/released.sh"

# A step that did not run never passes as 0 failed: the counting above and
# below, given steps that could not run.
qc_log "the test command's counts"
run_checks bash "$QC_ROOT/test/meta/counts.sh"

# META.json, what PGXN reads: its spec's rules, and the tree.
qc_log "META.json"
run_checks "$QC_PYTHON" "$QC_ROOT/test/meta/validate.py"

# The main suite, with the library preloaded: the audit worker writes into
# the regression database (it connects once pg_regress has created it), and
# the queue is small enough for a test to fill it.
qc_start_cluster <<CONF || give_up "the main suite's cluster did not start"
$policy
queryclaw.database = 'queryclaw_regression'
queryclaw.audit_queue_size = '1MB'
CONF
suite="$QC_WORK/suite"
mkdir -p "$suite"
cp -r "$QC_ROOT/sql" "$QC_ROOT/expected" "$suite/"
# QC_TESTS="001_setup 012_batch" runs a subset while developing
tests=$(echo ${QC_TESTS:-$(cd "$QC_ROOT/sql" && ls [0-9]*.sql | sed 's/\.sql$//')})
if [ -z "${QC_ISOLATED:-}" ] && [[ " $tests " == *" 019_dns "* ]]; then
	qc_skip "019_dns needs the test network namespace (root, unshare, QC_NO_ISOLATION unset)"
	tests=$(echo $tests | sed 's/\b019_dns\b//')
fi
# the attack on the audit worker, the waits on the queue and the queue
# through restarts are scripts, not pg_regress tests (below)
tests=$(echo $tests | sed 's/\bworker_hijack\b//; s/\bqueue_wait\b//; s/\bqueue_admit\b//; s/\bqueue_locks\b//; s/\bqueue_service\b//; s/\bqueue_callbacks\b//; s/\basync_restart\b//; s/\benrich_service\b//; s/\benrich_vector\b//; s/\bworker_database\b//; s/\bmcp_everything\b//')
qc_log "regression tests"
qc_run_suite "$suite" queryclaw_regression $tests

# Results and audit rows from servers sending bytes that are not valid text
# survive pg_dump and a restore (test/hostile_dump.sh): in the regression
# database, and in databases of a single-byte and a multibyte encoding.
qc_log "hostile bytes through pg_dump and pg_restore"
run_checks bash "$QC_ROOT/test/hostile_dump.sh" "$QC_WORK" "$QC_BINDIR" queryclaw_regression
run_checks bash "$QC_ROOT/test/hostile_dump.sh" "$QC_WORK" "$QC_BINDIR" qc_bytes_latin1 LATIN1
run_checks bash "$QC_ROOT/test/hostile_dump.sh" "$QC_WORK" "$QC_BINDIR" qc_bytes_euc_jp EUC_JP

# The audit worker under attack by its database's owner (restarts the
# cluster); with QC_TESTS, only when it names worker_hijack.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" worker_hijack "* ]]; then
	qc_log "the audit worker against its database's settings"
	run_checks bash "$QC_ROOT/test/worker_hijack.sh" "$QC_WORK" "$QC_PGDATA" "$QC_BINDIR"
fi

# A real MCP server from the npm registry (test/mcp_everything.sh); with
# QC_TESTS, only when it names mcp_everything.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" mcp_everything "* ]]; then
	qc_log "a real MCP server: @modelcontextprotocol/server-everything"
	run_checks bash "$QC_ROOT/test/mcp_everything.sh" "$QC_WORK" "$QC_BINDIR"
fi

# queryclaw.wait() against other sessions: one finishes a request, another
# cancels the waiter (test/queue_wait.sh); with QC_TESTS, only when it
# names queue_wait.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" queue_wait "* ]]; then
	qc_log "wait() for requests other sessions finish"
	run_checks bash "$QC_ROOT/test/queue_wait.sh" "$QC_WORK" "$QC_BINDIR"
fi

# queryclaw.max_queued_per_role against concurrent transactions
# (test/queue_admit.sh); with QC_TESTS, only when it names queue_admit.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" queue_admit "* ]]; then
	qc_log "max_queued_per_role against concurrent transactions"
	run_checks bash "$QC_ROOT/test/queue_admit.sh" "$QC_WORK" "$QC_BINDIR"
fi

# No user transaction makes the async worker wait (test/queue_locks.sh);
# with QC_TESTS, only when it names queue_locks.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" queue_locks "* ]]; then
	qc_log "the async worker against rows a user's transaction holds"
	run_checks bash "$QC_ROOT/test/queue_locks.sh" "$QC_WORK" "$QC_BINDIR"
fi

# The queue as a service: no head-of-line blocking, "running" on the wire,
# no snapshot held, round-robin between roles (test/queue_service.sh);
# with QC_TESTS, only when it names queue_service.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" queue_service "* ]]; then
	qc_log "the async queue as a service: slow hosts beside fast ones, several roles"
	run_checks bash "$QC_ROOT/test/queue_service.sh" "$QC_WORK" "$QC_BINDIR"
fi

# Callbacks: their network calls never touch another role's transfers, and
# one role's slow callbacks do not hold up another role's (restarts the
# cluster; test/queue_callbacks.sh); with QC_TESTS, only when it names
# queue_callbacks.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" queue_callbacks "* ]]; then
	qc_log "the async queue's callbacks: their own calls, and fairness between roles"
	run_checks bash "$QC_ROOT/test/queue_callbacks.sh" "$QC_WORK" "$QC_PGDATA" "$QC_BINDIR"
fi

# The async queue through a hard stop of the server and a killed worker
# (restarts the cluster); with QC_TESTS, only when it names async_restart.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" async_restart "* ]]; then
	qc_log "the async queue through a crash and a killed worker"
	run_checks bash "$QC_ROOT/test/async_restart.sh" "$QC_WORK" "$QC_PGDATA" "$QC_BINDIR"
fi

# An enrichment's backfill as a service: the cap on its requests, another
# role's turn, a crash mid-backfill (test/enrich_service.sh); with QC_TESTS,
# only when it names enrich_service.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" enrich_service "* ]]; then
	qc_log "an enrichment's backfill through a crash"
	run_checks bash "$QC_ROOT/test/enrich_service.sh" "$QC_WORK" "$QC_PGDATA" "$QC_BINDIR"
fi

# An enrichment into a pgvector column: the backfill, a live insert, a
# column of other dimensions (test/enrich_vector.sh; skipped without
# pgvector); with QC_TESTS, only when it names enrich_vector.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" enrich_vector "* ]]; then
	qc_log "an enrichment into a pgvector column"
	run_checks bash "$QC_ROOT/test/enrich_vector.sh" "$QC_WORK" "$QC_PGDATA" "$QC_BINDIR"
fi
qc_stop_cluster

# The workers while queryclaw.database does not exist yet, on a cluster of
# their own (test/worker_database.sh); with QC_TESTS, only when it names
# worker_database.
if [ -z "${QC_TESTS:-}" ] || [[ " $QC_TESTS " == *" worker_database "* ]]; then
	qc_log "the workers before their database exists"
	run_checks bash "$QC_ROOT/test/worker_database.sh" "$QC_WORK" "$QC_BINDIR"
fi

# The same setup without preload: what works, and how the audit then
# behaves (test/nopreload/).
qc_start_cluster nopreload <<CONF || give_up "the cluster without preload did not start"
$policy
shared_preload_libraries = ''
CONF
qc_log "regression tests without shared_preload_libraries"
qc_run_suite_after_setup "$QC_ROOT/test/nopreload" queryclaw_nopreload
qc_stop_cluster

# Release 0.1's SQL objects under this library, then ALTER EXTENSION
# UPDATE (test/upgrade/), on a preloaded cluster whose audit worker writes
# into the upgrade test's database, so that 0.1's table gets its rows from
# the worker; then pg_dump and pg_restore of that database.
qc_start_cluster upgrade <<CONF || give_up "the upgrade test's cluster did not start"
$policy
queryclaw.database = 'queryclaw_upgrade'
CONF
suite="$QC_WORK/suite-upgrade"
mkdir -p "$suite"
cp -r "$QC_ROOT/test/upgrade/sql" "$QC_ROOT/test/upgrade/expected" "$suite/"
qc_log "upgrade tests"
qc_run_suite "$suite" queryclaw_upgrade $(cd "$suite/sql" && ls [0-9]*.sql | sed 's/\.sql$//')
qc_log "pg_dump and pg_restore"
run_checks bash "$QC_ROOT/test/dump_restore.sh" "$QC_WORK" "$QC_BINDIR" queryclaw_upgrade
qc_stop_cluster

# Every SQL example of the README, as written (test/readme/run.sh), on a
# cluster configured as the README says.  Its example.com is on loopback
# only inside the test network namespace: elsewhere it is the real one.
if [ -n "${QC_ISOLATED:-}" ]; then
	qc_log "README examples"
	run_checks bash "$QC_ROOT/test/readme/run.sh" "$QC_WORK" "$QC_BINDIR" "$llm_port"
else
	qc_skip "the README's examples need the test network namespace (root, unshare, QC_NO_ISOLATION unset)"
fi

# make installcheck, as a PGXS user runs it against a server of their own:
# a plain one here (no preload, the default policy), the Makefile's REGRESS.
# It runs as the cluster's OS user, which may not be able to enter this
# tree (a clone in root's home): so from a copy of what it reads (the
# Makefile, the control file, sql/ and expected/) in the work directory.
qc_stop_cluster
qc_start_cluster installcheck <<CONF || give_up "the installcheck cluster did not start"
shared_preload_libraries = ''
CONF
suite="$QC_WORK/installcheck"
mkdir -p "$suite"
cp -r "$QC_ROOT/Makefile" "$QC_ROOT/queryclaw_ext.control" "$QC_ROOT/sql" "$QC_ROOT/expected" "$suite/"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$suite"
qc_log "make installcheck"
qc_as_pg make -C "$suite" -s PG_CONFIG="$QC_PG_CONFIG" \
	PGHOST="$QC_WORK" PGPORT=5432 installcheck 2>&1 | tee "$suite/regress.log"
status=${PIPESTATUS[0]}
# the tests of the Makefile's REGRESS, which the step must have run
qc_count_results "$suite" "$(sed -n '/^REGRESS = /,/[^\\]$/p' "$QC_ROOT/Makefile" | tr -d '\\' | sed 's/^REGRESS = //' | wc -w)" "$status"

# The tests check results, errors and audit rows for the API key; the
# server log (every error with its statement) must not hold it either.
if grep -q -- "$llm_key" "$QC_WORK/postgres.log"; then
	echo "not ok - the LLM API key is in the server log"
	failed=$((failed + 1))
else
	echo "ok - the LLM API key is not in the server log"
	passed=$((passed + 1))
fi

qc_summary
[ "$failed" -eq 0 ]
