/*-------------------------------------------------------------------------
 *
 * embedreq.h
 *	  A request to the embeddings endpoint (embedreq.c), shared by
 *	  llm_embed() and the queue's embedding jobs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_EMBEDREQ_H
#define QC_EMBEDREQ_H

#include "utils/array.h"

#include "call.h"
#include "endpoint.h"
#include "servers.h"

/* The endpoint and the model a request goes to. */
typedef struct QcEmbedTarget
{
	QcEndpointBase base;		/* embed_url (embed_server), else llm_url's */
	const char *model;
	const char *key;			/* or NULL */
} QcEmbedTarget;

/*
 * The endpoint, model and key for model (NULL or "": the configured one);
 * 55000 when none is configured.
 */
extern void qc_embed_target(const char *model, QcEmbedTarget *t);

/*
 * The request embedding inputs[0..n-1], audited as func, its audit row's
 * detail holding prefix's members (or none, for NULL), the model and the
 * number of inputs.  The caller admits its tokens and sends it.
 */
extern QcCall *qc_embed_request(const char *func, const QcEmbedTarget *t,
								const char *prefix, char **inputs, int n);

/*
 * Read the reply to a request of n inputs into out[0..n-1] (real[] each):
 * raises when the endpoint failed or the reply is not an embeddings list;
 * counts its tokens against the role's budget, adds them (and the
 * attempt, after the first) to the call's audit detail, and sets its
 * outcome.  Returns the tokens.  The caller ends the call.
 */
extern int64 qc_embed_read(QcCall *call, const QcAttempts *attempts, int n, ArrayType **out);

#endif							/* QC_EMBEDREQ_H */
