/*-------------------------------------------------------------------------
 *
 * search.c
 *	  web_search(): results from a SearXNG-compatible search API, as a SQL
 *	  function and as an LLM tool.
 *
 * The request is GET {queryclaw.search_url}?q=<query>&format=json (joined
 * with '&' when the URL already has a query string), with
 * "Authorization: Bearer <queryclaw.search_api_key>" when a key is set.
 * The reply's results[] entries give title, url and content (SearXNG's
 * names); rank is the position in the reply.
 *
 * The search API is the DBA's, configured like queryclaw.llm_url, and is
 * trusted the same way (QcCall.trusted): block_local and the host lists do
 * not apply to it, since a caller or a model chooses only the query.  It is
 * also retried the same way (qc_endpoint_send).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "call.h"
#include "content.h"
#include "endpoint.h"
#include "guc.h"
#include "http.h"
#include "json.h"
#include "onerror.h"
#include "redact.h"
#include "response.h"
#include "search.h"
#include "servers.h"

PG_FUNCTION_INFO_V1(web_search);

/* Percent-encode UTF-8 bytes for a query string: only unreserved stay. */
static char *
percent_encode(const char *s)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
	{
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			(*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL)
			appendStringInfoChar(&out, (char) *p);
		else
			appendStringInfo(&out, "%%%02X", *p);
	}
	return out.data;
}

static char *
request_url(const char *base, const char *query)
{
	char	   *utf8 = pg_server_to_any(query, strlen(query), PG_UTF8);

	return psprintf("%s%cq=%s&format=json", base,
					strchr(base, '?') ? '&' : '?', percent_encode(utf8));
}

/* Up to n results from the reply's results array. */
static List *
read_results(JsonbContainer *results, int n)
{
	List	   *out = NIL;
	int			size = JsonContainerSize(results);

	for (int i = 0; i < size && list_length(out) < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(results, i);
		QcSearchResult *r;

		if (e->type != jbvBinary || !qc_jsonb_is_object(e->val.binary.data))
			continue;
		r = palloc(sizeof(QcSearchResult));
		r->title = qc_jsonb_get_string(e->val.binary.data, "title");
		r->url = qc_jsonb_get_string(e->val.binary.data, "url");
		r->snippet = qc_jsonb_get_string(e->val.binary.data, "content");
		out = lappend(out, r);
	}
	return out;
}

void
qc_search_require_url(bool for_tool)
{
	if (QC_SEARCH_ENDPOINT().url[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 for_tool ? errmsg("tool \"web_search\" needs a search API") :
				 errmsg("no search API is configured"),
				 errdetail("queryclaw.search_url is empty."),
				 errhint("A superuser can set queryclaw.search_url to a SearXNG-compatible search API.")));
}

List *
qc_search(const char *query, int num_results, const char *audit_extra)
{
	QcEndpointBase base;
	QcCall	   *proto;
	QcCall	   *call;
	QcAttempts	attempts;
	const char *text;
	Jsonb	   *jb;
	JsonbContainer *results;
	List	   *out;

	qc_search_require_url(false);
	if (num_results < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("num_results must be at least 1")));

	base = QC_SEARCH_ENDPOINT();
	proto = qc_call_new("web_search", "GET", request_url(base.url, query));
	qc_server_endpoint_call(proto, &base);
	proto->audit_extra = (char *) audit_extra;
	proto->headers = qc_http_add_header(NIL, "Accept", "application/json");
	/* under a server, the role's mapping is the key: never the DBA's */
	if (qc_search_api_key[0] != '\0' && base.server == NULL)
		proto->headers = qc_http_add_header(proto->headers, "Authorization",
											psprintf("Bearer %s", qc_search_api_key));
	call = qc_endpoint_send(proto, QC_ENDPOINT_SEARCH, &attempts);

	text = qc_call_api_reply(call, "the search API", "Check queryclaw.search_api_key.",
							 qc_endpoint_attempts_note(&attempts));
	jb = qc_jsonb_parse(text);
	results = jb ? qc_jsonb_get_array(&jb->root, "results") : NULL;
	if (results == NULL)
		qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
					 "reply from the search API has no results array",
					 qc_text_quote(text),
					 "queryclaw.search_url must point to a SearXNG-compatible API with the JSON format enabled.");

	out = read_results(results, num_results);
	call->audit_extra = psprintf("%s%s\"results\": %d", audit_extra ? audit_extra : "",
								 audit_extra ? ", " : "", list_length(out));
	call->outcome = QC_OUTCOME_OK;
	qc_call_end(call);
	return out;
}

char *
qc_search_results_json(List *results)
{
	StringInfoData s;
	ListCell   *lc;

	initStringInfo(&s);
	appendStringInfoChar(&s, '[');
	foreach(lc, results)
	{
		QcSearchResult *r = lfirst(lc);

		appendStringInfo(&s, "%s{\"rank\": %d, \"title\": ",
						 foreach_current_index(lc) ? ", " : "", foreach_current_index(lc) + 1);
		qc_json_append_string(&s, r->title);
		appendStringInfoString(&s, ", \"url\": ");
		qc_json_append_string(&s, r->url);
		appendStringInfoString(&s, ", \"snippet\": ");
		qc_json_append_string(&s, r->snippet);
		appendStringInfoChar(&s, '}');
	}
	appendStringInfoChar(&s, ']');
	return s.data;
}

/* A text Datum, or a NULL one. */
static Datum
text_or_null(const char *value, bool *isnull)
{
	*isnull = (value == NULL);
	return value ? CStringGetTextDatum(value) : (Datum) 0;
}

/* web_search's work: the search, its results as a list. */
typedef struct SearchWork
{
	const char *query;
	int			num_results;
	List	   *results;
} SearchWork;

static void
search_work(void *arg)
{
	SearchWork *w = arg;

	w->results = qc_search(w->query, w->num_results, NULL);
}

/*
 * web_search(query text, num_results int DEFAULT 5)
 *	returns table(rank int, title text, url text, snippet text)
 *
 * With queryclaw.on_error = 'return', a search that fails returns no rows.
 * The rows are written once the search is over, outside its work.
 */
Datum
web_search(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SearchWork	w = {0};
	ErrorData  *failure;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	w.query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	w.num_results = PG_GETARG_INT32(1);
	if (!qc_on_error_run(search_work, &w, &failure))
		return (Datum) 0;
	foreach(lc, w.results)
	{
		QcSearchResult *r = lfirst(lc);
		Datum		values[4];
		bool		nulls[4] = {false};

		values[0] = Int32GetDatum(foreach_current_index(lc) + 1);
		values[1] = text_or_null(r->title, &nulls[1]);
		values[2] = text_or_null(r->url, &nulls[2]);
		values[3] = text_or_null(r->snippet, &nulls[3]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
