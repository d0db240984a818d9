/*-------------------------------------------------------------------------
 *
 * asyncrun.h
 *	  Running asynchronous requests on behalf of the roles that queued them
 *	  (asyncrun.c): the role's identity and settings, the calls, the retry
 *	  decision, the final state and the callback.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ASYNCRUN_H
#define QC_ASYNCRUN_H

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "utils/jsonb.h"

/* What became of a request in this pass. */
typedef enum QcAsyncOutcome
{
	QC_ASYNC_PENDING,			/* not run yet */
	QC_ASYNC_DONE,				/* final: done */
	QC_ASYNC_FAILED,			/* final: failed */
	QC_ASYNC_RETRY,				/* retrying, at next_at */
	QC_ASYNC_WAIT,				/* queued again at next_at, the attempt not counted */
	QC_ASYNC_CANCELLED			/* cancelled earlier: only its callback is due */
} QcAsyncOutcome;

/* One claimed row of queryclaw.requests, and what became of it. */
typedef struct QcAsyncRequest
{
	int64		id;
	Oid			role;
	char	   *func;			/* web_fetch_async, api_call_async, ... */
	Jsonb	   *args;			/* the arguments as given */
	char	   *callback;		/* its signature, or NULL */
	Jsonb	   *context;
	char	   *idempotency_key;
	int			attempts;		/* this attempt included */
	bool		has_secrets;	/* a request_secrets row to delete */
	bool		cancel_seen;	/* cancelled since it was claimed */
	char	   *query;			/* the enqueuing statement, redacted, or NULL */

	QcAsyncOutcome outcome;
	TimestampTz next_at;		/* RETRY and WAIT */
	char	   *waiting;		/* RETRY and WAIT: why, in words a DBA acts on */
	Jsonb	   *result;
	char	   *error;
	char	   *sqlstate;
} QcAsyncRequest;

/*
 * The columns a claim returns, in this order (asyncworker.c's statements
 * name them so): id, role, func, request (the secrets row's when there is
 * one), callback, context, idempotency_key, attempts, has_secrets, query.
 */
extern QcAsyncRequest *qc_async_request_from_tuple(HeapTuple tuple, TupleDesc desc);

/*
 * In a transaction, connected to SPI, as the worker: run the n requests
 * of one role (reqs[0]->role) and record each one's outcome, final or not,
 * with its callback, each in a subtransaction of its own.  Requests whose
 * outcome is already set (recovery, cancellation) are only recorded.
 */
extern void qc_async_run_role(QcAsyncRequest **reqs, int n);

/*
 * The requests whose outcome could not be recorded because a user's
 * transaction held their row (a cancel not yet committed), copied into the
 * current memory context, their outcomes set: a pass records them again
 * through qc_async_run_role.  They stay 'running' meanwhile.
 */
extern QcAsyncRequest **qc_async_take_deferred(int *n);
extern bool qc_async_have_deferred(void);

/*
 * The role that runs the worker's own statements on the queue, inside a
 * security-restricted operation with the pinned settings; InvalidOid
 * while queryclaw.requests does not exist (the extension not created, or
 * release 0.1's objects).
 */
extern Oid	qc_async_statement_role(void);

/* Run fn(arg) as qc_async_statement_role(), with the worker's pinned settings. */
extern void qc_async_as_writer(void (*fn) (void *arg), void *arg);

#endif							/* QC_ASYNCRUN_H */
