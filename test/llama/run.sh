#!/usr/bin/env bash
# test/llama/run.sh: `make test-llm-server` — the LLM loop against a real
# model server, llama.cpp's llama-server, instead of the scripted model.
#
# Every other LLM test talks to test/fixture/llm_server.py, which answers
# what it was written to answer.  A real server has its own chat template,
# tool-call parser, grammar sampler and error replies, and that is where a
# client's mistakes show.  Debian unstable ships llama-server (package
# llama.cpp-tools) and test/pgroot.sh already makes a Debian unstable root
# for the newest PostgreSQL, so the packages are added to that root and
# run from it.  No model can be downloaded: make_model.py (in shared/llama
# beside the source tree, or QC_LLAMA_MAKE_MODEL) writes a tiny one whose
# replies are fixed (its docstring says which), with python3-gguf from the
# root.
#
# As test/run.sh does, it builds the extension into a private copy of this
# machine's PostgreSQL and, as root, runs in a network namespace of its own
# that has only loopback.  There it starts two llama-servers from the root
# (one for chat, with --jinja so that the model's template parses tool
# calls, and its 4096-token context; one with --embeddings), the fixture
# server for the pages, and a preloaded cluster, and runs pg_regress over
# test/llama/sql (with the main suite's 001_setup) against
# test/llama/expected.  Ends with "N passed, N failed".
#
# Where the root cannot be had (no network to make it, not root) or lacks
# the package, or make_model.py is missing, it says why in one "skip -"
# line and ends with "0 passed, 0 failed".  .ci/run runs it once; make
# test does not (docs/llm-servers.md says why).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

suite=unstable
packages="llama.cpp-tools python3-gguf python3-numpy"
make_model=${QC_LLAMA_MAKE_MODEL:-$QC_ROOT/../shared/llama/make_model.py}

skip() {
	echo "skip - the tests against llama-server: $*"
	echo "0 passed, 0 failed"
	exit 0
}

# What the servers need is installed before the network goes away.
if [ -z "${QC_ISOLATED:-}" ]; then
	[ "$(id -u)" -eq 0 ] || skip "llama-server runs from the Debian $suite root, which needs root"
	[ -r "$make_model" ] || skip "no make_model.py at $make_model (set QC_LLAMA_MAKE_MODEL)"
	qc_install_deps || exit 1
	said=$(bash "$QC_ROOT/test/pgroot.sh" add "$suite" $packages 2>&1 >/dev/null) ||
		skip "no Debian $suite root with $packages: $(tail -1 <<<"$said")"
	[ -z "$said" ] || echo "$said"
	qc_reexec_isolated "$0" "$@"
fi
qc_setup_test || exit 1

passed=0
failed=0

# A set-up step failed: say which, and end.
fail() {
	echo "not ok - $*"
	echo "$passed passed, $((failed + 1)) failed"
	exit 1
}

# Run the root's command $@ here, with QC_WORK/llama as /tmp/queryclaw-out.
in_root() {
	QC_ROOT_OUT="$QC_WORK/llama" bash "$QC_ROOT/test/pgroot.sh" exec "$suite" "$@"
}

# Start llama-server as server $1 (log and pid in QC_WORK, so that
# qc_cleanup stops it) with options $2...; print its port once its model
# is loaded (/health answers 200).
start_llama() {
	local name=$1 port
	shift
	port=$(qc_free_port)
	# exec: the pid is the server's (pgroot.sh exec becomes it), not a
	# subshell's that qc_cleanup would stop without it
	QC_ROOT_OUT="$QC_WORK/llama" exec bash "$QC_ROOT/test/pgroot.sh" exec "$suite" \
		llama-server --model /tmp/queryclaw-out/model.gguf --host 127.0.0.1 --port "$port" \
		--threads 1 --no-webui "$@" >"$QC_WORK/$name.log" 2>&1 &
	echo $! >"$QC_WORK/$name.pid"
	for _ in $(seq 300); do
		"$QC_PYTHON" -c 'import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/health" % sys.argv[1], timeout=1)' "$port" 2>/dev/null &&
			{ echo "$port"; return 0; }
		kill -0 "$(cat "$QC_WORK/$name.pid")" 2>/dev/null || break
		sleep 0.1
	done
	tail -5 "$QC_WORK/$name.log" >&2
	return 1
}

mkdir -p "$QC_WORK/llama"
cp "$make_model" "$QC_WORK/llama/make_model.py"
in_root python3 /tmp/queryclaw-out/make_model.py /tmp/queryclaw-out/model.gguf \
	>"$QC_WORK/make_model.log" 2>&1 || { cat "$QC_WORK/make_model.log"; fail "make_model.py wrote no model"; }
qc_log "llama-server $(in_root llama-server --version 2>&1 | sed -n 's/^version: //p'), from Debian $suite"

llm_key=sk-llama-0123456789
# The chat server with the model's own context (4096 tokens: a longer
# prompt is refused).  The embeddings server pools by mean: the model
# declares no pooling, and without one /v1/embeddings crashes this server.
chat_port=$(start_llama llama-chat --jinja --ctx-size 4096 --api-key "$llm_key") ||
	fail "llama-server did not start"
embed_port=$(start_llama llama-embed --embeddings --pooling mean --ctx-size 4096) ||
	fail "llama-server --embeddings did not start"
port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture) || fail "the fixture server did not start"

# The model's endpoint is trusted and not in local_allowlist, as in
# test/run.sh; the fixture server is, for the pages web_fetch reads.
qc_start_cluster <<CONF || fail "the cluster did not start"
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port'
queryclaw.timeout = '5s'
queryclaw.llm_url = 'http://127.0.0.1:$chat_port/v1'
queryclaw.llm_model = 'qcllama-tiny'
queryclaw.llm_api_key = '$llm_key'
queryclaw.embed_url = 'http://127.0.0.1:$embed_port/v1'
queryclaw.database = 'queryclaw_llama'
qc_test.base = 'http://127.0.0.1:$port'
qc_test.port = '$port'
qc_test.llm_base = 'http://127.0.0.1:$chat_port'
CONF

qc_log "regression tests against llama-server"
qc_run_suite_after_setup "$QC_ROOT/test/llama" queryclaw_llama

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
