/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  SQL entry points for concurrent batches: web_fetch_many() and
 *	  api_call_many().
 *
 * Both run their requests through qc_call_run_many(), at most
 * queryclaw.max_concurrency at once, and return one row per request in
 * input order.  A request that fails (invalid URL, refused, HTTP error,
 * timeout) gives a row with an error and never aborts the batch; only a
 * query cancel does.
 *
 * Memory stays bounded by what is returned: each response is shaped as
 * soon as it arrives, in a scratch context that is reset afterwards, and
 * its raw body is freed, so a batch holds at most max_concurrency bodies of
 * max_bytes in transfer, and as many that just arrived: the transport
 * starts the next requests before it hands those back (http.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "api.h"
#include "guc.h"
#include "call.h"
#include "json.h"
#include "response.h"

PG_FUNCTION_INFO_V1(web_fetch_many);
PG_FUNCTION_INFO_V1(api_call_many);

/* The shaped outcome of one request, kept until the rows are emitted. */
typedef struct BatchRow
{
	Datum		content;		/* text or jsonb; valid when has_content */
	bool		has_content;
	long		status;
	char	   *error;
	double		elapsed_ms;
} BatchRow;

typedef struct Batch
{
	QcCall	  **calls;
	BatchRow   *rows;
	int			ncalls;
	QcFormat	format;			/* web_fetch_many only */
	bool		json;			/* api_call_many: content is jsonb */
	MemoryContext result_cxt;	/* where rows live */
	MemoryContext scratch_cxt;	/* reset after each response */
} Batch;

/*
 * Shape one finished call into its row; runs as each call ends, before the
 * call is audited (call.c).
 */
static void
shape_row(QcCall *call, void *arg)
{
	Batch	   *batch = arg;
	BatchRow   *row;
	MemoryContext old = MemoryContextSwitchTo(batch->scratch_cxt);
	Datum		content = (Datum) 0;
	bool		has_content;

	if (batch->json)
	{
		Jsonb	   *result = qc_api_result(call);

		has_content = (result != NULL);
		if (has_content)
			content = PointerGetDatum(result);
	}
	else
	{
		char	   *text = qc_fetch_result(call, batch->format);

		has_content = (text != NULL);
		if (has_content)
			content = PointerGetDatum(cstring_to_text(text));
	}

	MemoryContextSwitchTo(batch->result_cxt);
	row = &batch->rows[call->ord];
	row->has_content = has_content;
	if (has_content)
		row->content = datumCopy(content, false, -1);
	row->status = call->status;
	row->error = qc_call_error_text(call);
	row->elapsed_ms = call->elapsed_ms;
	/* a failure found while shaping is in the scratch: the audit reads it */
	if (call->error_code != 0)
	{
		call->reason = pstrdup(call->reason);
		call->error_detail = call->error_detail ? pstrdup(call->error_detail) : NULL;
		call->error_hint = call->error_hint ? pstrdup(call->error_hint) : NULL;
	}
	MemoryContextSwitchTo(old);

	/* the raw response is no longer needed */
	qc_call_drop_response(call);
	MemoryContextReset(batch->scratch_cxt);
}

/* Run the batch's calls, then return one row per call in input order. */
static void
run_and_return(FunctionCallInfo fcinfo, Batch *batch, char **urls)
{
	ReturnSetInfo *rsinfo;

	batch->rows = palloc0(Max(batch->ncalls, 1) * sizeof(BatchRow));
	batch->result_cxt = CurrentMemoryContext;
	batch->scratch_cxt = AllocSetContextCreate(CurrentMemoryContext,
											   "queryclaw batch response",
											   ALLOCSET_DEFAULT_SIZES);
	{
		/* calls with a NULL URL are not sent: their rows stay empty */
		QcCall	  **sent = palloc(Max(batch->ncalls, 1) * sizeof(QcCall *));
		int			nsent = 0;

		for (int i = 0; i < batch->ncalls; i++)
			if (batch->calls[i] != NULL)
				sent[nsent++] = batch->calls[i];
		qc_call_run_many(sent, nsent, qc_max_concurrency, shape_row, batch);
	}
	MemoryContextDelete(batch->scratch_cxt);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int i = 0; i < batch->ncalls; i++)
	{
		BatchRow   *row = &batch->rows[i];
		Datum		values[6];
		bool		nulls[6] = {false, urls[i] == NULL, row->status == 0,
		!row->has_content, row->error == NULL, batch->calls[i] == NULL};

		values[0] = Int32GetDatum(i + 1);
		values[1] = urls[i] ? CStringGetTextDatum(urls[i]) : (Datum) 0;
		values[2] = Int32GetDatum((int32) row->status);
		values[3] = row->content;
		values[4] = row->error ? CStringGetTextDatum(row->error) : (Datum) 0;
		values[5] = Float8GetDatum(row->elapsed_ms);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * web_fetch_many(urls text[], format text DEFAULT 'text', max_chars int DEFAULT NULL)
 *	returns table(ord int, url text, status int, content text, error text,
 *				  elapsed_ms float8)
 */
Datum
web_fetch_many(PG_FUNCTION_ARGS)
{
	Batch		batch = {0};
	Datum	   *elems;
	bool	   *elem_nulls;
	char	  **urls;
	int			max_chars;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	batch.format = qc_format_parse(PG_ARGISNULL(1) ? "text" :
								   text_to_cstring(PG_GETARG_TEXT_PP(1)));
	max_chars = qc_effective_max_chars(fcinfo, 2);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elem_nulls, &batch.ncalls);

	batch.calls = palloc0(Max(batch.ncalls, 1) * sizeof(QcCall *));
	urls = palloc0(Max(batch.ncalls, 1) * sizeof(char *));
	for (int i = 0; i < batch.ncalls; i++)
	{
		if (elem_nulls[i])
			continue;
		urls[i] = TextDatumGetCString(elems[i]);
		batch.calls[i] = qc_call_new("web_fetch_many", "GET", urls[i]);
		batch.calls[i]->max_chars = max_chars;
		batch.calls[i]->ord = i;
	}
	run_and_return(fcinfo, &batch, urls);
	return (Datum) 0;
}

/* A text member of a request object, or NULL when absent or JSON null. */
static char *
request_text(Jsonb *request, const char *key, int ord)
{
	JsonbValue *v = qc_jsonb_get(&request->root, key);

	if (v == NULL)
		return NULL;
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("request %d: \"%s\" must be a string", ord, key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* The "headers" member of a request object, or NULL. */
static Jsonb *
request_headers(Jsonb *request)
{
	JsonbValue *v = qc_jsonb_get(&request->root, "headers");

	return v ? JsonbValueToJsonb(v) : NULL;
}

/*
 * api_call_many(requests jsonb, max_chars int DEFAULT NULL)
 *	returns table(ord int, url text, status int, response jsonb, error text,
 *				  elapsed_ms float8)
 *
 * requests is an array of {url, method, headers, body}; each is validated
 * (a malformed one is a 22023 error before anything is sent).
 */
Datum
api_call_many(PG_FUNCTION_ARGS)
{
	Jsonb	   *requests;
	Batch		batch = {0};
	char	  **urls;
	int			max_chars;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			i = 0;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	requests = PG_GETARG_JSONB_P(0);
	max_chars = qc_effective_max_chars(fcinfo, 1);
	if (!JB_ROOT_IS_ARRAY(requests) || JB_ROOT_IS_SCALAR(requests))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("requests must be a JSON array of request objects"),
				 errdetail("For example: '[{\"url\": \"https://api.example.com/a\"}, {\"url\": \"https://api.example.com/b\", \"method\": \"POST\", \"body\": \"{}\"}]'.")));

	batch.json = true;
	batch.ncalls = JB_ROOT_COUNT(requests);
	batch.calls = palloc0(Max(batch.ncalls, 1) * sizeof(QcCall *));
	urls = palloc0(Max(batch.ncalls, 1) * sizeof(char *));
	it = JsonbIteratorInit(&requests->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		Jsonb	   *request;
		char	   *method;

		if (tok != WJB_ELEM)
			continue;
		if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("request %d is not a JSON object", i + 1)));
		request = JsonbValueToJsonb(&v);
		urls[i] = request_text(request, "url", i + 1);
		method = request_text(request, "method", i + 1);
		if (urls[i] != NULL)
		{
			batch.calls[i] = qc_api_prepare("api_call_many", urls[i],
											method ? method : "GET",
											request_headers(request),
											request_text(request, "body", i + 1),
											max_chars);
			batch.calls[i]->ord = i;
		}
		i++;
	}
	run_and_return(fcinfo, &batch, urls);
	return (Datum) 0;
}
