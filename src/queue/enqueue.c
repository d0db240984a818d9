/*-------------------------------------------------------------------------
 *
 * enqueue.c
 *	  SQL entry points that queue a request: web_fetch_async(),
 *	  api_call_async() and llm_chat_tools_async(); and the request
 *	  constructors of enrichments, which check the same arguments the same
 *	  way and return them as jsonb rather than queue them, and the queueing
 *	  of an enrichment's embedding request (enrichment_embed_async).
 *
 * Each checks its arguments as its synchronous twin does before sending
 * (URL, method, headers, format, tools, output schema: 22023 and 42501
 * errors now, not a failed request later), what the policy decides from
 * the URL and method alone (scheme, allowed and denied hosts, read_only,
 * queryclaw.servers_only: 42501, audited as the synchronous call's
 * refusal) and the callback
 * (qc_queue_check_callback), then inserts one row into queryclaw.requests
 * in the caller's transaction.  The rest of the policy (enabled, the
 * addresses, a redirect's target) and the limits are applied when a worker
 * sends the request, under the role's settings of that moment, with the
 * host lists and read_only again: a request may wait for a budget or a
 * pause, never fail at enqueue for one.
 *
 * The row's request column holds the arguments with secrets redacted as
 * the audit log redacts them (URL credentials and secret-looking query
 * parameters, secret header values, secret-looking text in a body or a
 * prompt).  When that changed anything, the arguments as given go into
 * queryclaw.request_secrets, which only the workers read.
 *
 * The row's query column holds the enqueuing statement's text as an audit
 * row of the call would hold it (qc_audit_statement): the workers put it in
 * the audit rows of the request's attempts, so that the trigger or job
 * that caused a call is known after the request row is gone.
 *
 * Both tables are written as their owner, in a security-restricted
 * operation, after the checks above: callers have no privilege on them
 * but SELECT of their own rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "api.h"
#include "audit.h"
#include "call.h"
#include "compat.h"
#include "guc.h"
#include "http.h"
#include "json.h"
#include "llmjob.h"
#include "policy.h"
#include "proclookup.h"
#include "qinsert.h"
#include "queue.h"
#include "redact.h"
#include "response.h"
#include "serversadmit.h"
#include "tools.h"

PG_FUNCTION_INFO_V1(web_fetch_async);
PG_FUNCTION_INFO_V1(api_call_async);
PG_FUNCTION_INFO_V1(llm_chat_tools_async);
PG_FUNCTION_INFO_V1(web_fetch_request);
PG_FUNCTION_INFO_V1(api_call_request);
PG_FUNCTION_INFO_V1(llm_request);
PG_FUNCTION_INFO_V1(llm_embed_request);
PG_FUNCTION_INFO_V1(enrichment_embed_async);

/*
 * A request's arguments as two JSON objects built side by side: as given
 * (JSON text, for the worker and for a constructor's result) and as shown
 * (redacted, for requests.request), built as jsonb: a statement queues
 * thousands, and the text would only be parsed again.
 */
typedef struct RequestJson
{
	StringInfoData given;
	JsonbParseState *shown;
	bool		redacted;		/* the two differ */
} RequestJson;

static void
request_begin(RequestJson *r)
{
	initStringInfo(&r->given);
	appendStringInfoChar(&r->given, '{');
	r->shown = NULL;
	(void) pushJsonbValue(&r->shown, WJB_BEGIN_OBJECT, NULL);
	r->redacted = false;
}

static void
append_key(StringInfo s, const char *key)
{
	if (s->len > 1)
		appendStringInfoString(s, ", ");
	escape_json(s, key);
	appendStringInfoString(s, ": ");
}

/* Push key and value to the shown object. */
static void
shown_member(RequestJson *r, const char *key, JsonbValue *value)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = unconstify(char *, key);
	k.val.string.len = strlen(key);
	(void) pushJsonbValue(&r->shown, WJB_KEY, &k);
	(void) pushJsonbValue(&r->shown, WJB_VALUE, value);
}

/* key: JSON text, given and shown (the same text when shown is NULL). */
static void
request_json(RequestJson *r, const char *key, const char *given, const char *shown)
{
	Jsonb	   *value = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														   CStringGetDatum(shown ? shown : given)));
	JsonbValue	v;

	append_key(&r->given, key);
	appendStringInfoString(&r->given, given);
	qc_jsonb_as_value(value, &v);
	shown_member(r, key, &v);
	r->redacted |= shown != NULL && strcmp(given, shown) != 0;
}

/* key: a string, and its redacted form. */
static void
request_text(RequestJson *r, const char *key, const char *given, const char *shown)
{
	JsonbValue	v;

	/* as jsonb_in refuses a string longer than jsonb holds */
	if (strlen(shown) > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("string too long to represent as jsonb string"),
				 errdetail("Due to an implementation restriction, jsonb strings cannot exceed %d bytes.",
						   JENTRY_OFFLENMASK)));
	append_key(&r->given, key);
	escape_json(&r->given, given);
	v.type = jbvString;
	v.val.string.val = unconstify(char *, shown);
	v.val.string.len = strlen(shown);
	shown_member(r, key, &v);
	r->redacted |= strcmp(given, shown) != 0;
}

static void
request_int(RequestJson *r, const char *key, int32 value)
{
	JsonbValue	v;

	append_key(&r->given, key);
	appendStringInfo(&r->given, "%d", value);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall1(int4_numeric, Int32GetDatum(value)));
	shown_member(r, key, &v);
}

/*
 * The headers object as shown: secret headers' values replaced, secrets
 * in the others' text too.  Numbers and booleans stay as they are (the
 * other types qc_api_prepare refused).
 */
static char *
shown_headers(Jsonb *headers)
{
	StringInfoData s;
	JsonbIterator *it = JsonbIteratorInit(&headers->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		first = true;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *name;

		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(v.val.string.val, v.val.string.len);
		(void) JsonbIteratorNext(&it, &v, true);
		if (!first)
			appendStringInfoString(&s, ", ");
		first = false;
		escape_json(&s, name);
		appendStringInfoString(&s, ": ");
		if (qc_name_is_secret(name, true))
			escape_json(&s, "REDACTED");
		else if (v.type == jbvString)
			escape_json(&s, qc_redact_text(pnstrdup(v.val.string.val, v.val.string.len)));
		else if (v.type == jbvNumeric)
			appendStringInfoString(&s, DatumGetCString(DirectFunctionCall1(numeric_out,
																		   NumericGetDatum(v.val.numeric))));
		else
			appendStringInfoString(&s, v.type == jbvBool && v.val.boolean ? "true" : "false");
	}
	appendStringInfoChar(&s, '}');
	return s.data;
}

/* The arguments as given. */
static Jsonb *
request_end(RequestJson *r)
{
	appendStringInfoChar(&r->given, '}');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(r->given.data)));
}

/* The arguments as shown. */
static Jsonb *
request_shown(RequestJson *r)
{
	return JsonbValueToJsonb(pushJsonbValue(&r->shown, WJB_END_OBJECT, NULL));
}

/*
 * The URL of call, checked as the synchronous call checks it before
 * anything is sent: 22023 unless it parses; then what the policy decides
 * from the URL and method alone (the scheme, the host lists, read_only)
 * and queryclaw.servers_only (42501), refused and audited as that call's
 * refusal.  Not queryclaw.enabled, which makes a queued request wait, nor
 * the addresses, which need a lookup when it is sent (and a redirect's,
 * which nothing knows yet).
 */
static void
check_url(QcCall *call)
{
	QcUrl		parsed;
	char	   *error;
	QcVerdict	refusal;
	const QcVerdict *refused;

	if (!qc_url_parse(call->url, &parsed, &error))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid URL"),
				 errdetail("%s", error)));
	if (!qc_policy_check_url_rules(call->policy, &parsed, call->method, &refusal))
		refused = &refusal;
	else
		refused = qc_server_refusal(call);
	if (refused != NULL)
	{
		qc_call_set_refusal(call, refused);
		qc_call_raise(call);
	}
}

/*
 * Insert the request as the tables' owner (qinsert.c); returns its id.  The
 * caller's arguments callback (argno) and context (argno + 1) are common
 * to the three functions.  call is the request as its synchronous twin
 * would make it (NULL for the model's loop, whose calls are not known
 * yet): the statement's text is kept as that call's audit row would keep
 * it, for the audit rows of its attempts.
 */
static int64
insert_request(FunctionCallInfo fcinfo, const char *func, RequestJson *r, int argno,
			   const char *idempotency_key, const QcCall *call)
{
	QcRequestRow row = {0};
	int64		id;

	row.role = GetUserId();
	row.func = func;
	row.query = qc_audit_statement(call);
	/* the model's loop has no call yet: refused here like one */
	qc_call_check_allowed(func);
	row.request = request_shown(r);
	if (!PG_ARGISNULL(argno))
		row.callback = qc_queue_check_callback(PG_GETARG_OID(argno));
	if (!PG_ARGISNULL(argno + 1))
		row.context = PG_GETARG_JSONB_P(argno + 1);
	row.idempotency_key = idempotency_key;
	if (r->redacted)
		row.given = request_end(r);
	/* a role paused at login waits from the start, and says so */
	if (!qc_enabled)
		row.waiting = qc_queue_paused_reason(row.role);
	id = qc_queue_insert(&row);
	qc_queue_wake_at_commit(false);
	return id;
}

/* The URL and max_chars members of call, common to web pages and API calls. */
static void
request_url(RequestJson *r, FunctionCallInfo fcinfo, QcCall *call, int max_chars_arg)
{
	check_url(call);
	request_text(r, "url", call->url, qc_redact_url(call->url));
	if (!PG_ARGISNULL(max_chars_arg))
	{
		(void) qc_clamp_max_chars(true, PG_GETARG_INT32(max_chars_arg));
		request_int(r, "max_chars", PG_GETARG_INT32(max_chars_arg));
	}
}

/*
 * The request a constructor returns (an enrichment's request expression):
 * the arguments as given, with the function that will send them, for the
 * enrichment's feeder, which queues it as its owner when the row's turn
 * comes.  Secrets stay in it: only the owner's own expression sees it, and
 * the queue redacts them as for any request.
 */
static Datum
constructed(RequestJson *r, const char *func)
{
	request_text(r, "func", func, func);
	return JsonbPGetDatum(request_end(r));
}

/*
 * web_fetch's arguments (url, format, max_chars: the first three of both
 * web_fetch_async and web_fetch_request), checked as web_fetch_async
 * checks them; the url must not be NULL.
 */
static QcCall *
build_web_fetch(FunctionCallInfo fcinfo, RequestJson *r)
{
	QcCall	   *call;

	call = qc_call_new(QC_FUNC_WEB_FETCH_ASYNC, "GET", text_to_cstring(PG_GETARG_TEXT_PP(0)));
	request_begin(r);
	request_url(r, fcinfo, call, 2);
	if (!PG_ARGISNULL(1))
	{
		char	   *format = text_to_cstring(PG_GETARG_TEXT_PP(1));

		(void) qc_format_parse(format);
		request_text(r, "format", format, format);
	}
	return call;
}

/*
 * web_fetch_async(url text, format text DEFAULT 'text', max_chars int
 *				   DEFAULT NULL, callback regprocedure DEFAULT NULL,
 *				   context jsonb DEFAULT NULL) returns bigint
 */
Datum
web_fetch_async(PG_FUNCTION_ARGS)
{
	RequestJson r;
	QcCall	   *call;

	qc_queue_require("web_fetch_async");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	call = build_web_fetch(fcinfo, &r);
	PG_RETURN_INT64(insert_request(fcinfo, QC_FUNC_WEB_FETCH_ASYNC, &r, 3, NULL, call));
}

/* web_fetch_request(url text, format text, max_chars int) returns jsonb */
Datum
web_fetch_request(PG_FUNCTION_ARGS)
{
	RequestJson r;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	(void) build_web_fetch(fcinfo, &r);
	PG_RETURN_DATUM(constructed(&r, "web_fetch"));
}

/*
 * api_call's arguments (url, method, headers, body, max_chars: the first
 * five of api_call_async and api_call_request) and the idempotency key,
 * checked as api_call checks them; the url must not be NULL.
 */
static QcCall *
build_api_call(FunctionCallInfo fcinfo, RequestJson *r, const char *key)
{
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(0));
	const char *method = PG_ARGISNULL(1) ? "GET" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	Jsonb	   *headers = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
	char	   *body = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	QcCall	   *call;

	/* the method, headers and body as api_call checks them */
	call = qc_api_prepare(QC_FUNC_API_CALL_ASYNC, url, method, headers, body, qc_max_chars);
	if (key != NULL)
		qc_http_validate_header("Idempotency-Key", key);

	request_begin(r);
	request_url(r, fcinfo, call, 4);
	request_text(r, "method", call->method, call->method);
	if (headers != NULL)
		request_json(r, "headers", JsonbToCString(NULL, &headers->root, VARSIZE(headers)),
					 shown_headers(headers));
	if (body != NULL)
		request_text(r, "body", body, qc_redact_text(body));
	return call;
}

/*
 * api_call_async(url text, method text DEFAULT 'GET', headers jsonb DEFAULT
 *				  NULL, body text DEFAULT NULL, max_chars int DEFAULT NULL,
 *				  callback regprocedure DEFAULT NULL, context jsonb DEFAULT
 *				  NULL, idempotency_key text DEFAULT NULL) returns bigint
 */
Datum
api_call_async(PG_FUNCTION_ARGS)
{
	RequestJson r;
	char	   *key = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));
	QcCall	   *call;

	qc_queue_require("api_call_async");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	call = build_api_call(fcinfo, &r, key);
	PG_RETURN_INT64(insert_request(fcinfo, QC_FUNC_API_CALL_ASYNC, &r, 5, key, call));
}

/*
 * api_call_request(url text, method text, headers jsonb, body text,
 *					max_chars int, idempotency_key text) returns jsonb
 */
Datum
api_call_request(PG_FUNCTION_ARGS)
{
	RequestJson r;
	char	   *key = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	(void) build_api_call(fcinfo, &r, key);
	if (key != NULL)
		request_text(&r, "idempotency_key", key, key);
	PG_RETURN_DATUM(constructed(&r, "api_call"));
}

/*
 * The model loop's arguments (prompt, tools, system, model, max_rounds,
 * output_schema: the first six of llm_chat_tools_async and llm_request),
 * checked as llm_chat_tools checks them; the prompt must not be NULL.
 */
static void
build_llm(FunctionCallInfo fcinfo, RequestJson *r)
{
	char	   *prompt = text_to_cstring(PG_GETARG_TEXT_PP(0));

	request_begin(r);
	request_text(r, "prompt", prompt, qc_redact_text(prompt));
	if (!PG_ARGISNULL(1))
	{
		ArrayType  *tools = PG_GETARG_ARRAYTYPE_P(1);

		/* unknown tools, and tools the role may not run: 22023, 42501 */
		(void) qc_tools_parse(tools);
		request_json(r, "tools",
					 TextDatumGetCString(DirectFunctionCall1(array_to_json,
															 PointerGetDatum(tools))),
					 NULL);
	}
	if (!PG_ARGISNULL(2))
	{
		char	   *system = text_to_cstring(PG_GETARG_TEXT_PP(2));

		request_text(r, "system", system, qc_redact_text(system));
	}
	if (!PG_ARGISNULL(3))
	{
		char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(3));

		request_text(r, "model", model, model);
	}
	if (!PG_ARGISNULL(4))
	{
		qc_llm_check_max_rounds(PG_GETARG_INT32(4));
		request_int(r, "max_rounds", PG_GETARG_INT32(4));
	}
	if (!PG_ARGISNULL(5))
	{
		Jsonb	   *schema = PG_GETARG_JSONB_P(5);

		qc_llm_check_output_schema(schema);
		request_json(r, "output_schema", JsonbToCString(NULL, &schema->root, VARSIZE(schema)),
					 NULL);
	}
}

/*
 * llm_chat_tools_async(prompt text, tools text[] DEFAULT
 *						'{web_fetch,api_call}', system text DEFAULT NULL,
 *						model text DEFAULT NULL, max_rounds int DEFAULT
 *						NULL, output_schema jsonb DEFAULT NULL, callback
 *						regprocedure DEFAULT NULL, context jsonb DEFAULT
 *						NULL) returns bigint
 */
Datum
llm_chat_tools_async(PG_FUNCTION_ARGS)
{
	RequestJson r;

	qc_queue_require("llm_chat_tools_async");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	build_llm(fcinfo, &r);
	PG_RETURN_INT64(insert_request(fcinfo, QC_FUNC_LLM_CHAT_TOOLS_ASYNC, &r, 6, NULL, NULL));
}

/*
 * llm_request(prompt text, tools text[], system text, model text,
 *			   max_rounds int, output_schema jsonb) returns jsonb
 */
Datum
llm_request(PG_FUNCTION_ARGS)
{
	RequestJson r;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	build_llm(fcinfo, &r);
	PG_RETURN_DATUM(constructed(&r, "llm_chat_tools"));
}

/* An embedding's arguments (input, model); the input must not be NULL. */
static void
build_embed(FunctionCallInfo fcinfo, RequestJson *r)
{
	char	   *input = text_to_cstring(PG_GETARG_TEXT_PP(0));

	request_begin(r);
	request_text(r, "input", input, qc_redact_text(input));
	if (!PG_ARGISNULL(1))
	{
		char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(1));

		request_text(r, "model", model, model);
	}
}

/*
 * llm_embed_request(input text, model text) returns jsonb: an embedding of
 * input, as llm_embed(input, model) would return it.
 */
Datum
llm_embed_request(PG_FUNCTION_ARGS)
{
	RequestJson r;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	build_embed(fcinfo, &r);
	PG_RETURN_DATUM(constructed(&r, "llm_embed"));
}

/*
 * enrichment_embed_async(input text, model text, callback regprocedure,
 *						  context jsonb) returns bigint: an enrichment's
 * embedding request, queued by its owner, its request {"input", "model"}.
 * The workers run it as a job of the same kind as the model's requests
 * (llmjob.h); the owner needs EXECUTE on llm_embed_request, which made the
 * request, checked here, and on this function, as the workers check.
 */
Datum
enrichment_embed_async(PG_FUNCTION_ARGS)
{
	RequestJson r;
	Oid			constructor = qc_proc_by_signature("queryclaw.llm_embed_request(text,text)");

	qc_queue_require("an enrichment's embedding");
	if (!OidIsValid(constructor) ||
		qc_proc_aclcheck(constructor, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function queryclaw.llm_embed_request"),
				 errdetail("An enrichment's embedding is queued as its owner, who needs EXECUTE on the constructor that made it.")));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	build_embed(fcinfo, &r);
	PG_RETURN_INT64(insert_request(fcinfo, QC_FUNC_ENRICHMENT_EMBED_ASYNC, &r, 2, NULL, NULL));
}
