/*-------------------------------------------------------------------------
 *
 * mcpfns.c
 *	  SQL entry points for MCP servers' tools: mcp_tools() and mcp_call()
 *	  (the protocol is mcp.c's).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "mcp.h"

PG_FUNCTION_INFO_V1(mcp_tools);
PG_FUNCTION_INFO_V1(mcp_call);

/*
 * mcp_tools(server name) returns table (name text, title text,
 *			description text, input_schema jsonb, output_schema jsonb)
 */
Datum
mcp_tools(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	foreach(lc, qc_mcp_tools(NameStr(*PG_GETARG_NAME(0))))
	{
		QcMcpTool  *t = lfirst(lc);
		Datum		values[5] = {0};
		bool		nulls[5] = {false, t->title == NULL, t->description == NULL,
		false, t->output_schema == NULL};

		values[0] = CStringGetTextDatum(t->name);
		if (t->title)
			values[1] = CStringGetTextDatum(t->title);
		if (t->description)
			values[2] = CStringGetTextDatum(t->description);
		values[3] = JsonbPGetDatum(t->input_schema);
		if (t->output_schema)
			values[4] = JsonbPGetDatum(t->output_schema);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * mcp_call(server name, tool text, arguments jsonb DEFAULT '{}')
 * returns jsonb
 */
Datum
mcp_call(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(qc_mcp_call(NameStr(*PG_GETARG_NAME(0)),
								  text_to_cstring(PG_GETARG_TEXT_PP(1)),
								  PG_GETARG_JSONB_P(2), NULL));
}
