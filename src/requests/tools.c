/*-------------------------------------------------------------------------
 *
 * tools.c
 *	  The tools a model may call: their JSON schemas, and running a call.
 *
 * A tool runs exactly the code of the SQL function it is named after, as
 * the calling role, so the policy, the limits and the
 * audit row are those of a direct call; its audit row's detail also names
 * the llm_chat_tools run, the round and the tool call id.  The role needs
 * EXECUTE on that function too: offering a tool never grants more than the
 * role could do by itself.
 *
 * Each call runs in an internal subtransaction, as a PL/pgSQL exception
 * block does, so that its failure (a refusal, a timeout, an HTTP error, bad
 * arguments, a tool that was not offered) is rolled back and handed to the
 * model as the tool's content: the model can recover, and the statement
 * goes on.  A query cancel or a termination is raised again at once.
 *
 * The audit row of a failed call is written inside that subtransaction, by
 * its owner (call.c), like that of a direct call.  While audit rows share the
 * caller's transaction, the rollback takes the row with it; once they are
 * written independently of it, the row stays, with no change here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "api.h"
#include "call.h"
#include "check.h"
#include "compat.h"
#include "content.h"
#include "guc.h"
#include "http.h"
#include "json.h"
#include "mcptools.h"
#include "proclookup.h"
#include "response.h"
#include "search.h"
#include "sqltool.h"
#include "subxact.h"
#include "tools.h"

struct QcTool;

/* What a tool's code gets besides its arguments. */
typedef struct ToolContext
{
	const struct QcTool *tool;	/* the tool called */
	char	   *audit_extra;	/* the run, round and call id */
	int			max_chars;		/* the effective max_chars for the call */
	QcFormat	format;			/* web_fetch's */
	bool		truncated;		/* set by the tool when it cut its result */
} ToolContext;

/* A tool run at once; or the two halves of one that makes an HTTP request. */
typedef char *(*ToolFunc) (JsonbContainer *args, ToolContext *ctx);
typedef QcCall *(*ToolSend) (JsonbContainer *args, ToolContext *ctx);
typedef char *(*ToolTake) (QcCall *call, ToolContext *ctx);

typedef struct QcTool
{
	const char *name;
	const char *function;		/* the SQL function; EXECUTE is required */
	ToolFunc	run;			/* or: */
	ToolSend	send;			/* the request, to send */
	ToolTake	take;			/* its response, as the model reads it */
	const char *schema;			/* the OpenAI function definition */
	const char *mcp_server;		/* an MCP server's tool: the server */
	const char *mcp_tool;		/* and the tool's name there */
} QcTool;

/* One tool call on its way (tools.h). */
struct QcToolRun
{
	const QcChat *chat;
	List	   *tools;
	int			round;
	const QcToolCall *tc;
	MemoryContext cxt;			/* the call's own memory, freed at its end */
	const QcTool *tool;
	ToolContext ctx;
	QcCall	   *request;		/* to send before qc_tool_finish() */
	bool		send_later;		/* sent by the caller, not by qc_tool_start() */
	char	   *text;			/* what the tool returned */
	QcToolResult *result;
};

/* A string argument the tool cannot do without. */
static char *
required_arg(JsonbContainer *args, const char *name)
{
	char	   *value = qc_jsonb_get_string(args, name);

	if (value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" is missing or not a string", name)));
	return value;
}

static QcCall *
send_web_fetch(JsonbContainer *args, ToolContext *ctx)
{
	char	   *format = qc_jsonb_get_string(args, "format");
	QcCall	   *call = qc_call_new("web_fetch", "GET", required_arg(args, "url"));

	ctx->format = qc_format_parse(format ? format : "text");
	call->max_chars = ctx->max_chars;
	call->audit_extra = ctx->audit_extra;
	return call;
}

static char *
take_web_fetch(QcCall *call, ToolContext *ctx)
{
	char	   *text = qc_fetch_result(call, ctx->format);

	if (text == NULL)
		qc_call_raise(call);
	qc_call_end(call);
	ctx->truncated = call->truncated;
	return text;
}

static QcCall *
send_api_call(JsonbContainer *args, ToolContext *ctx)
{
	char	   *method = qc_jsonb_get_string(args, "method");
	JsonbValue *headers = qc_jsonb_get(args, "headers");
	JsonbValue *body = qc_jsonb_get(args, "body");
	char	   *body_text = NULL;
	QcCall	   *call;

	if (headers != NULL &&
		(headers->type != jbvBinary || !qc_jsonb_is_object(headers->val.binary.data)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"headers\" must be a JSON object")));
	/* a body given as JSON rather than as a string is sent as JSON */
	if (body != NULL)
		body_text = body->type == jbvString ?
			pnstrdup(body->val.string.val, body->val.string.len) :
			qc_jsonb_value_text(body);

	call = qc_api_prepare("api_call", required_arg(args, "url"), method ? method : "GET",
						  headers ? JsonbValueToJsonb(headers) : NULL, body_text,
						  ctx->max_chars);
	call->audit_extra = ctx->audit_extra;
	return call;
}

static char *
take_api_call(QcCall *call, ToolContext *ctx)
{
	Jsonb	   *result;

	if (call->error_code != 0)
		qc_call_raise(call);
	result = qc_api_result(call);
	qc_call_end(call);
	ctx->truncated = call->truncated;
	/* the model has no use for the timing */
	result = DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(result),
												CStringGetTextDatum("elapsed_ms")));
	return JsonbToCString(NULL, &result->root, VARSIZE(result));
}

static char *
run_web_search(JsonbContainer *args, ToolContext *ctx)
{
	int64		n = 5;

	qc_jsonb_get_int64(args, "num_results", &n);
	n = Max(1, Min(n, 20));
	return qc_search_results_json(qc_search(required_arg(args, "query"), (int) n,
											ctx->audit_extra));
}

static char *
run_check_url(JsonbContainer *args, ToolContext *ctx)
{
	return qc_check_url_json(required_arg(args, "url"), ctx->audit_extra);
}

/* The database tools (sqltool.c); their results are capped like the others'. */
static char *
run_sql_query(JsonbContainer *args, ToolContext *ctx)
{
	return qc_sql_query(required_arg(args, "query"), ctx->max_chars, ctx->audit_extra);
}

static char *
run_list_tables(JsonbContainer *args, ToolContext *ctx)
{
	return qc_sql_list_tables(qc_jsonb_get_string(args, "schema"), ctx->max_chars,
							  ctx->audit_extra);
}

static char *
run_describe_table(JsonbContainer *args, ToolContext *ctx)
{
	return qc_sql_describe_table(required_arg(args, "table"), ctx->max_chars,
								 ctx->audit_extra);
}

/* A tool of an MCP server (mcptools.c); USAGE is checked at every request. */
static char *
run_mcp(JsonbContainer *args, ToolContext *ctx)
{
	Jsonb	   *arguments = qc_jsonb_parse(JsonbToCString(NULL, args, -1));

	return qc_mcp_tool_text(ctx->tool->mcp_server, ctx->tool->mcp_tool, arguments,
							ctx->audit_extra);
}

static const QcTool all_tools[] = {
	{"web_fetch", "queryclaw.web_fetch(text,text,integer,text)", NULL, send_web_fetch, take_web_fetch,
		"{\"type\": \"function\", \"function\": {\"name\": \"web_fetch\","
		" \"description\": \"Fetch a web page with HTTP GET and return its content as readable text."
		" The database's network policy applies: a refused URL returns an error.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"url\": {\"type\": \"string\", \"description\": \"The http:// or https:// URL.\"},"
		" \"format\": {\"type\": \"string\", \"enum\": [\"text\", \"article\", \"markdown\", \"metadata\", \"raw\", \"json\"],"
		" \"description\": \"text (default): the whole page as readable text; article: only the main content (fewest tokens);"
		" markdown: the main content with links; metadata: title, author, dates as JSON; raw: the body as is; json: the body, which must be JSON.\"}},"
		" \"required\": [\"url\"]}}}", NULL, NULL},
	{"api_call", "queryclaw.api_call(text,text,jsonb,text,integer)", NULL, send_api_call, take_api_call,
		"{\"type\": \"function\", \"function\": {\"name\": \"api_call\","
		" \"description\": \"Make an HTTP request to a REST API and return"
		" {status, ok, url, content_type, headers, body, truncated}; a 4xx or 5xx status is returned, not an error."
		" The database's network policy applies.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"url\": {\"type\": \"string\"},"
		" \"method\": {\"type\": \"string\", \"enum\": [\"GET\", \"POST\", \"PUT\", \"PATCH\", \"DELETE\", \"HEAD\"]},"
		" \"headers\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}},"
		" \"body\": {\"type\": \"string\", \"description\": \"The request body; JSON is sent as application/json.\"}},"
		" \"required\": [\"url\"]}}}", NULL, NULL},
	{"web_search", "queryclaw.web_search(text,integer)", run_web_search, NULL, NULL,
		"{\"type\": \"function\", \"function\": {\"name\": \"web_search\","
		" \"description\": \"Search the web and return a JSON array of results {rank, title, url, snippet}.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"query\": {\"type\": \"string\"},"
		" \"num_results\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 20,"
		" \"description\": \"How many results (default 5).\"}},"
		" \"required\": [\"query\"]}}}", NULL, NULL},
	{"check_url", "queryclaw.check_url(text)", run_check_url, NULL, NULL,
		"{\"type\": \"function\", \"function\": {\"name\": \"check_url\","
		" \"description\": \"Check, without sending a request, whether the database's network policy allows a URL;"
		" returns {allowed, reason, detail, hint, host, port, addresses}.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"url\": {\"type\": \"string\"}},"
		" \"required\": [\"url\"]}}}", NULL, NULL},
	{"sql_query", QC_SQL_QUERY_SIGNATURE, run_sql_query, NULL, NULL,
		"{\"type\": \"function\", \"function\": {\"name\": \"sql_query\","
		" \"description\": \"Run one read-only SELECT (or WITH ... SELECT) in the PostgreSQL database and return"
		" {rows: [{column: value}], row_count, truncated, note}. Only immutable and stable functions may be called;"
		" the result is capped in rows and characters, so select only what you need.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"query\": {\"type\": \"string\", \"description\": \"The SELECT statement, in PostgreSQL's SQL.\"}},"
		" \"required\": [\"query\"]}}}", NULL, NULL},
	{"list_tables", QC_SQL_QUERY_SIGNATURE, run_list_tables, NULL, NULL,
		"{\"type\": \"function\", \"function\": {\"name\": \"list_tables\","
		" \"description\": \"List the tables and views of the database you may read:"
		" {tables: [{schema, name, kind, estimated_rows, comment}]}.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"schema\": {\"type\": \"string\", \"description\": \"Only this schema (default: all).\"}}}}}", NULL, NULL},
	{"describe_table", QC_SQL_QUERY_SIGNATURE, run_describe_table, NULL, NULL,
		"{\"type\": \"function\", \"function\": {\"name\": \"describe_table\","
		" \"description\": \"Describe a table or view you may read: {table, kind, comment, columns: [{name, type, not_null, comment}]}.\","
		" \"parameters\": {\"type\": \"object\", \"properties\": {"
		"\"table\": {\"type\": \"string\", \"description\": \"The table's name, optionally schema-qualified.\"}},"
		" \"required\": [\"table\"]}}}", NULL, NULL},
};

void
qc_require_execute(const char *signature, const char *detail)
{
	Oid			fn = qc_proc_by_signature(signature);

	/* a function of a later release, before ALTER EXTENSION ... UPDATE */
	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s does not exist", signature),
				 errdetail("%s", detail),
				 errhint("The extension's SQL objects are older than its library: run ALTER EXTENSION queryclaw_ext UPDATE.")));
	if (!qc_proc_executable(fn, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", signature),
				 errdetail("%s", detail),
				 errhint("A superuser can grant EXECUTE on it.")));
}

static const QcTool *
find_tool(const char *name)
{
	for (int i = 0; i < lengthof(all_tools); i++)
		if (strcmp(all_tools[i].name, name) == 0)
			return &all_tools[i];
	return NULL;
}

/* The offered tool of that name, or NULL. */
static const QcTool *
find_offered(List *tools, const char *name)
{
	ListCell   *lc;

	foreach(lc, tools)
		if (strcmp(((const QcTool *) lfirst(lc))->name, name) == 0)
			return lfirst(lc);
	return NULL;
}

/*
 * Add an MCP server's tools to those offered; one of the same name as
 * another is refused (22023), naming both, unless it is the same tool.
 */
static List *
add_mcp_tools(List *tools, const char *spec)
{
	ListCell   *lc;

	qc_require_execute("queryclaw.mcp_call(name,text,jsonb)",
					   "The tools of MCP servers run this function, so offering them needs EXECUTE on it.");
	foreach(lc, qc_mcp_offers(spec))
	{
		const QcMcpOffer *o = lfirst(lc);
		const QcTool *other = find_offered(tools, o->name);
		QcTool	   *tool;

		if (other != NULL && other->mcp_server != NULL &&
			strcmp(other->mcp_server, o->server) == 0 && strcmp(other->mcp_tool, o->tool) == 0)
			continue;
		if (other != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("two tools offered would both be named \"%s\"", o->name),
					 errdetail("Tool %s of MCP server %s and %s%s%s%s.", o->tool, o->server,
							   other->mcp_server ? "tool " : "the built-in tool ",
							   other->mcp_server ? other->mcp_tool : other->name,
							   other->mcp_server ? " of MCP server " : "",
							   other->mcp_server ? other->mcp_server : ""),
					 errhint("Offer only one of them, with mcp:server/tool.")));
		tool = palloc0(sizeof(QcTool));
		tool->name = o->name;
		tool->function = "queryclaw.mcp_call(name,text,jsonb)";
		tool->run = run_mcp;
		tool->schema = o->schema;
		tool->mcp_server = o->server;
		tool->mcp_tool = o->tool;
		tools = lappend(tools, tool);
	}
	return tools;
}

List *
qc_tools_parse(ArrayType *names)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *tools = NIL;

	deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
		const QcTool *tool;

		if (name != NULL && strncmp(name, "mcp:", 4) == 0)
		{
			tools = add_mcp_tools(tools, name + 4);
			continue;
		}
		tool = name ? find_tool(name) : NULL;
		if (tool == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 name ? errmsg("unknown tool \"%s\"", name) : errmsg("tools cannot contain NULL"),
					 errhint("The tools are web_fetch, api_call, web_search, check_url, sql_query, list_tables and describe_table, and an MCP server's as mcp:server or mcp:server/tool.")));
		if (strcmp(tool->name, "web_search") == 0)
			qc_search_require_url(true);
		qc_require_execute(tool->function,
						   psprintf("The tool \"%s\" runs this function, so using it needs EXECUTE on it.",
									tool->name));
		if (find_offered(tools, tool->name) != NULL && !list_member_ptr(tools, tool))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("two tools offered would both be named \"%s\"", tool->name),
					 errdetail("The built-in tool %s and a tool of an MCP server.", tool->name),
					 errhint("Offer only one of them, with mcp:server/tool.")));
		tools = list_append_unique_ptr(tools, (void *) tool);
	}
	return tools;
}

char *
qc_tools_json(List *tools)
{
	StringInfoData s;
	ListCell   *lc;

	if (tools == NIL)
		return NULL;
	initStringInfo(&s);
	appendStringInfoChar(&s, '[');
	foreach(lc, tools)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&s, ", ");
		appendStringInfoString(&s, ((const QcTool *) lfirst(lc))->schema);
	}
	appendStringInfoChar(&s, ']');
	return s.data;
}

/*
 * Start the call: run a tool that makes no HTTP request, or make the
 * request of one that does.  Raises whatever the tool raises.
 */
static void
start(void *arg)
{
	QcToolRun  *run = arg;
	const QcToolCall *tc = run->tc;
	List	   *tools = run->tools;
	ToolContext *ctx = &run->ctx;
	const QcTool *tool = find_offered(tools, tc->name);
	const char *text = tc->arguments[0] ? tc->arguments : "{}";
	Jsonb	   *args = qc_jsonb_parse(text);
	StringInfoData extra;

	if (tool == NULL)
	{
		StringInfoData offered;
		ListCell   *lc;

		initStringInfo(&offered);
		foreach(lc, tools)
			appendStringInfo(&offered, "%s%s", foreach_current_index(lc) ? ", " : "",
							 ((const QcTool *) lfirst(lc))->name);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tool \"%s\" is not available", tc->name),
				 errdetail("The tools offered are: %s.", offered.data)));
	}
	if (args == NULL || !JB_ROOT_IS_OBJECT(args))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("arguments of tool \"%s\" are not a JSON object", tc->name),
				 errdetail("The arguments were: %s", text)));

	initStringInfo(&extra);
	appendStringInfo(&extra, "\"llm_run\": \"%s\", \"round\": %d, \"tool_call_id\": ",
					 run->chat->run_id, run->round);
	escape_json(&extra, tc->id);
	if (run->chat->audit_extra != NULL)
		appendStringInfo(&extra, ", %s", run->chat->audit_extra);
	ctx->audit_extra = extra.data;
	ctx->max_chars = Min(qc_max_chars, qc_llm_tool_max_chars);
	run->tool = tool;
	ctx->tool = tool;
	if (tool->run != NULL)
	{
		run->text = tool->run(&args->root, ctx);
		return;
	}
	run->request = tool->send(&args->root, ctx);
	if (!run->send_later)
	{
		(void) qc_call_run(run->request);
		run->text = tool->take(run->request, ctx);
	}
}

/* Read the response of the request a tool made. */
static void
take(void *arg)
{
	QcToolRun  *run = arg;

	run->text = run->tool->take(run->request, &run->ctx);
}

/*
 * Cap the result at queryclaw.llm_tool_max_chars, saying so when cut.  It
 * goes to the model and into the result object: only valid text.
 */
static void
set_content(QcToolResult *r, char *text, bool truncated)
{
	text = qc_valid_text(text);
	r->truncated = qc_clip_chars(text, qc_llm_tool_max_chars) || truncated;
	r->chars = qc_count_chars(text);
	r->content = r->truncated ?
		psprintf("%s\n[truncated: only the first %d characters are shown]", text, r->chars) :
		text;
}

/* What the model is told about a failure: the error, as psql shows it. */
static char *
error_content(const ErrorData *e)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "ERROR: %s", e->message);
	if (e->detail)
		appendStringInfo(&s, "\nDETAIL: %s", e->detail);
	if (e->hint)
		appendStringInfo(&s, "\nHINT: %s", e->hint);
	return s.data;
}

/*
 * A step of the call in a subtransaction, in the call's own memory: what
 * the tool returned, or its failure, becomes the result, in the caller's.
 */
static void
step(QcToolRun *run, void (*fn) (void *arg))
{
	MemoryContext callercxt = MemoryContextSwitchTo(run->cxt);
	ErrorData  *edata = qc_subxact_run(fn, run);

	MemoryContextSwitchTo(callercxt);
	if (edata != NULL)
	{
		run->result = palloc0(sizeof(QcToolResult));
		run->result->ok = false;
		run->result->error = qc_valid_text(pstrdup(edata->message));
		set_content(run->result, error_content(edata), false);
		run->request = NULL;
	}
	else if (run->text != NULL)
	{
		run->result = palloc0(sizeof(QcToolResult));
		run->result->ok = true;
		set_content(run->result, pstrdup(run->text), run->ctx.truncated);
		run->request = NULL;
	}
}

QcToolRun *
qc_tool_start(const QcChat *chat, List *tools, int round, const QcToolCall *tc,
			  bool send_later)
{
	QcToolRun  *run = palloc0(sizeof(QcToolRun));

	run->chat = chat;
	run->tools = tools;
	run->round = round;
	run->tc = tc;
	run->send_later = send_later;
	run->cxt = AllocSetContextCreate(CurrentMemoryContext, "queryclaw tool call",
									 ALLOCSET_DEFAULT_SIZES);
	step(run, start);
	return run;
}

QcCall *
qc_tool_request(const QcToolRun *run)
{
	return run->request;
}

QcToolResult *
qc_tool_finish(QcToolRun *run)
{
	if (run->result == NULL)
		step(run, take);
	return run->result;
}

void
qc_tool_free(QcToolRun *run)
{
	MemoryContextDelete(run->cxt);
	pfree(run);
}

QcToolResult *
qc_tool_not_run(void)
{
	QcToolResult *r = palloc0(sizeof(QcToolResult));

	r->ok = false;
	r->error = psprintf("not run: more than %d tool calls in one reply",
						qc_llm_max_tool_calls);
	set_content(r, psprintf("ERROR: %s\nHINT: queryclaw.llm_max_tool_calls allows %d tool calls in one reply; make the others in your next reply.",
							r->error, qc_llm_max_tool_calls),
				false);
	return r;
}
