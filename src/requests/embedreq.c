/*-------------------------------------------------------------------------
 *
 * embedreq.c
 *	  One request to an OpenAI-compatible embeddings endpoint: where it
 *	  goes, its body, and its reply read into vectors.  llm_embed() (embed.c)
 *	  sends it with retries and waits; the async workers send it as the job
 *	  of a queued embedding request (llmjob.c), between other requests.
 *
 * Requests are POST {queryclaw.embed_url}/embeddings with {"model",
 * "input": [texts]}; the reply's data[] entries give each input's
 * embedding by index, and its usage the tokens, which count against the
 * role's queryclaw.max_tokens_per_day.  embed_url and embed_model default
 * to llm_url and llm_model.  The key is embed_api_key, else llm_api_key,
 * but only when the endpoint is on the LLM endpoint's host: a key is never
 * sent to a host it was not set for.  The endpoint is the DBA's and is
 * trusted, like llm_url.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "budget.h"
#include "embedreq.h"
#include "guc.h"
#include "http.h"
#include "json.h"

static char *
host_of(const char *url)
{
	QcUrl		parsed;
	char	   *error;

	return qc_url_parse(url, &parsed, &error) ? parsed.host : NULL;
}

void
qc_embed_target(const char *model, QcEmbedTarget *t)
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
request_body(const QcEmbedTarget *t, char **inputs, int n)
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

QcCall *
qc_embed_request(const char *func, const QcEmbedTarget *t, const char *prefix,
				 char **inputs, int n)
{
	QcCall	   *call = qc_endpoint_request(func, &t->base, "/embeddings",
										   t->key, (size_t) 64 * 1024 * 1024,
										   request_body(t, inputs, n));
	StringInfoData extra;

	initStringInfo(&extra);
	if (prefix != NULL)
		appendStringInfo(&extra, "%s, ", prefix);
	appendStringInfoString(&extra, "\"model\": ");
	escape_json(&extra, t->model);
	appendStringInfo(&extra, ", \"inputs\": %d", n);
	call->audit_extra = extra.data;
	return call;
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
read_data(QcCall *call, Jsonb *jb, int n, ArrayType **out, int64 *tokens)
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

int64
qc_embed_read(QcCall *call, const QcAttempts *attempts, int n, ArrayType **out)
{
	const char *text = qc_call_api_reply(call, "the embeddings endpoint",
										 "Check queryclaw.embed_api_key (or queryclaw.llm_api_key).",
										 qc_endpoint_attempts_note(attempts));
	Jsonb	   *jb = qc_jsonb_parse(text);
	int64		tokens = 0;

	if (call->response_cut)
		fail_reply(call, "The reply is too large.");
	read_data(call, jb, n, out, &tokens);
	qc_budget_count(tokens);
	call->audit_extra = psprintf("%s, \"total_tokens\": " INT64_FORMAT, call->audit_extra, tokens);
	call->chars = 0;
	call->outcome = QC_OUTCOME_OK;
	return tokens;
}
