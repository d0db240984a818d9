#!/usr/bin/env bash
# test/mcp_everything.sh: mcp_tools and mcp_call against a real MCP server,
# @modelcontextprotocol/server-everything from the npm registry, in its
# Streamable HTTP mode on loopback (run by test/run.sh on its preloaded
# cluster, after the suite).
#
#   mcp_everything.sh install    before the tests leave the network: npm
#                                installs the server into $QC_MCP_CACHE
#                                where it is missing (a "skip -" line when
#                                node, npm or the registry is not there)
#   mcp_everything.sh WORK BIN   the checks: the server started on a free
#                                loopback port, a queryclaw server with
#                                protocol 'mcp' for it, then its tool list,
#                                echo, get-sum, structured content, an
#                                image, a long-running operation that
#                                streams progress before its result, an
#                                unknown tool; "ok - ..." / "not ok - ..."
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_MCP_CACHE=${QC_MCP_CACHE:-/var/cache/queryclaw_ext/mcp-everything}
bin=$QC_MCP_CACHE/node_modules/.bin/mcp-server-everything

if [ "${1:-}" = install ]; then
	[ -x "$bin" ] && exit 0
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "skip - the MCP server tests need node and npm (Debian's nodejs and npm)"
		exit 0
	fi
	mkdir -p "$QC_MCP_CACHE" &&
		timeout 300 npm install --no-audit --no-fund --prefix "$QC_MCP_CACHE" \
			@modelcontextprotocol/server-everything >"$QC_MCP_CACHE/install.log" 2>&1 ||
		echo "skip - npm could not install @modelcontextprotocol/server-everything (see $QC_MCP_CACHE/install.log)"
	exit 0
fi

QC_WORK=$1 QC_BINDIR=$2
if [ ! -x "$bin" ]; then
	echo "skip - @modelcontextprotocol/server-everything is not installed in $QC_MCP_CACHE: its MCP checks did not run"
	exit 0
fi
port=$(qc_free_port)
(cd "$QC_WORK" && PORT=$port exec node "$bin" streamableHttp) >"$QC_WORK/mcp-everything.log" 2>&1 &
echo $! >"$QC_WORK/mcp-everything.pid"
for _ in $(seq 100); do
	grep -q "listening" "$QC_WORK/mcp-everything.log" && break
	sleep 0.1
done
qc_check "the MCP server started on loopback" "$(grep -c listening "$QC_WORK/mcp-everything.log")" 1

# Each check runs in its own session: the policy lets the server's port
# through block_local, as the suite's does the fixture's.
mcp_sql() {
	qc_sql -c "SET queryclaw.local_allowlist = '127.0.0.1:$port'" -c "$1" 2>&1
}
mcp_sql "CREATE SERVER mcp_everything FOREIGN DATA WRAPPER queryclaw
	OPTIONS (url 'http://127.0.0.1:$port/mcp', protocol 'mcp', timeout '30s')" >/dev/null

qc_check "mcp_tools lists echo, get-sum, get-tiny-image and get-structured-content" \
	"$(mcp_sql "SELECT string_agg(name, ',' ORDER BY name) FROM queryclaw.mcp_tools('mcp_everything')
		WHERE name IN ('echo', 'get-sum', 'get-tiny-image', 'get-structured-content')")" \
	"echo,get-structured-content,get-sum,get-tiny-image"
qc_check "the input schemas are JSON Schema objects" \
	"$(mcp_sql "SELECT bool_and(input_schema->>'type' = 'object') FROM queryclaw.mcp_tools('mcp_everything')")" t
qc_check "echo" \
	"$(mcp_sql "SELECT queryclaw.mcp_call('mcp_everything', 'echo', '{\"message\": \"hello\"}')->>'text'")" \
	"Echo: hello"
qc_check "get-sum" \
	"$(mcp_sql "SELECT queryclaw.mcp_call('mcp_everything', 'get-sum', '{\"a\": 2, \"b\": 3}')->>'text'")" \
	"The sum of 2 and 3 is 5."
qc_check "get-structured-content returns structured content" \
	"$(mcp_sql "SELECT jsonb_typeof(queryclaw.mcp_call('mcp_everything', 'get-structured-content', '{\"location\": \"Chicago\"}')->'structured')")" \
	object
qc_check "get-tiny-image returns an image part" \
	"$(mcp_sql "SELECT count(*) FROM jsonb_array_elements(queryclaw.mcp_call('mcp_everything', 'get-tiny-image')->'content') c
		WHERE c->>'type' = 'image' AND c->>'mimeType' = 'image/png'")" 1
qc_check "a long-running operation streams its progress, then its result" \
	"$(mcp_sql "SELECT queryclaw.mcp_call('mcp_everything', 'trigger-long-running-operation', '{\"duration\": 1, \"steps\": 2}')->>'text' LIKE '%completed%'")" t
# an unknown tool: a JSON-RPC error (38000, the code in the detail), or a
# result marked isError, as the server's SDK answers it
unknown=$(mcp_sql "SELECT queryclaw.mcp_call('mcp_everything', 'no-such-tool')->>'is_error'")
case "$unknown" in
	true) unknown=refused ;;
	*"answered no-such-tool with an error"*"JSON-RPC error"*) unknown=refused ;;
esac
qc_check "an unknown tool is refused: an error, or a result marked isError" "$unknown" refused
qc_check "one audit row per JSON-RPC request, func mcp" \
	"$(mcp_sql "$(qc_sql_wait_for_audit)" >/dev/null; mcp_sql "SELECT count(*) >= 8 FROM queryclaw.audit_log WHERE func = 'mcp' AND detail->>'server' = 'mcp_everything'")" t
mcp_sql "DROP SERVER mcp_everything" >/dev/null
kill "$(cat "$QC_WORK/mcp-everything.pid")" 2>/dev/null
