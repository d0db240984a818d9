/*-------------------------------------------------------------------------
 *
 * api.c
 *	  SQL entry point for REST calls: api_call().
 *
 * Unlike web_fetch, a 4xx or 5xx response is not an error: the caller gets
 * the whole response as jsonb and decides.  Arguments are validated before
 * anything is sent: the method, every header name and value (no CR/LF, no
 * Host or hop-by-hop headers), and the headers object's shape.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api.h"
#include "call.h"
#include "http.h"
#include "json.h"
#include "onerror.h"
#include "response.h"

PG_FUNCTION_INFO_V1(api_call);

/* Header value from a jsonb scalar: strings, numbers and booleans. */
static char *
header_value(JsonbValue *v, const char *name)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for HTTP header \"%s\"", name),
					 errdetail("Header values must be strings, numbers or booleans.")));
	}
	pg_unreachable();
}

/* The headers argument: a jsonb object of name: value, each validated. */
static List *
parse_headers(Jsonb *headers)
{
	List	   *result = NIL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!JB_ROOT_IS_OBJECT(headers))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("headers must be a JSON object"),
				 errdetail("For example: '{\"Accept\": \"application/json\"}'.")));

	it = JsonbIteratorInit(&headers->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		QcHeader   *h;

		if (tok != WJB_KEY)
			continue;
		h = palloc(sizeof(QcHeader));
		h->name = pnstrdup(v.val.string.val, v.val.string.len);
		tok = JsonbIteratorNext(&it, &v, true);
		h->value = header_value(&v, h->name);
		qc_http_validate_header(h->name, h->value);
		h->value = pg_server_to_any(h->value, strlen(h->value), PG_UTF8);
		result = lappend(result, h);
	}
	return result;
}

QcCall *
qc_api_prepare(const char *func, char *url, const char *method, Jsonb *headers,
			   char *body, int max_chars)
{
	QcCall	   *call = qc_call_new(func, qc_http_validate_method(method), url);

	call->max_chars = max_chars;
	if (headers != NULL)
		call->headers = parse_headers(headers);
	if (body != NULL)
	{
		call->body = pg_server_to_any(body, strlen(body), PG_UTF8);
		call->body_len = strlen(call->body);
		/* a JSON body with no declared type is sent as JSON */
		if (qc_http_find_header(call->headers, "Content-Type") == NULL &&
			qc_json_is_valid(call->body, call->body_len))
		{
			QcHeader   *h = palloc(sizeof(QcHeader));

			h->name = "Content-Type";
			h->value = "application/json";
			call->headers = lappend(call->headers, h);
		}
	}
	return call;
}

Jsonb *
qc_api_result(QcCall *call)
{
	Jsonb	   *result;

	if (call->error_code != 0)
		return NULL;
	result = qc_response_jsonb(call);
	call->outcome = qc_call_status_ok(call) ? QC_OUTCOME_OK : QC_OUTCOME_HTTP_ERROR;
	return result;
}

/* api_call's work: the call, and its response as jsonb. */
typedef struct ApiWork
{
	QcCall	   *call;
	Jsonb	   *result;
} ApiWork;

static void
api_work(void *arg)
{
	ApiWork    *w = arg;

	qc_call_execute(w->call);
	w->result = qc_api_result(w->call);
	qc_call_end(w->call);
}

/*
 * api_call(url text, method text DEFAULT 'GET', headers jsonb DEFAULT NULL,
 *			body text DEFAULT NULL, max_chars int DEFAULT NULL) returns jsonb
 *
 * With queryclaw.on_error = 'return', a call that fails returns {"ok":
 * false, "status": (null when no response came), "error", "sqlstate"}.
 */
Datum
api_call(PG_FUNCTION_ARGS)
{
	ApiWork		w = {0};
	ErrorData  *failure;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	w.call = qc_api_prepare("api_call",
							text_to_cstring(PG_GETARG_TEXT_PP(0)),
							PG_ARGISNULL(1) ? "GET" : text_to_cstring(PG_GETARG_TEXT_PP(1)),
							PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2),
							PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
							qc_effective_max_chars(fcinfo, 4));
	if (!qc_on_error_run(api_work, &w, &failure))
		PG_RETURN_JSONB_P(qc_on_error_jsonb(failure, w.call->status > 0 ?
											psprintf("\"ok\": false, \"status\": %ld", w.call->status) :
											"\"ok\": false, \"status\": null"));
	PG_RETURN_JSONB_P(w.result);
}
