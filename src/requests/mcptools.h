/*-------------------------------------------------------------------------
 *
 * mcptools.h
 *	  An MCP server's tools offered to the model (mcptools.c): their
 *	  definitions for the request, and what a call of one tells the model.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_MCPTOOLS_H
#define QC_MCPTOOLS_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

/* One tool of an MCP server, as the model sees it. */
typedef struct QcMcpOffer
{
	const char *name;			/* server__tool, within the providers' rules */
	const char *server;
	const char *tool;			/* its name on the server */
	const char *schema;			/* the function definition, its input
								 * schema as the server sent it */
} QcMcpOffer;

/*
 * The tools "mcp:server" or "mcp:server/tool" offers (QcMcpOffer *), spec
 * being what follows "mcp:".  Raises as qc_mcp_tools() does, and 22023
 * for a tool the server does not offer or a name no provider accepts.
 */
extern List *qc_mcp_offers(const char *spec);

/*
 * Call the tool with args and return what the model is told: the text
 * parts, images and audio described by type and size (never their data),
 * resources by their uri, then the structured content as JSON.  A result
 * the server marks isError is raised (38000), for the model to read as an
 * error; audit_extra goes in the audit rows.
 */
extern char *qc_mcp_tool_text(const char *server, const char *tool,
							  Jsonb *args, const char *audit_extra);

#endif							/* QC_MCPTOOLS_H */
