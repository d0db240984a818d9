/*-------------------------------------------------------------------------
 *
 * call.h
 *	  The owner of a call's life (call.c): admission, the transport, the
 *	  recorded failure or result, and the one audit row.
 *
 * Every SQL entry point (and the asynchronous worker) runs its calls
 * through these functions, and nothing else audits a call:
 *
 *	 admit		the verdicts (the policy's, in the transport, for every hop;
 *				the rate limit's; the token budget's where it applies) and
 *				room for the audit row
 *	 transport	http.c, asking back through its hooks
 *	 shape		the caller's (response.c, api.c, ...), which writes the
 *				characters returned, or a failure, on the call
 *	 audit		once, as the call ends (qc_call_end)
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CALL_H
#define QC_CALL_H

#include "callrec.h"
#include "http.h"

/*
 * In a worker that runs the SQL of every role and must not wait for the
 * network (a callback worker, the enrichment worker), every run of calls
 * (qc_call_run and the others below, but the fed run) raises 55000 before
 * anything is admitted or sent, saying where it was asked from, with a
 * hint to queue the request instead.
 */
typedef enum QcSendingRefusal
{
	QC_SENDING_ALLOWED = 0,
	QC_SENDING_IN_CALLBACK,		/* a callback of an asynchronous request */
	QC_SENDING_IN_ENRICHMENT	/* an enrichment's request expression */
} QcSendingRefusal;

extern void qc_call_refuse_sending(QcSendingRefusal refusal);

/* Called as each call of a batch ends, in completion order. */
typedef void (*QcCallDone) (QcCall *call, void *arg);

/*
 * Run many calls, at most concurrency at once (and at most
 * queryclaw.max_host_concurrency to one host): each admitted, sent and, as
 * it ends, handed to on_done (may be NULL) to be shaped, then audited.
 * Failures are recorded on each call, never raised; on_done may record one
 * too.  Only a query cancel or an internal error ends the batch early (the
 * calls in flight are audited as cancelled).
 */
extern void qc_call_run_many(QcCall **calls, int ncalls, int concurrency,
							 QcCallDone on_done, void *arg);

/*
 * What a caller of qc_call_run_watched watches: watch(arg), at the start of
 * the run and every QC_TRANSPORT_WATCH_MS while it runs, says whether it
 * gave up any call since; abandoned(call, arg) which.  A call given up is
 * never sent, or its transfer is aborted, and it ends cancelled (57014),
 * handed to on_done like any other.
 */
typedef struct QcCallWatch
{
	bool		(*watch) (void *arg);
	bool		(*abandoned) (QcCall *call, void *arg);
} QcCallWatch;

/* qc_call_run_many, watched: calls the caller gives up on stop */
extern void qc_call_run_watched(QcCall **calls, int ncalls, int concurrency,
								QcCallDone on_done, const QcCallWatch *watch,
								void *arg);

/*
 * A fed run (the async worker's): the calls come from feed, as slots come
 * free, each admitted already (qc_call_admit_detached); as each ends, it
 * goes to on_done unshaped and unaudited, outside any transaction: its
 * owner shapes it and ends it (qc_call_end) later, in a transaction.  The
 * run ends once nothing is in flight and feed gives nothing (http.h).
 */
typedef struct QcCallFeed
{
	int			(*feed) (QcCall **calls, int room, void *arg);
	QcCallDone	on_done;
	const QcCallWatch *watch;	/* may be NULL */
	void	   *arg;
} QcCallFeed;

extern void qc_call_run_fed(int concurrency, const QcCallFeed *feed);

/*
 * Admit a call that a fed run will send: room for its audit record
 * (never waited for: QC_ADMIT_LATER when there is none yet), then the rate
 * limit's verdict (QC_ADMIT_ENDED, the refusal recorded).  Admitted, its
 * reservation outlives the transaction (qc_audit_detach).
 */
extern QcAdmission qc_call_admit_detached(QcCall *call);

/*
 * Run one call.  Returns true when a response (of any status) arrived: the
 * caller shapes it and ends the call (qc_call_end, or qc_call_raise for a
 * failure of its own).  Returns false with the failure recorded and
 * audited.
 */
extern bool qc_call_run(QcCall *call);

/* qc_call_run, watched as qc_call_run_watched's calls are. */
extern bool qc_call_run_one_watched(QcCall *call, const QcCallWatch *watch,
									void *arg);

/* qc_call_run, raising the failure. */
extern void qc_call_execute(QcCall *call);

/*
 * The rate limit's verdict for a call that does not go through the
 * transport (check_url's lookup); a refusal is recorded on the call.
 */
extern bool qc_call_admit(QcCall *call);

/*
 * The token budget's verdict for a call to the LLM or embeddings endpoint:
 * a refusal is recorded, audited and raised (53400, or 55000 without the
 * preload).
 */
extern void qc_call_admit_tokens(QcCall *call);

/*
 * The call is over, with its result or a failure recorded: audit it, unless
 * that was done already.  Every call ends here or in qc_call_raise.
 */
extern void qc_call_end(QcCall *call);

/* Audit the call (qc_call_end) and raise the failure recorded on it. */
extern void qc_call_raise(QcCall *call) pg_attribute_noreturn();

/* qc_call_set_failure, then qc_call_raise. */
extern void qc_call_fail(QcCall *call, const char *outcome, int sqlerrcode,
						 const char *message, const char *detail,
						 const char *hint) pg_attribute_noreturn();

/*
 * The reply of an API endpoint (embeddings, search) as text in the
 * database encoding, with any configured API key in it replaced; raises
 * 38000, audited as http_error, unless the status is 2xx: "HTTP status N
 * from <what>", note (what the attempts were, or "") and the start of the
 * body in the detail, key_hint as the hint for 401 and 403.
 */
extern const char *qc_call_api_reply(QcCall *call, const char *what,
									 const char *key_hint, const char *note);

/* Free the raw response (body and headers), once it has been shaped. */
extern void qc_call_drop_response(QcCall *call);

#endif							/* QC_CALL_H */
