/* queryclaw_ext 0.2 -> 0.3: every change to SQL objects since release 0.2 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.3'" to load this file. \quit

-- Release 0.2 (tag v0.2.0) is what users have installed; its scripts,
-- queryclaw_ext--0.1.sql and queryclaw_ext--0.1--0.2.sql, are never
-- changed again.  Every change to the extension's SQL objects from then on
-- goes here, and test/upgrade/ checks that a database updated from 0.1 and
-- one updated from 0.2 both end equal to a fresh install.  No object has
-- changed since 0.2 yet.

--
-- MCP servers' tools (docs/mcp.md): a queryclaw server with protocol 'mcp'
-- is an MCP server over Streamable HTTP; its tools are listed and called
-- under the server's policy, keys and limits, with USAGE on it.
--
CREATE FUNCTION queryclaw.mcp_tools(server name)
RETURNS TABLE (name text, title text, description text, input_schema jsonb,
               output_schema jsonb)
AS 'MODULE_PATHNAME', 'mcp_tools'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.mcp_tools(name) IS
'The tools an MCP server (a queryclaw server with protocol ''mcp'') offers: its tools/list, less what its tools option leaves out; needs USAGE on the server.';
REVOKE ALL ON FUNCTION queryclaw.mcp_tools(name) FROM PUBLIC;

CREATE FUNCTION queryclaw.mcp_call(server name, tool text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'mcp_call'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.mcp_call(name, text, jsonb) IS
'Call a tool of an MCP server: {content, structured, is_error, text}, text the text parts joined; needs USAGE on the server.';
REVOKE ALL ON FUNCTION queryclaw.mcp_call(name, text, jsonb) FROM PUBLIC;
