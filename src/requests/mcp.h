/*-------------------------------------------------------------------------
 *
 * mcp.h
 *	  The client side of the Model Context Protocol over Streamable HTTP
 *	  (mcp.c): the tools of an MCP server (a queryclaw server with
 *	  protocol 'mcp'), listed and called, each JSON-RPC request a call like
 *	  any other (call.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_MCP_H
#define QC_MCP_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

/* A tool as the server lists it. */
typedef struct QcMcpTool
{
	const char *name;
	const char *title;			/* NULL when the server gave none */
	const char *description;	/* NULL when the server gave none */
	Jsonb	   *input_schema;	/* as sent, never NULL */
	Jsonb	   *output_schema;	/* NULL when the server gave none */
} QcMcpTool;

/*
 * The tools server offers (QcMcpTool *): its tools/list, every page, less
 * what its tools option leaves out; kept by the backend for the server's
 * tools_ttl, for the current role.  Raises as qc_server_mcp() does (42704,
 * 22023, 42501), and 38000 for what the server answers wrong.
 */
extern List *qc_mcp_tools(const char *server);

/*
 * tools/call of tool with arguments (a JSON object, else 22023) on server:
 * {content, structured, is_error, text}, text the text parts joined.  A
 * tool the server's tools option does not offer is refused (42501).
 * audit_extra (or NULL) goes in the audit rows' detail.
 */
extern Jsonb *qc_mcp_call(const char *server, const char *tool, Jsonb *arguments,
						  const char *audit_extra);

#endif							/* QC_MCP_H */
