/*-------------------------------------------------------------------------
 *
 * mcp.c
 *	  The client side of the Model Context Protocol over Streamable HTTP
 *	  (revisions 2025-06-18 and 2025-11-25): initialize, tools/list and
 *	  tools/call, each JSON-RPC request one POST, one call (call.h).
 *
 * Each POST is made under the MCP server by name (qc_server_mcp: USAGE is
 * checked again at every request), so the whole policy applies to its url
 * and every hop, with the role's mapping as its headers, the server's
 * limits, and an audit row whose detail names the method and the tool.
 *
 * A backend keeps, per server and role, the session the server gave
 * (Mcp-Session-Id), the protocol revision agreed and the tool list, for
 * the server's tools_ttl.  A 404 to a request that carried a session is
 * answered by one new initialize and the request sent again.
 *
 * The reply is application/json (the response) or text/event-stream: the
 * events before the response are read in order; notifications are
 * dropped, and each request the server makes is answered (ping with its
 * empty result; any other with method-not-found, as the client offers none
 * of the capabilities it would need) on a POST of its own.  It is answered
 * while the stream is still open, as the server may wait for the answer
 * before it sends its response: the run's watch hook reads the events
 * that have arrived every QC_TRANSPORT_WATCH_MS.  A request the watch did
 * not see (the stream ended first) is answered once it has ended.  A
 * stream that ends without the response is resumed with a GET and
 * Last-Event-ID, when its events have ids.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "call.h"
#include "http.h"
#include "json.h"
#include "latchwait.h"
#include "mcp.h"
#include "servers.h"

/* The revision asked for first, and the ones accepted. */
#define MCP_LATEST "2025-11-25"
#define MCP_OLDEST "2025-06-18"

/*
 * Most times in a row a stream that ended before its response is resumed
 * to no avail (the resumed stream brought no event with an id).
 */
#define MCP_MAX_RESUMES 3

/* The retry field read as at most this (the call's timeout decides). */
#define MCP_MAX_RETRY_MS 3600000

/* Most tools/list pages read (a server that never stops paging). */
#define MCP_MAX_PAGES 100

/* JSON-RPC's "method not found" */
#define JSONRPC_METHOD_NOT_FOUND (-32601)

/* What a backend keeps of one server for one role. */
typedef struct McpSession
{
	Oid			serverid;
	Oid			roleid;
	char	   *url;			/* the server's url when it was begun */
	bool		initialized;
	char	   *session_id;		/* Mcp-Session-Id, or NULL */
	char	   *version;		/* the revision agreed */
	char	   *tools;			/* tools/list's tools, every page, as JSON */
	TimestampTz tools_at;
} McpSession;

/* One JSON-RPC exchange. */
typedef struct McpExchange
{
	const char *server;
	const char *method;
	const char *tool;			/* tools/call's, or NULL */
	int64		id;				/* 0: a notification or a response */
	List	   *server_requests;	/* ids (JSON text) to refuse */
	const char *extra;			/* more for the audit rows, or NULL */
	char	   *last_event_id;	/* the stream's last event id, or NULL */
	int			retry_ms;		/* the stream's retry field, or 0 */
	TimestampTz began;			/* when its first POST was sent */
	McpSession *session;		/* while the reply streams: its session, */
	QcCall	   *call;			/* the call it comes on, */
	size_t		seen;			/* how much of it watch_stream read, */
	List	   *answered;		/* and the ids (JSON text) it answered */
} McpExchange;

static QcCall *post(McpExchange *x, McpSession *s, const char *body);
static Jsonb *read_reply(McpExchange *x, McpSession *s, QcCall **callp);
static bool watch_stream(void *arg);
static bool never_abandoned(QcCall *call, void *arg);

static MemoryContext mcp_context = NULL;
static List *sessions = NIL;
static int64 next_id = 1;

/* The role's session with the server: a new one if its url changed. */
static McpSession *
session_for(const QcServerUse *use)
{
	ListCell   *lc;
	McpSession *s = NULL;
	MemoryContext old;

	if (mcp_context == NULL)
		mcp_context = AllocSetContextCreate(TopMemoryContext, "queryclaw mcp",
											ALLOCSET_SMALL_SIZES);
	foreach(lc, sessions)
	{
		McpSession *each = lfirst(lc);

		if (each->serverid == use->serverid && each->roleid == GetUserId())
			s = each;
	}
	if (s != NULL && strcmp(s->url, use->opts.url) == 0)
		return s;
	old = MemoryContextSwitchTo(mcp_context);
	if (s == NULL)
	{
		s = palloc0(sizeof(McpSession));
		s->serverid = use->serverid;
		s->roleid = GetUserId();
		sessions = lappend(sessions, s);
	}
	else
	{
		pfree(s->url);
		s->session_id = s->version = NULL;
		s->tools = NULL;
		s->initialized = false;
	}
	s->url = pstrdup(use->opts.url);
	MemoryContextSwitchTo(old);
	return s;
}

static void
session_forget(McpSession *s)
{
	if (s->session_id)
		pfree(s->session_id);
	if (s->version)
		pfree(s->version);
	s->session_id = s->version = NULL;
	s->initialized = false;
}

/* The value of header name (lower case) in a raw header block, or NULL. */
static char *
header_value(const char *block, const char *name)
{
	size_t		len = strlen(name);
	const char *line = block;

	while (line != NULL && *line)
	{
		size_t		end = strcspn(line, "\r\n");

		if (end > len && line[len] == ':' && pg_strncasecmp(line, name, len) == 0)
		{
			const char *v = line + len + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			end -= v - line;
			while (end > 0 && (v[end - 1] == ' ' || v[end - 1] == '\t'))
				end--;
			return pnstrdup(v, end);
		}
		line += end;
		while (*line == '\r' || *line == '\n')
			line++;
	}
	return NULL;
}

/* Visible ASCII only (0x21 to 0x7E), as a session id must be. */
static bool
visible_ascii(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if ((unsigned char) *s < 0x21 || (unsigned char) *s > 0x7e)
			return false;
	return true;
}

static void
fail(QcCall *call, const char *message, const char *detail)
{
	qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 message, detail, NULL);
}

/*
 * The POST of body (or, body NULL, the GET that resumes x's stream), under
 * the server, with the session's headers.
 */
static QcCall *
post(McpExchange *x, McpSession *s, const char *body)
{
	QcServerUse *use = qc_server_mcp(x->server);
	QcCall	   *call = qc_call_new("mcp", body ? "POST" : "GET", use->opts.url);
	StringInfoData extra;

	call->server = use;
	if (body != NULL)
		call->headers = qc_http_add_header(NIL, "Content-Type", "application/json");
	call->headers = qc_http_add_header(call->headers, "Accept", body ?
									   "application/json, text/event-stream" :
									   "text/event-stream");
	if (body == NULL)
		call->headers = qc_http_add_header(call->headers, "Last-Event-ID", x->last_event_id);
	if (s->session_id != NULL)
		call->headers = qc_http_add_header(call->headers, "Mcp-Session-Id", s->session_id);
	if (s->initialized)
		call->headers = qc_http_add_header(call->headers, "MCP-Protocol-Version", s->version);
	call->body = body;
	call->body_len = body ? strlen(body) : 0;
	initStringInfo(&extra);
	appendStringInfoString(&extra, "\"method\": ");
	qc_json_append_string(&extra, x->method);
	if (x->tool != NULL)
	{
		appendStringInfoString(&extra, ", \"tool\": ");
		qc_json_append_string(&extra, x->tool);
	}
	if (body == NULL)
		appendStringInfoString(&extra, ", \"resumed\": true");
	if (x->extra != NULL)
		appendStringInfo(&extra, ", %s", x->extra);
	call->audit_extra = extra.data;
	if (x->id == 0)
		qc_call_execute(call);
	else
	{
		/* a reply that may stream: its server's requests answered as they come */
		static const QcCallWatch watch = {watch_stream, never_abandoned};

		if (x->began == 0)
			x->began = GetCurrentTimestamp();
		x->session = s;
		x->call = call;
		x->seen = 0;
		if (!qc_call_run_one_watched(call, &watch, x))
			qc_call_raise(call);
	}
	return call;
}

/*
 * When msg is a request of the server: the answer it gets (ping its empty
 * result, any other method-not-found), with its id (JSON text) in *id.
 */
static char *
answer_to(Jsonb *msg, char **id)
{
	JsonbValue *idv = qc_jsonb_get(&msg->root, "id");
	char	   *method = qc_jsonb_get_string(&msg->root, "method");

	if (idv == NULL || method == NULL)
		return NULL;
	*id = qc_jsonb_value_text(idv);
	if (strcmp(method, "ping") == 0)
		return psprintf("{\"jsonrpc\": \"2.0\", \"id\": %s, \"result\": {}}", *id);
	return psprintf("{\"jsonrpc\": \"2.0\", \"id\": %s, \"error\": {\"code\": %d, \"message\": \"Method not found\"}}",
					*id, JSONRPC_METHOD_NOT_FOUND);
}

/*
 * One message of the reply: the response to x (returned), a request of
 * the server (its answer remembered, unless the watch sent it already), or
 * a notification (dropped).
 */
static Jsonb *
take_message(McpExchange *x, QcCall *call, const char *text)
{
	Jsonb	   *msg = qc_jsonb_parse(text);
	char	   *id;
	char	   *answer;
	int64		n;

	if (msg == NULL || !qc_jsonb_is_object(&msg->root))
		fail(call, psprintf("MCP server %s sent a message that is not JSON-RPC", x->server),
			 psprintf("In reply to %s.", x->method));
	if (qc_jsonb_get(&msg->root, "method") != NULL)
	{
		if ((answer = answer_to(msg, &id)) != NULL &&
			!list_member(x->answered, makeString(id)))
			x->server_requests = lappend(x->server_requests, answer);
		return NULL;
	}
	if (qc_jsonb_get_int64(&msg->root, "id", &n) && n == x->id)
		return msg;
	return NULL;
}

/*
 * The next event of the stream body[0..len) from *pos, its data lines
 * joined in data: true when a blank line ended one, false once the lines
 * run out (whole: the body is complete, and its end ends a line; else a
 * line is read only once its end has arrived).  The id and retry fields
 * are kept on x.
 */
static bool
next_event(McpExchange *x, const char *body, size_t len, size_t *pos,
		   StringInfo data, bool whole)
{
	while (*pos < len)
	{
		const char *line = body + *pos;
		size_t		n = 0;

		while (*pos + n < len && line[n] != '\r' && line[n] != '\n')
			n++;
		if (!whole && (*pos + n == len || (line[n] == '\r' && *pos + n + 1 == len)))
			return false;
		*pos += n + (*pos + n < len);
		if (*pos < len && line[n] == '\r' && body[*pos] == '\n')
			(*pos)++;
		if (n == 0 && data->len > 0)
			return true;		/* a blank line dispatches the event */
		else if (n >= 3 && strncmp(line, "id:", 3) == 0)
			x->last_event_id = pnstrdup(line + 3 + (line[3] == ' '),
										n - 3 - (line[3] == ' '));
		else if (n >= 6 && strncmp(line, "retry:", 6) == 0)
			x->retry_ms = Max(0, Min(strtol(line + 6, NULL, 10), MCP_MAX_RETRY_MS));
		else if (n >= 5 && strncmp(line, "data:", 5) == 0)
		{
			const char *v = line + 5 + (line[5] == ' ');

			if (data->len > 0)
				appendStringInfoChar(data, '\n');
			appendBinaryStringInfo(data, v, n - (v - line));
		}
	}
	return false;
}

/* The events of a text/event-stream body, until x's response. */
static Jsonb *
read_stream(McpExchange *x, QcCall *call, const char *body)
{
	StringInfoData data;
	size_t		pos = 0;
	size_t		len = strlen(body);
	Jsonb	   *response = NULL;

	initStringInfo(&data);
	while (response == NULL && next_event(x, body, len, &pos, &data, true))
	{
		response = take_message(x, call, data.data);
		resetStringInfo(&data);
	}
	return response;
}

/* Send the answer to a request of the server. */
static void
send_answer(McpExchange *x, McpSession *s, const char *answer)
{
	McpExchange reply = {.server = x->server, .method = "response", .extra = x->extra};
	QcCall	   *call = post(&reply, s, answer);

	(void) read_reply(&reply, s, &call);
	qc_call_end(call);
}

static bool
is_ascii(const char *s)
{
	for (; *s; s++)
		if (IS_HIGHBIT_SET(*s))
			return false;
	return true;
}

/*
 * The transport's watch of x's call while its reply arrives: each request
 * of the server whose event has arrived whole is answered now, from a run
 * of its own inside this one.  Only in a session begun (the answer needs
 * its id), where a run may nest, and for events in ASCII (the bytes are
 * not yet in the database encoding): a request left out is answered once
 * the stream has ended, as one that came too late for the watch is.
 */
static bool
watch_stream(void *arg)
{
	McpExchange *x = arg;
	const char *head;
	size_t		len;
	const char *body = qc_http_received(x->call, &len, &head);
	char	   *type;
	StringInfoData data;
	size_t		start = x->seen;

	if (body == NULL || !x->session->initialized || !qc_http_can_nest())
		return false;
	type = header_value(head, "content-type");
	if (type == NULL || pg_strncasecmp(type, "text/event-stream", 17) != 0)
		return false;
	initStringInfo(&data);
	while (next_event(x, body, len, &x->seen, &data, false))
	{
		Jsonb	   *msg = is_ascii(data.data) ? qc_jsonb_parse(data.data) : NULL;
		char	   *answer;
		char	   *id;

		if (msg != NULL && qc_jsonb_is_object(&msg->root) &&
			(answer = answer_to(msg, &id)) != NULL)
		{
			send_answer(x, x->session, answer);
			x->answered = lappend(x->answered, makeString(id));
		}
		resetStringInfo(&data);
		start = x->seen;
	}
	x->seen = start;			/* an event not whole yet is read again */
	pfree(data.data);
	pfree(type);
	return false;
}

static bool
never_abandoned(QcCall *call, void *arg)
{
	return false;
}

/* The body of a reply in the database encoding; raises unless 2xx. */
static const char *
reply_text(McpExchange *x, QcCall *call)
{
	const char *text = qc_call_api_reply(call, psprintf("MCP server %s", x->server),
										 psprintf("The key the server needs goes in the headers option of the role's user mapping for server %s.",
												  quote_identifier(x->server)),
										 "");

	if (x->id != 0 && call->response_cut)
		fail(call, psprintf("MCP server %s sent a reply to %s larger than queryclaw.max_bytes", x->server,
							x->tool ? x->tool : x->method),
			 psprintf("The reply was cut at %zu bytes.", call->max_bytes));
	return text;
}

static bool
is_event_stream(const QcCall *call)
{
	return call->content_type != NULL &&
		pg_strncasecmp(call->content_type, "text/event-stream", 17) == 0;
}

/*
 * May x's stream be resumed once more, after its retry: within the call's
 * timeout (0: none) from x's first POST?
 */
static bool
time_to_resume(McpExchange *x, const QcCall *call)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(x->began, call->timeout_ms);

	return call->timeout_ms <= 0 ||
		TimestampDifferenceExceeds(GetCurrentTimestamp(), deadline, x->retry_ms);
}

/*
 * The response to x, as the reply's content type says.  A stream that
 * ended before it, its events numbered, is resumed as the spec says: a GET
 * with Last-Event-ID after the stream's retry, each a call of its own
 * (*callp, the one the response came on).  A server may close the
 * connection of a stream that goes on, to be polled so (2025-11-25): a
 * resumption that brought events is not held against MCP_MAX_RESUMES, and
 * the call's timeout bounds them all.
 */
static Jsonb *
read_reply(McpExchange *x, McpSession *s, QcCall **callp)
{
	const char *text = reply_text(x, *callp);
	Jsonb	   *response;
	int			fruitless = 0;

	if (x->id == 0)
		return NULL;
	if (!is_event_stream(*callp))
		return take_message(x, *callp, text);
	response = read_stream(x, *callp, text);
	while (response == NULL && x->last_event_id != NULL &&
		   fruitless < MCP_MAX_RESUMES && time_to_resume(x, *callp))
	{
		const char *from = x->last_event_id;

		qc_call_end(*callp);
		if (x->retry_ms > 0)
			qc_latch_sleep(x->retry_ms, QC_WAIT_RETRY);
		*callp = post(x, s, NULL);
		text = reply_text(x, *callp);
		if (!is_event_stream(*callp))
			break;
		response = read_stream(x, *callp, text);
		fruitless = strcmp(x->last_event_id, from) == 0 ? fruitless + 1 : 0;
	}
	if (response == NULL)
		fail(*callp, psprintf("MCP server %s sent no response to %s", x->server, x->method),
			 x->last_event_id ?
			 "The stream ended before the response, and resuming it did not bring the response in time." :
			 "The stream ended before the response, and its events have no ids to resume it from.");
	return response;
}

/* The response's result, or the JSON-RPC error raised (38000). */
static JsonbContainer *
result_of(McpExchange *x, QcCall *call, Jsonb *response)
{
	JsonbContainer *error = qc_jsonb_get_object(&response->root, "error");
	JsonbContainer *result;
	int64		code = 0;

	if (error != NULL)
	{
		char	   *message = qc_jsonb_get_string(error, "message");

		(void) qc_jsonb_get_int64(error, "code", &code);
		fail(call, psprintf("MCP server %s answered %s with an error", x->server,
							x->tool ? x->tool : x->method),
			 psprintf("JSON-RPC error " INT64_FORMAT ": %s", code,
					  message ? message : "(no message)"));
	}
	result = qc_jsonb_get_object(&response->root, "result");
	if (result == NULL)
		fail(call, psprintf("MCP server %s sent a response to %s without a result", x->server, x->method),
			 NULL);
	return result;
}

/* Answer each request the server made that the watch did not answer. */
static void
answer_server_requests(McpExchange *x, McpSession *s)
{
	ListCell   *lc;

	foreach(lc, x->server_requests)
		send_answer(x, s, lfirst(lc));
}

static char *
request_body(McpExchange *x, const char *params)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"jsonrpc\": \"2.0\", ");
	if (x->id != 0)
		appendStringInfo(&b, "\"id\": " INT64_FORMAT ", ", x->id);
	appendStringInfoString(&b, "\"method\": ");
	qc_json_append_string(&b, x->method);
	if (params != NULL)
		appendStringInfo(&b, ", \"params\": %s", params);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/* initialize, then notifications/initialized: the session begins. */
static void
initialize(const char *server, McpSession *s, const char *extra)
{
	McpExchange x = {.server = server, .method = "initialize", .id = next_id++, .extra = extra};
	McpExchange note = {.server = server, .method = "notifications/initialized", .extra = extra};
	QcCall	   *call;
	char	   *version;
	char	   *id;

	session_forget(s);
	call = post(&x, s,
				request_body(&x, "{\"protocolVersion\": \"" MCP_LATEST "\", \"capabilities\": {}, "
							 "\"clientInfo\": {\"name\": \"queryclaw_ext\", \"version\": \"0.3\"}}"));
	version = qc_jsonb_get_string(result_of(&x, call, read_reply(&x, s, &call)), "protocolVersion");
	if (version == NULL || (strcmp(version, MCP_LATEST) != 0 && strcmp(version, MCP_OLDEST) != 0))
		qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
					 psprintf("MCP server %s speaks another protocol revision", server),
					 psprintf("It answered initialize with revision %s.", version ? version : "(none)"),
					 "queryclaw_ext speaks revisions " MCP_OLDEST " and " MCP_LATEST " of the Model Context Protocol.");
	id = header_value(call->response_headers, "mcp-session-id");
	if (id != NULL && !visible_ascii(id))
		fail(call, psprintf("MCP server %s sent an invalid session id", server),
			 "A session id is one or more visible ASCII characters.");
	qc_call_end(call);
	s->session_id = id ? MemoryContextStrdup(mcp_context, id) : NULL;
	s->version = MemoryContextStrdup(mcp_context, version);
	s->initialized = true;
	answer_server_requests(&x, s);
	call = post(&note, s, request_body(&note, NULL));
	(void) read_reply(&note, s, &call);
	qc_call_end(call);
}

/*
 * method with params (JSON text) on server: its result, in a session begun
 * as needed, and begun again once if the server forgot it.
 */
static JsonbContainer *
request(const char *server, const char *method, const char *tool, const char *params,
		const char *extra)
{
	McpSession *s = session_for(qc_server_mcp(server));
	McpExchange x = {.server = server, .method = method, .tool = tool, .extra = extra};
	QcCall	   *call;
	Jsonb	   *response;
	JsonbContainer *result;

	if (!s->initialized)
		initialize(server, s, extra);
	x.id = next_id++;
	call = post(&x, s, request_body(&x, params));
	if (call->status == 404 && s->session_id != NULL)
	{
		qc_call_set_failure(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
							"HTTP status 404: the MCP session has ended, a new one is begun",
							NULL, NULL);
		qc_call_end(call);
		initialize(server, s, extra);
		x.id = next_id++;
		call = post(&x, s, request_body(&x, params));
	}
	response = read_reply(&x, s, &call);
	result = result_of(&x, call, response);
	qc_call_end(call);
	answer_server_requests(&x, s);
	return result;
}

/* Every page of tools/list, as one JSON array. */
static char *
list_all(const char *server)
{
	StringInfoData all;
	char	   *cursor = NULL;
	int			pages = 0;

	initStringInfo(&all);
	appendStringInfoChar(&all, '[');
	do
	{
		StringInfoData params;
		JsonbContainer *result;
		JsonbContainer *tools;
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		initStringInfo(&params);
		appendStringInfoString(&params, "{");
		if (cursor != NULL)
		{
			appendStringInfoString(&params, "\"cursor\": ");
			qc_json_append_string(&params, cursor);
		}
		appendStringInfoChar(&params, '}');
		result = request(server, "tools/list", NULL, params.data, NULL);
		tools = qc_jsonb_get_array(result, "tools");
		if (tools == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("MCP server %s answered tools/list without a tools array", server)));
		it = JsonbIteratorInit(tools);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				if (all.len > 1)
					appendStringInfoString(&all, ", ");
				appendStringInfoString(&all, qc_jsonb_value_text(&v));
			}
		cursor = qc_jsonb_get_string(result, "nextCursor");
	} while (cursor != NULL && ++pages < MCP_MAX_PAGES);
	appendStringInfoChar(&all, ']');
	return all.data;
}

static Jsonb *
member_jsonb(JsonbContainer *c, const char *key)
{
	JsonbValue *v = qc_jsonb_get(c, key);

	return v ? JsonbValueToJsonb(v) : NULL;
}

static QcMcpTool *
tool_of(JsonbContainer *c)
{
	QcMcpTool  *t = palloc0(sizeof(QcMcpTool));

	t->name = qc_jsonb_get_string(c, "name");
	t->title = qc_jsonb_get_string(c, "title");
	t->description = qc_jsonb_get_string(c, "description");
	t->input_schema = member_jsonb(c, "inputSchema");
	t->output_schema = member_jsonb(c, "outputSchema");
	if (t->input_schema == NULL)
		t->input_schema = qc_jsonb_parse("{\"type\": \"object\"}");
	return t;
}

List *
qc_mcp_tools(const char *server)
{
	QcServerUse *use = qc_server_mcp(server);
	McpSession *s = session_for(use);
	TimestampTz now = GetCurrentTimestamp();
	List	   *tools = NIL;
	Jsonb	   *all;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (s->tools == NULL ||
		TimestampDifferenceExceeds(s->tools_at, now, use->opts.tools_ttl_ms))
	{
		char	   *listed = list_all(server);

		if (s->tools)
			pfree(s->tools);
		s->tools = MemoryContextStrdup(mcp_context, listed);
		s->tools_at = now;
	}
	all = qc_jsonb_parse(s->tools);
	it = JsonbIteratorInit(&all->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		QcMcpTool  *t;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		t = tool_of(v.val.binary.data);
		if (t->name != NULL && qc_server_offers_tool(use->opts.tools, t->name))
			tools = lappend(tools, t);
	}
	return tools;
}

/* The text parts of a tools/call result's content, joined. */
static char *
joined_text(JsonbContainer *content)
{
	StringInfoData text;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	initStringInfo(&text);
	if (content == NULL)
		return text.data;
	it = JsonbIteratorInit(content);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *type;
		char	   *part;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		type = qc_jsonb_get_string(v.val.binary.data, "type");
		part = qc_jsonb_get_string(v.val.binary.data, "text");
		if (type == NULL || strcmp(type, "text") != 0 || part == NULL)
			continue;
		if (text.len > 0)
			appendStringInfoChar(&text, '\n');
		appendStringInfoString(&text, part);
	}
	return text.data;
}

Jsonb *
qc_mcp_call(const char *server, const char *tool, Jsonb *arguments,
			const char *audit_extra)
{
	QcServerUse *use = qc_server_mcp(server);
	StringInfoData params;
	StringInfoData out;
	JsonbContainer *result;
	JsonbValue *structured;
	JsonbValue *is_error;
	JsonbContainer *content;

	if (!JB_ROOT_IS_OBJECT(arguments))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a tool's arguments are a JSON object"),
				 errdetail("For example: '{\"message\": \"hello\"}'.")));
	if (!qc_server_offers_tool(use->opts.tools, tool))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("MCP server %s does not offer the tool \"%s\"", server, tool),
				 errdetail("The server's tools option is '%s'.", use->opts.tools),
				 errhint("ALTER SERVER %s OPTIONS (SET tools '...') to offer it.",
						 quote_identifier(server))));
	initStringInfo(&params);
	appendStringInfoString(&params, "{\"name\": ");
	qc_json_append_string(&params, tool);
	appendStringInfo(&params, ", \"arguments\": %s}",
					 JsonbToCString(NULL, &arguments->root, VARSIZE(arguments)));
	result = request(server, "tools/call", tool, params.data, audit_extra);
	content = qc_jsonb_get_array(result, "content");
	structured = qc_jsonb_get(result, "structuredContent");
	is_error = qc_jsonb_get(result, "isError");
	initStringInfo(&out);
	appendStringInfo(&out, "{\"content\": %s, \"structured\": %s, \"is_error\": %s, \"text\": ",
					 content ? JsonbToCString(NULL, content, -1) : "[]",
					 structured ? qc_jsonb_value_text(structured) : "null",
					 is_error && is_error->type == jbvBool && is_error->val.boolean ? "true" : "false");
	qc_json_append_string(&out, joined_text(content));
	appendStringInfoChar(&out, '}');
	return qc_jsonb_parse(out.data);
}
