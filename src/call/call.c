/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The owner of a call's life: it admits the call, starts it on the
 *	  transport, takes its failure or its result, and audits it, once.
 *
 * The checks return verdicts (policy.c, ratelimit.c, budget.c) and the
 * other layers write what they find on the call (callrec.h); none of them
 * audits or raises.  Here:
 *
 * - admission, asked by the transport just before a call starts: room for
 *   its audit row in the durable queue (audit.c) — later, if calls of the
 *   batch in flight will free some — then the rate limit's verdict;
 * - the end of the transfer: a failure is audited at once; a response is
 *   handed to the caller's shaping (QcCallDone, or the caller of
 *   qc_call_run), and audited when that is done (qc_call_end);
 * - a query cancel during the transfer: the calls in flight are audited as
 *   cancelled on the error path (qc_audit_interrupted);
 * - a single call's failure is raised (qc_call_raise), after its audit.
 *
 * QcCall.audited makes "once" hold whichever of these comes first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "audit.h"
#include "budget.h"
#include "call.h"
#include "charset.h"
#include "http.h"
#include "ratelimit.h"
#include "redact.h"
#include "serversadmit.h"

/* One run of the transport: what to do with each call as it ends. */
typedef struct CallRun
{
	QcCallDone	on_done;		/* the caller's shaping, or NULL */
	void	   *arg;
	bool		end_each;		/* audit a call with a response once shaped */
	const QcCallWatch *watch;	/* the caller's, or NULL */
} CallRun;

/* The transport's admit hook (http.h). */
static QcAdmission
admit_call(QcCall *call, bool others_in_flight, void *arg)
{
	QcVerdict	verdict;
	const char *message;
	char	   *detail;
	const char *hint;

	/* a server's concurrency cap, before any room is taken */
	if (qc_server_admit_slot(call, others_in_flight) == QC_SERVER_LATER)
		return QC_ADMIT_LATER;
	switch (qc_audit_begin(call, others_in_flight))
	{
		case QC_AUDIT_ROOM:
			break;
		case QC_AUDIT_DEFER:
			return QC_ADMIT_LATER;
		case QC_AUDIT_NO_ROOM:
			qc_audit_queue_full(call->timeout_ms, call->timeout_setting,
								&message, &detail, &hint);
			qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_INSUFFICIENT_RESOURCES,
								message, detail, hint);
			/* nothing was sent, and there is no room for its row */
			call->audited = true;
			return QC_ADMIT_ENDED;
	}
	if (!qc_ratelimit_admit(&verdict))
	{
		qc_call_set_refusal(call, &verdict);
		return QC_ADMIT_ENDED;
	}
	/* servers_only, the server's rate limit, the mapping put on the call */
	if (qc_server_admit(call) == QC_SERVER_REFUSED)
		return QC_ADMIT_ENDED;
	return QC_ADMIT_START;
}

/*
 * The transport's done hook.  A failure is audited before the caller sees
 * it; a response keeps a record for an unexpected end (a cancel while it is
 * shaped: audit.c) and is audited once shaped.
 */
static void
call_ended(QcCall *call, void *arg)
{
	CallRun    *run = arg;

	qc_server_release(call);
	qc_server_redact_response(call);
	if (call->error_code != 0)
		qc_call_end(call);
	else
		qc_audit_response(call);
	if (run->on_done)
		run->on_done(call, run->arg);
	if (run->end_each)
		qc_call_end(call);
}

/* The transport's interrupted hook: on the error path, so no catalogs. */
static void
call_interrupted(QcCall *call, void *arg)
{
	qc_server_release(call);
	if (call->audited)
		return;
	call->audited = true;
	qc_audit_interrupted(call);
}

/* The transport's watch and abandoned hooks: the caller's, if any. */
static bool
watch_calls(void *arg)
{
	CallRun    *run = arg;

	return run->watch->watch(run->arg);
}

static bool
call_abandoned(QcCall *call, void *arg)
{
	CallRun    *run = arg;

	return run->watch->abandoned(call, run->arg);
}

/* Set in a callback worker and the enrichment worker: see qc_call_refuse_sending. */
static QcSendingRefusal sending_refused = QC_SENDING_ALLOWED;

void
qc_call_refuse_sending(QcSendingRefusal refusal)
{
	sending_refused = refusal;
}

/* The refusal of a run of calls (func: the first's) where sending is refused. */
static void
refuse_sending(const char *func)
{
	if (sending_refused == QC_SENDING_IN_ENRICHMENT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s cannot send a request inside an enrichment's request expression", func),
				 errdetail("The request expression is evaluated in the worker that feeds the enrichments of every role: it may read the database, not wait for the network."),
				 errhint("Make the call the enrichment's request (web_fetch_request, api_call_request, llm_request), or fill the column it reads with an enrichment of its own.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s cannot send a request inside a callback of an asynchronous request",
					func),
			 errdetail("A callback runs in the transaction that records its request's final state, in a worker that runs the callbacks of every role: it may read and write the database and queue requests, not wait for the network."),
			 errhint("Queue the request from the callback instead, with api_call_async, web_fetch_async or llm_chat_tools_async and a callback of its own.")));
}

static void
run_calls(QcCall **calls, int ncalls, int concurrency, CallRun *run)
{
	QcTransportHooks hooks = {admit_call, call_ended, call_interrupted,
		run->watch ? watch_calls : NULL, run->watch ? call_abandoned : NULL, NULL, run};

	if (sending_refused != QC_SENDING_ALLOWED && ncalls > 0)
		refuse_sending(calls[0]->func);
	qc_http_execute_many(calls, ncalls, concurrency, &hooks);
}

void
qc_call_run_many(QcCall **calls, int ncalls, int concurrency,
				 QcCallDone on_done, void *arg)
{
	qc_call_run_watched(calls, ncalls, concurrency, on_done, NULL, arg);
}

void
qc_call_run_watched(QcCall **calls, int ncalls, int concurrency,
					QcCallDone on_done, const QcCallWatch *watch, void *arg)
{
	CallRun		run = {on_done, arg, true, watch};

	run_calls(calls, ncalls, concurrency, &run);
}

QcAdmission
qc_call_admit_detached(QcCall *call)
{
	QcAdmission admission = admit_call(call, true, NULL);

	if (admission == QC_ADMIT_START)
		qc_audit_detach(call);
	return admission;
}

/*
 * A fed run's done hook: the record for an unexpected end is made now (no
 * catalog needed), the rest is the owner's, in a transaction.
 */
static void
fed_call_ended(QcCall *call, void *arg)
{
	const QcCallFeed *fed = arg;

	qc_server_release(call);
	qc_server_redact_response(call);
	qc_audit_response(call);
	fed->on_done(call, fed->arg);
}

static int
fed_calls(QcCall **calls, int room, void *arg)
{
	const QcCallFeed *fed = arg;

	return fed->feed(calls, room, fed->arg);
}

static bool
fed_watch(void *arg)
{
	const QcCallFeed *fed = arg;

	return fed->watch->watch(fed->arg);
}

static bool
fed_abandoned(QcCall *call, void *arg)
{
	const QcCallFeed *fed = arg;

	return fed->watch->abandoned(call, fed->arg);
}

void
qc_call_run_fed(int concurrency, const QcCallFeed *feed)
{
	QcTransportHooks hooks = {NULL, fed_call_ended, call_interrupted,
		feed->watch ? fed_watch : NULL, feed->watch ? fed_abandoned : NULL,
	fed_calls, (void *) feed};

	qc_http_execute_many(NULL, 0, concurrency, &hooks);
}

bool
qc_call_run(QcCall *call)
{
	return qc_call_run_one_watched(call, NULL, NULL);
}

bool
qc_call_run_one_watched(QcCall *call, const QcCallWatch *watch, void *arg)
{
	CallRun		run = {NULL, arg, false, watch};

	run_calls(&call, 1, 1, &run);
	return call->error_code == 0;
}

void
qc_call_execute(QcCall *call)
{
	if (!qc_call_run(call))
		qc_call_raise(call);
}

bool
qc_call_admit(QcCall *call)
{
	QcVerdict	verdict;

	if (qc_ratelimit_admit(&verdict))
		return true;
	qc_call_set_refusal(call, &verdict);
	return false;
}

void
qc_call_admit_tokens(QcCall *call)
{
	QcVerdict	verdict;

	if (qc_budget_admit(&verdict))
		return;
	qc_call_set_refusal(call, &verdict);
	qc_call_raise(call);
}

void
qc_call_end(QcCall *call)
{
	if (call->audited)
		return;
	call->audited = true;
	/* a response nothing judged otherwise: its status says */
	if (call->outcome == NULL)
		call->outcome = qc_call_status_ok(call) ? QC_OUTCOME_OK : QC_OUTCOME_HTTP_ERROR;
	qc_audit_call(call);
}

void
qc_call_raise(QcCall *call)
{
	qc_call_end(call);
	ereport(ERROR,
			(errcode(call->error_code),
			 errmsg_internal("%s", call->reason),
			 call->error_detail ? errdetail_internal("%s", call->error_detail) : 0,
			 call->error_hint ? errhint("%s", call->error_hint) : 0));
	pg_unreachable();
}

void
qc_call_fail(QcCall *call, const char *outcome, int sqlerrcode,
			 const char *message, const char *detail, const char *hint)
{
	qc_call_set_failure(call, outcome, sqlerrcode, message, detail, hint);
	qc_call_raise(call);
}

const char *
qc_call_api_reply(QcCall *call, const char *what, const char *key_hint,
				  const char *note)
{
	const char *text = qc_redact_keys(qc_to_server_text(call->response_body, call->response_len,
														qc_content_type_charset(call->content_type)));

	if (!qc_call_status_ok(call))
	{
		char	   *quote = qc_text_quote(text);

		qc_call_fail(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
					 psprintf("HTTP status %ld from %s", call->status, what),
					 note[0] ? psprintf("%s %s", note, quote ? quote : "") : quote,
					 call->status == 401 || call->status == 403 ? key_hint : NULL);
	}
	return text;
}

void
qc_call_drop_response(QcCall *call)
{
	if (call->response_body != NULL)
		pfree(call->response_body);
	if (call->response_headers != NULL)
		pfree(call->response_headers);
	call->response_body = call->response_headers = NULL;
}
