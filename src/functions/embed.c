/*-------------------------------------------------------------------------
 *
 * embed.c
 *	  llm_embed(): vectors from an OpenAI-compatible embeddings endpoint.
 *
 * Requests are POST {queryclaw.embed_url}/embeddings with {"model",
 * "input": [texts]}, in groups of at most queryclaw.embed_batch_size
 * texts; the reply's data[] entries give each input's embedding by index,
 * and its usage the tokens, which count against the role's
 * queryclaw.max_tokens_per_day.  embed_url and embed_model default to
 * llm_url and llm_model.  The key is embed_api_key, else llm_api_key, but
 * only when the endpoint is on the LLM endpoint's host: a key is never
 * sent to a host it was not set for.  The endpoint is the DBA's and is
 * trusted, like llm_url.  Every request is a QcCall (func "llm_embed"),
 * audited with the model, the number of inputs and the tokens, and sent
 * under the shared retry policy (endpoint.c): every attempt has its audit
 * row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/tuplestore.h"

#include "budget.h"
#include "call.h"
#include "endpoint.h"
#include "guc.h"
#include "http.h"
#include "json.h"
#include "onerror.h"
#include "servers.h"

PG_FUNCTION_INFO_V1(llm_embed);
PG_FUNCTION_INFO_V1(llm_embed_many);

/* The endpoint and the model a request goes to. */
typedef struct EmbedTarget
{
	QcEndpointBase base;		/* embed_url (embed_server), else llm_url's */
	const char *model;
	const char *key;			/* or NULL */
} EmbedTarget;

static char *
host_of(const char *url)
{
	QcUrl		parsed;
	char	   *error;

	return qc_url_parse(url, &parsed, &error) ? parsed.host : NULL;
}

static void
resolve_target(const char *model, EmbedTarget *t)
{
	t->base = QC_EMBED_ENDPOINT();
	if (t->base.url[0] == '\0')
		t->base = QC_LLM_ENDPOINT();
	if (t->base.url[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no embeddings endpoint is configured"),
				 errdetail("queryclaw.embed_url and queryclaw.llm_url are empty."),
				 errhint("A superuser can set queryclaw.embed_url to the base URL of an OpenAI-compatible API, such as https://api.openai.com/v1.")));
	t->model = (model && model[0]) ? model :
		qc_embed_model[0] ? qc_embed_model : qc_llm_model;
	if (t->model[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no embedding model is configured"),
				 errdetail("No model was given, and queryclaw.embed_model and queryclaw.llm_model are empty."),
				 errhint("Pass model => '...', or have a superuser set queryclaw.embed_model.")));
	/* under a server, the role's mapping is the key: never the DBA's */
	t->key = NULL;
	if (t->base.server != NULL)
		return;
	if (qc_embed_api_key[0])
		t->key = qc_embed_api_key;
	else if (qc_llm_api_key[0] && qc_llm_server[0] == '\0')
	{
		char	   *embed_host = host_of(t->base.url);
		char	   *llm_host = qc_llm_url[0] ? host_of(qc_llm_url) : NULL;

		if (embed_host && llm_host && strcmp(embed_host, llm_host) == 0)
			t->key = qc_llm_api_key;
	}
}

/* The request body, in UTF-8. */
static char *
request_body(const EmbedTarget *t, char **inputs, int n)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"model\": ");
	escape_json(&b, t->model);
	appendStringInfoString(&b, ", \"input\": [");
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(&b, ", ");
		escape_json(&b, inputs[i]);
	}
	appendStringInfoString(&b, "]}");
	return pg_server_to_any(b.data, b.len, PG_UTF8);
}

static void
fail_reply(QcCall *call, const char *detail)
{
	qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 "reply from the embeddings endpoint is not an embeddings list",
				 detail, NULL);
}

/* One embedding of the reply as real[]. */
static ArrayType *
read_vector(QcCall *call, JsonbContainer *vec, int i)
{
	int			dims = JsonContainerSize(vec);
	Datum	   *elems = palloc(sizeof(Datum) * Max(dims, 1));

	for (int d = 0; d < dims; d++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(vec, d);

		if (v->type != jbvNumeric)
			fail_reply(call, psprintf("data[%d].embedding holds something that is not a number.", i));
		elems[d] = DirectFunctionCall1(numeric_float4, NumericGetDatum(v->val.numeric));
	}
	return construct_array(elems, dims, FLOAT4OID, sizeof(float4), true, TYPALIGN_INT);
}

/* Read data[] into out[0..n-1], each by its index. */
static void
read_reply(QcCall *call, Jsonb *jb, int n, ArrayType **out, int64 *tokens)
{
	JsonbContainer *data = jb && JB_ROOT_IS_OBJECT(jb) ?
		qc_jsonb_get_array(&jb->root, "data") : NULL;
	JsonbContainer *usage;
	int			size;

	if (data == NULL)
		fail_reply(call, "The reply has no data array.");
	size = JsonContainerSize(data);
	for (int i = 0; i < size; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(data, i);
		JsonbContainer *vec;
		int64		index = i;

		if (e->type != jbvBinary || !qc_jsonb_is_object(e->val.binary.data))
			fail_reply(call, psprintf("data[%d] is not an object.", i));
		qc_jsonb_get_int64(e->val.binary.data, "index", &index);
		vec = qc_jsonb_get_array(e->val.binary.data, "embedding");
		if (vec == NULL)
			fail_reply(call, psprintf("data[%d].embedding is not an array.", i));
		if (index < 0 || index >= n || out[index] != NULL)
			fail_reply(call, psprintf("data[%d] has index %lld, not one of the %d inputs.",
									  i, (long long) index, n));
		out[index] = read_vector(call, vec, i);
	}
	for (int i = 0; i < n; i++)
		if (out[i] == NULL)
			fail_reply(call, psprintf("The reply has no embedding for input %d of %d.", i + 1, n));
	usage = qc_jsonb_get_object(&jb->root, "usage");
	if (!qc_jsonb_get_int64(usage, "total_tokens", tokens))
		qc_jsonb_get_int64(usage, "prompt_tokens", tokens);
}

/* One request for n inputs, with retries. */
static void
send_group(const EmbedTarget *t, char **inputs, int n, ArrayType **out)
{
	QcCall	   *proto = qc_endpoint_request("llm_embed", &t->base, "/embeddings",
											t->key, (size_t) 64 * 1024 * 1024,
											request_body(t, inputs, n));
	QcCall	   *call;
	QcAttempts	attempts;
	const char *text;
	Jsonb	   *jb;
	int64		tokens = 0;
	StringInfoData extra;

	initStringInfo(&extra);
	appendStringInfoString(&extra, "\"model\": ");
	escape_json(&extra, t->model);
	appendStringInfo(&extra, ", \"inputs\": %d", n);
	proto->audit_extra = extra.data;

	qc_call_admit_tokens(proto);
	call = qc_endpoint_send(proto, QC_ENDPOINT_EMBED, &attempts);
	text = qc_call_api_reply(call, "the embeddings endpoint",
							 "Check queryclaw.embed_api_key (or queryclaw.llm_api_key).",
							 qc_endpoint_attempts_note(&attempts));
	jb = qc_jsonb_parse(text);
	if (call->response_cut)
		fail_reply(call, "The reply is too large.");
	read_reply(call, jb, n, out, &tokens);
	qc_budget_count(tokens);

	appendStringInfo(&extra, ", \"total_tokens\": " INT64_FORMAT, tokens);
	if (attempts.count > 1)
		appendStringInfo(&extra, ", \"attempt\": %d", attempts.count);
	call->audit_extra = extra.data;
	call->chars = 0;
	call->outcome = QC_OUTCOME_OK;
	qc_call_end(call);
}

/* One group's request, as work under queryclaw.on_error. */
typedef struct GroupWork
{
	const EmbedTarget *t;
	char	  **inputs;
	int			n;
	ArrayType **out;
} GroupWork;

static void
group_work(void *arg)
{
	GroupWork  *w = arg;

	send_group(w->t, w->inputs, w->n, w->out);
}

/*
 * Embed inputs[0..n-1] (NULL ones stay NULL) in groups of embed_batch_size.
 * With queryclaw.on_error = 'return', a group whose request fails leaves
 * its inputs' embeddings NULL, and the others are asked all the same.
 */
static ArrayType **
embed_all(const EmbedTarget *t, char **inputs, int n)
{
	ArrayType **out = palloc0(sizeof(ArrayType *) * Max(n, 1));
	char	  **group = palloc(sizeof(char *) * qc_embed_batch_size);
	int		   *where = palloc(sizeof(int) * qc_embed_batch_size);
	int			i = 0;

	while (i < n)
	{
		int			g = 0;
		ArrayType **got;
		ErrorData  *failure;

		for (; i < n && g < qc_embed_batch_size; i++)
			if (inputs[i] != NULL)
			{
				where[g] = i;
				group[g++] = inputs[i];
			}
		if (g == 0)
			break;
		got = palloc0(sizeof(ArrayType *) * g);
		if (!qc_on_error_run(group_work, &(GroupWork) {t, group, g, got}, &failure))
			continue;
		for (int k = 0; k < g; k++)
			out[where[k]] = got[k];
	}
	return out;
}

/*
 * llm_embed(input text, model text DEFAULT NULL) returns real[]
 *	NULL with queryclaw.on_error = 'return' when the request fails
 */
Datum
llm_embed(PG_FUNCTION_ARGS)
{
	EmbedTarget t;
	char	   *input;
	ArrayType  *embedding;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	resolve_target(PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)), &t);
	input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	embedding = embed_all(&t, &input, 1)[0];
	if (embedding == NULL)
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(embedding);
}

/*
 * llm_embed(inputs text[], model text DEFAULT NULL)
 *	returns table(ord int, embedding real[]): one row per input, in order;
 *	a NULL input gives a NULL embedding and is not sent
 */
Datum
llm_embed_many(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EmbedTarget t;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **inputs;
	ArrayType **out;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	resolve_target(PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)), &t);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	inputs = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		inputs[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
	out = embed_all(&t, inputs, n);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2] = {Int32GetDatum(i + 1), PointerGetDatum(out[i])};
		bool		isnull[2] = {false, out[i] == NULL};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	return (Datum) 0;
}
