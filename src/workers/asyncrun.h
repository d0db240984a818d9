/*-------------------------------------------------------------------------
 *
 * asyncrun.h
 *	  Running asynchronous requests on behalf of the roles that queued them
 *	  (asyncrun.c): the role's identity and settings, the calls, the retry
 *	  decision, and the final state or the hand-off to the callback
 *	  workers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ASYNCRUN_H
#define QC_ASYNCRUN_H

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "utils/jsonb.h"

#include "callrec.h"

/* What became of a request in this pass. */
typedef enum QcAsyncOutcome
{
	QC_ASYNC_PENDING,			/* not run yet */
	QC_ASYNC_DONE,				/* final: done */
	QC_ASYNC_FAILED,			/* final: failed */
	QC_ASYNC_RETRY,				/* retrying, at next_at */
	QC_ASYNC_WAIT,				/* queued again at next_at, the attempt not counted */
	QC_ASYNC_CANCELLED			/* cancelled while it ran: nothing to record */
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
 * A claimed request while the worker has it: from its claim to its
 * recorded outcome.  Everything it needs (its row, its call or its LLM
 * job, their responses) lives in cxt, freed with it.
 */
typedef struct QcAsyncFlight
{
	QcAsyncRequest *r;
	MemoryContext cxt;
	Oid			callback;		/* checked at its start; InvalidOid: none */
	int			format;			/* web_fetch_async's QcFormat */
	struct QcLlmJob *job;		/* an LLM request's */
	List	   *ended;			/* its calls that ended, not yet taken in */
	List	   *held;			/* its job's calls not admitted yet (a
								 * server's cap, the audit queue) */
	int			out;			/* its calls on the wire */
	QcCall	   *call;			/* a web or API request's call, once handed
								 * to the transport (in cxt, as long as f) */
	bool		recorded;		/* its outcome is recorded: it is over */
} QcAsyncFlight;

/*
 * Was f's request never sent in this attempt?  A web or API request whose
 * call the transport never started (still the worker's, or waiting for its
 * host in the transport) and that has no outcome but a wait: after a failed
 * run it goes back to the queue whatever its method.
 */
extern bool qc_async_flight_never_sent(const QcAsyncFlight *f);

/* A new flight for a request claimed now (in its own memory context). */
extern QcAsyncFlight *qc_async_flight_new(MemoryContext parent, HeapTuple tuple,
										  TupleDesc desc);
extern void qc_async_flight_free(QcAsyncFlight *f);

/*
 * In a transaction, connected to SPI, as the worker: start the n flights
 * of one role (flights[0]->r->role) that were just claimed (or, with their
 * outcome set already, only record them: recovery, held-back outcomes): the
 * role's checks, pauses and budgets, then each one's first calls, built as
 * the role, admitted and appended to *calls (each call's owner is its
 * flight).  A flight whose outcome is set meanwhile is recorded at once
 * (with a callback due, handed to the callback workers: handoff.h), and
 * *done counts it.
 */
extern void qc_async_start_role(QcAsyncFlight **flights, int n, List **calls, int *done);

/*
 * In a transaction, as the worker: take in what ended for the n flights
 * of one role (each with no call out, and ended calls or an LLM job whose
 * wait is over): the outcome, recorded at once (with a callback, handed
 * to the callback workers), or the next calls, appended to *calls.  *done
 * counts the flights recorded.
 */
extern void qc_async_continue_role(QcAsyncFlight **flights, int n, List **calls, int *done);

/*
 * A call of a flight's ended (the fed run's done hook, outside any
 * transaction): it waits in the flight, to be taken in.
 */
extern void qc_async_call_ended(QcCall *call);

/*
 * How many requests were put back since the last call because their host
 * had as many of their role's calls out as queryclaw.max_host_concurrency
 * allows: the worker then claims only as many as calls ended, and a few.
 */
extern int	qc_async_blocked_count(void);

/*
 * How many requests a step may claim beyond the slots that are free, while
 * a backlog lasts (asyncworker.c says why): a quarter of
 * queryclaw.async_concurrency, at most QC_ASYNC_AHEAD_MAX.  A quick host
 * (QC_ASYNC_QUICK_HOST_MS) admits as many beyond its role's
 * max_host_concurrency where the transport holds the host to the same cap
 * on the wire.
 */
#define QC_ASYNC_AHEAD_MAX		16
#define QC_ASYNC_QUICK_HOST_MS	100
extern int	qc_async_ahead(void);

/* Would requests claimed ahead now go out (every call out is to such a host)? */
extern bool qc_async_ahead_fits(void);

/*
 * The earliest next_attempt_at of the requests put back (waiting or
 * retrying) since the last call, or 0: when the worker must look again.
 */
extern TimestampTz qc_async_take_next_wake(void);

/* Forget the calls counted out per host (after a failed run dropped them). */
extern void qc_async_hosts_reset(void);

/* Is the flight over (its outcome recorded): the caller frees it. */
extern bool qc_async_flight_over(const QcAsyncFlight *f);

/* Does the flight wait for nothing but time (an LLM job's retry), and until when. */
extern bool qc_async_flight_ready(const QcAsyncFlight *f, TimestampTz now);

/*
 * The requests whose outcome could not be recorded because a user's
 * transaction held their row (a cancel not yet committed), copied into the
 * flights below parent, their outcomes set: recorded again through
 * qc_async_start_role.  They stay 'running' meanwhile.
 */
extern QcAsyncFlight **qc_async_take_deferred(MemoryContext parent, int *n);
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
