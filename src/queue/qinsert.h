/*-------------------------------------------------------------------------
 *
 * qinsert.h
 *	  The insert of a queued request's rows (qinsert.c): requests, and
 *	  request_secrets when the arguments were redacted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_QINSERT_H
#define QC_QINSERT_H

#include "utils/jsonb.h"

/* A request's row as its enqueue function makes it (queue.h). */
typedef struct QcRequestRow
{
	Oid			role;
	const char *func;
	Jsonb	   *request;		/* the arguments as shown (redacted) */
	Jsonb	   *given;			/* as given, when they differ; else NULL */
	const char *callback;		/* the rest NULL when none */
	Jsonb	   *context;
	const char *idempotency_key;
	const char *query;
	const char *waiting;
} QcRequestRow;

/* _PG_init, while preloading: the hooks that close what is kept open. */
extern void qc_queue_insert_init(void);

/*
 * Insert row, admitted first (qc_queue_admit), as the tables' owner in a
 * security-restricted operation; returns its id.  The caller has checked
 * everything else.
 */
extern int64 qc_queue_insert(const QcRequestRow *row);

#endif							/* QC_QINSERT_H */
