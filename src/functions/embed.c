/*-------------------------------------------------------------------------
 *
 * embed.c
 *	  llm_embed(): vectors from an OpenAI-compatible embeddings endpoint.
 *
 * Inputs go in groups of at most queryclaw.embed_batch_size texts, each
 * group one request to the embeddings endpoint (embedreq.c: where it goes,
 * with which key, and how its reply is read).  Every request is a QcCall
 * (func "llm_embed"), audited with the model, the number of inputs and
 * the tokens, and sent under the shared retry policy (endpoint.c): every
 * attempt has its audit row.
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

#include "call.h"
#include "embedreq.h"
#include "guc.h"
#include "onerror.h"

PG_FUNCTION_INFO_V1(llm_embed);
PG_FUNCTION_INFO_V1(llm_embed_many);

/* One request for n inputs, with retries. */
static void
send_group(const QcEmbedTarget *t, char **inputs, int n, ArrayType **out)
{
	QcCall	   *proto = qc_embed_request("llm_embed", t, NULL, inputs, n);
	QcCall	   *call;
	QcAttempts	attempts;

	qc_call_admit_tokens(proto);
	call = qc_endpoint_send(proto, QC_ENDPOINT_EMBED, &attempts);
	(void) qc_embed_read(call, &attempts, n, out);
	qc_call_end(call);
}

/* One group's request, as work under queryclaw.on_error. */
typedef struct GroupWork
{
	const QcEmbedTarget *t;
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
embed_all(const QcEmbedTarget *t, char **inputs, int n)
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
	QcEmbedTarget t;
	char	   *input;
	ArrayType  *embedding;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	qc_embed_target(PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)), &t);
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
	QcEmbedTarget t;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **inputs;
	ArrayType **out;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	qc_embed_target(PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)), &t);
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
