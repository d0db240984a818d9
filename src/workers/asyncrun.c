/*-------------------------------------------------------------------------
 *
 * asyncrun.c
 *	  Running an asynchronous request on behalf of the role that queued it,
 *	  from its claim to its recorded outcome: a flight (asyncrun.h).  The
 *	  worker (asyncworker.c) claims, feeds the calls to the transport and
 *	  hands back what ended; this file does the rest, a role's flights at a
 *	  time, inside the worker's short transactions.
 *
 * A role's requests run as a session of that role would run them
 * (README, "Asynchronous requests"):
 *
 * - In the role's scope (rolesession.c): its stored settings over the
 *   server's, at a GUC nest level, its identity inside a security-
 *   restricted operation; leaving the scope undoes all of it, so nothing
 *   leaks from one role's requests to another's.  Each call carries the
 *   policy it was made under (QcCall.policy): the calls of several roles
 *   share the wire, outside any scope.
 * - The role must still exist and have EXECUTE on the async function and
 *   on the callback; otherwise the request fails with that reason.
 * - Calls are built as the synchronous twin builds them (api_call's
 *   validation, web_fetch's GET), admitted (audit room, rate limit) as
 *   the role, audited under the async function's name with the request id
 *   and attempt in the detail.
 *
 * Budgets and pauses make a request wait, never fail: while
 * queryclaw.enabled is off for the role, while its max_calls_per_hour or
 * max_tokens_per_day is spent, until its host's token bucket has its
 * token (hostrate.c), or while the role has max_host_concurrency calls out
 * to its host, the request goes back to the queue with next_attempt_at set
 * and its attempt not counted.
 *
 * Each outcome is recorded as the worker (qc_async_as_writer: as
 * queryclaw_writer with the pinned settings): a final state, or, for a
 * request with a callback, the outcome handed to the callback workers
 * (callbackworker.c), which call the callback and make the request final
 * in one transaction (queue.h).  No callback runs here: the worker's run
 * of requests goes on while they run, and none of them can reach its
 * transfers.  A request cancelled while it ran (its row no longer
 * 'running') keeps no result: a callback worker gives its callback the
 * error 'cancelled'.
 *
 * What is stored is what the callback gets: one value, redacted as the
 * audit log redacts, when the outcome is set (set_final).  The URLs, the
 * response's Location, Set-Cookie and other secret-looking headers, an LLM
 * request's tool-call URLs, and every value of a secret the request sent
 * (URL credentials and parameters, secret headers) wherever the server or
 * the model echoed it, in the result or in the error.  queryclaw_admin
 * reads the rows for async_retention; the caller who wants the secrets
 * back has them in its own arguments.
 *
 * An llm_chat_tools_async request is a job of the tool loop (llmjob.c),
 * stepped between its rounds: its model requests and its tool calls' HTTP
 * requests go out in the same slots as every other request, and no
 * transaction is open while they are on the wire.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "api.h"
#include "audit.h"
#include "asyncrun.h"
#include "bgsession.h"
#include "compat.h"
#include "guc.h"
#include "handoff.h"
#include "hostrate.h"
#include "call.h"
#include "cluster.h"
#include "http.h"
#include "json.h"
#include "llmjob.h"
#include "policy.h"
#include "proclookup.h"
#include "queue.h"
#include "ratelimit.h"
#include "redact.h"
#include "response.h"
#include "retry.h"
#include "rolesession.h"
#include "serversadmit.h"
#include "subxact.h"

#define QC_WRITER_ROLE			"queryclaw_writer"
/* how long a request waits while the role may not call */
#define QC_PAUSE_MS				1000
#define QC_BUDGET_WAIT_MS		60000
#define QC_CALLS_WAIT_MAX_MS	300000	/* see set_calls_wait */

/* The functions a role needs EXECUTE on, by the name a request carries. */
static const struct
{
	const char *func;
	const char *signature;
}			async_functions[] =
{
	{"web_fetch_async", "queryclaw.web_fetch_async(text,text,integer,regprocedure,jsonb)"},
	{"api_call_async", "queryclaw.api_call_async(text,text,jsonb,text,integer,regprocedure,jsonb,text)"},
	{"llm_chat_tools_async", "queryclaw.llm_chat_tools_async(text,text[],text,text,integer,jsonb,regprocedure,jsonb)"},
	{"enrichment_embed_async", "queryclaw.enrichment_embed_async(text,text,regprocedure,jsonb)"},
};

/* ---- reading a claimed row ---- */

static Datum
column(HeapTuple tuple, TupleDesc desc, int n, bool *isnull)
{
	return SPI_getbinval(tuple, desc, n, isnull);
}

QcAsyncRequest *
qc_async_request_from_tuple(HeapTuple tuple, TupleDesc desc)
{
	QcAsyncRequest *r = palloc0(sizeof(QcAsyncRequest));
	bool		isnull;
	Datum		d;

	r->id = DatumGetInt64(column(tuple, desc, 1, &isnull));
	r->role = DatumGetObjectId(column(tuple, desc, 2, &isnull));
	r->func = SPI_getvalue(tuple, desc, 3);
	r->args = DatumGetJsonbPCopy(column(tuple, desc, 4, &isnull));
	r->callback = SPI_getvalue(tuple, desc, 5);
	d = column(tuple, desc, 6, &isnull);
	r->context = isnull ? NULL : DatumGetJsonbPCopy(d);
	r->idempotency_key = SPI_getvalue(tuple, desc, 7);
	r->attempts = DatumGetInt32(column(tuple, desc, 8, &isnull));
	r->has_secrets = DatumGetBool(column(tuple, desc, 9, &isnull));
	r->query = SPI_getvalue(tuple, desc, 10);
	r->outcome = QC_ASYNC_PENDING;
	return r;
}

/* ---- outcomes ---- */

/*
 * Set a request's outcome, its result and error redacted as the audit log
 * redacts (qc_response_redact, qc_redact_echo) and cleared of the secrets
 * the request sent wherever a server or a model echoed them: every path
 * (done, failed, retrying with the response kept, an LLM request's tool
 * calls) comes through here, and this one value is both stored and given
 * to the callback.  r's copies are made in the current memory context; the
 * work is freed.
 */
static void
set_final(QcAsyncRequest *r, QcAsyncOutcome outcome, Jsonb *result,
		  const char *error, int sqlerrcode, List *secrets)
{
	MemoryContext keep = CurrentMemoryContext;
	MemoryContext work = AllocSetContextCreate(keep, "queryclaw redaction",
											   ALLOCSET_DEFAULT_SIZES);

	MemoryContextSwitchTo(work);
	result = result ? qc_response_redact(result, secrets) : NULL;
	error = error ? qc_redact_echo(error, secrets) : NULL;
	MemoryContextSwitchTo(keep);
	r->outcome = outcome;
	r->result = result ? (Jsonb *) PG_DETOAST_DATUM_COPY(PointerGetDatum(result)) : NULL;
	r->error = error ? pstrdup(error) : NULL;
	r->sqlstate = sqlerrcode ? pstrdup(unpack_sql_state(sqlerrcode)) : NULL;
	MemoryContextDelete(work);
}

static void
set_failed(QcAsyncRequest *r, int sqlerrcode, const char *error)
{
	set_final(r, QC_ASYNC_FAILED, NULL, error, sqlerrcode, NIL);
}

/*
 * Back to the queue until after_ms from now, waiting says why; the attempt
 * does not count.
 */
static void
set_wait(QcAsyncRequest *r, int64 after_ms, char *waiting)
{
	r->outcome = QC_ASYNC_WAIT;
	r->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), after_ms);
	r->waiting = waiting;
}

/*
 * max_calls_per_hour spent: wait until the window lets a call go (reopens),
 * at least a minute and at most QC_CALLS_WAIT_MAX_MS.  A role that calls
 * steadily frees a call every few seconds, for one request of all those
 * waiting: the minute keeps them from all being read again each time.  One
 * that spent its hour in a burst has its waiting requests read again every
 * few minutes, not every minute, and still soon after a superuser raised
 * its limit.
 */
static void
set_calls_wait(QcAsyncRequest *r, TimestampTz reopens)
{
	TimestampTz now = GetCurrentTimestamp();

	set_wait(r, QC_BUDGET_WAIT_MS,
			 psprintf("max_calls_per_hour %d spent until %s",
					  qc_cluster_share(qc_max_calls_per_hour),
					  timestamptz_to_str(reopens)));
	r->next_at = Max(r->next_at,
					 Min(reopens, TimestampTzPlusMilliseconds(now, QC_CALLS_WAIT_MAX_MS)));
}

/* ---- the role's functions ---- */

/* A function a role's requests name, found and checked once per run. */
typedef struct ProcCheck
{
	const char *signature;
	Oid			fn;				/* InvalidOid: there is none */
	bool		executable;		/* by the role, under the latest snapshot */
} ProcCheck;

/*
 * The check of signature for role, from checks (a List of ProcCheck *, in
 * the current memory context), made and added when it is not there yet:
 * a role's requests name the same few functions, and each check reads
 * pg_proc under a new snapshot.
 */
static const ProcCheck *
check_proc(List **checks, const char *signature, Oid role)
{
	ProcCheck  *check;
	ListCell   *lc;

	foreach(lc, *checks)
	{
		check = lfirst(lc);
		if (strcmp(check->signature, signature) == 0)
			return check;
	}
	check = palloc(sizeof(ProcCheck));
	check->signature = signature;
	check->fn = qc_proc_by_signature(signature);
	check->executable = OidIsValid(check->fn) && qc_proc_executable(check->fn, role);
	*checks = lappend(*checks, check);
	return check;
}

/* Why the role may not run the request, or NULL; sets *callback. */
static char *
refusal(QcAsyncRequest *r, List **checks, Oid *callback)
{
	const char *sig = NULL;
	const ProcCheck *check;

	*callback = InvalidOid;
	for (int i = 0; i < lengthof(async_functions); i++)
		if (strcmp(async_functions[i].func, r->func) == 0)
			sig = async_functions[i].signature;
	if (sig == NULL || !OidIsValid((check = check_proc(checks, sig, r->role))->fn))
		return psprintf("function %s does not exist", r->func);
	if (!check->executable)
		return psprintf("permission denied for function %s", r->func);
	if (r->callback == NULL)
		return NULL;
	check = check_proc(checks, r->callback, r->role);
	if (!OidIsValid(check->fn))
		return psprintf("callback %s does not exist", r->callback);
	if (!check->executable)
		return psprintf("permission denied for callback %s", r->callback);
	*callback = check->fn;
	return NULL;
}

/* ---- the worker's own statements ---- */

Oid
qc_async_statement_role(void)
{
	Oid			nsp = get_namespace_oid("queryclaw", true);

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("requests", nsp)))
		return InvalidOid;
	return get_role_oid(QC_WRITER_ROLE, true);
}

void
qc_async_as_writer(void (*fn) (void *arg), void *arg)
{
	Oid			save_userid;
	int			save_sec_context;
	int			nest = NewGUCNestLevel();
	Oid			writer = qc_async_statement_role();

	if (!OidIsValid(writer))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"queryclaw.requests\" does not exist in database \"%s\"",
						qc_database),
				 errhint("Run ALTER EXTENSION queryclaw_ext UPDATE in that database.")));
	qc_bgsession_repin();
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(writer, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	fn(arg);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	AtEOXact_GUC(true, nest);
}

/*
 * Statements on one request, prepared once per worker.  Each names the row
 * by its id alone, after STMT_LOCK locked it and read its state: so that
 * the only index that fits is the primary key's, whatever the statistics
 * say.  (With "AND state = 'running'", the generic plan of a drained and
 * vacuumed queue scanned 0.2's index of open requests whole, whose
 * predicate that implies.)
 */
enum
{
	STMT_LOCK,
	STMT_EXISTS,
	STMT_RETRY,
	STMT_WAIT,
	STMT_SECRETS,
	STMT_COUNT
};

static const char *const statements[STMT_COUNT] = {
	[STMT_LOCK] = "SELECT state FROM queryclaw.requests WHERE id OPERATOR(pg_catalog.=) $1"
	" FOR UPDATE SKIP LOCKED",
	[STMT_EXISTS] = "SELECT FROM queryclaw.requests WHERE id OPERATOR(pg_catalog.=) $1",
	[STMT_RETRY] = "UPDATE queryclaw.requests SET state = 'retrying', next_attempt_at = $2,"
	" result = $3, error = $4, sqlstate = $5, waiting = $6"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	[STMT_WAIT] = "UPDATE queryclaw.requests SET state = 'queued', next_attempt_at = $2,"
	" attempts = attempts OPERATOR(pg_catalog.-) 1, waiting = $6"
	" WHERE id OPERATOR(pg_catalog.=) $1",
	[STMT_SECRETS] = "DELETE FROM queryclaw.request_secrets WHERE id OPERATOR(pg_catalog.=) $1",
};

static const int nargs[STMT_COUNT] = {1, 1, 6, 6, 1};
static const Oid argtypes[6] = {INT8OID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID};
static const Oid retry_types[6] = {INT8OID, TIMESTAMPTZOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID};

/* One statement's rows affected (or returned). */
static uint64
execute(int stmt, Datum *values, const char *nulls)
{
	static SPIPlanPtr plans[STMT_COUNT];
	int			rc;

	qc_queue_plan(&plans[stmt], statements[stmt], nargs[stmt],
				  (Oid *) (stmt == STMT_RETRY || stmt == STMT_WAIT ? retry_types : argtypes));
	rc = SPI_execute_plan(plans[stmt], values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE && rc != SPI_OK_DELETE && rc != SPI_OK_SELECT)
		elog(ERROR, "could not update queryclaw.requests: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/* What one request's record needs, through qc_async_as_writer. */
typedef struct Record
{
	QcAsyncRequest *r;
	bool		deferred;		/* out: a user's transaction holds the row */
	bool		gone;			/* out: the row was deleted meanwhile */
} Record;

/*
 * Lock the request's row, never waiting, and return its state.  A user's
 * transaction that holds it (cancel_requests, retry_requests, not yet
 * committed) must not make the worker wait: such a row is left for a
 * later pass (deferred), and NULL returned; so for a row that is gone (a
 * DBA deleted it), which has nothing left to record.
 */
static char *
lock_row(Record *rec, Datum *values)
{
	if (execute(STMT_LOCK, values, NULL) == 1)
		return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	rec->gone = (execute(STMT_EXISTS, values, NULL) == 0);
	rec->deferred = !rec->gone;
	return NULL;
}

/*
 * Record r's retry or its wait on its row, if it is still 'running' (the
 * final outcomes are handoff.c's).  A row cancelled meanwhile keeps no
 * result: its callback, if any, is the callback workers'.
 */
static void
record_outcome(void *arg)
{
	Record	   *rec = arg;
	QcAsyncRequest *r = rec->r;
	Datum		values[6] = {Int64GetDatum(r->id)};
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	char	   *state;

	values[2] = PointerGetDatum(r->result);
	nulls[2] = r->result ? ' ' : 'n';
	values[3] = r->error ? CStringGetTextDatum(r->error) : (Datum) 0;
	nulls[3] = r->error ? ' ' : 'n';
	values[4] = r->sqlstate ? CStringGetTextDatum(r->sqlstate) : (Datum) 0;
	nulls[4] = r->sqlstate ? ' ' : 'n';
	values[5] = r->waiting ? CStringGetTextDatum(r->waiting) : (Datum) 0;
	nulls[5] = r->waiting ? ' ' : 'n';
	if ((state = lock_row(rec, values)) == NULL)
		return;
	if (strcmp(state, "running") == 0)
	{
		if (r->outcome == QC_ASYNC_CANCELLED)
			return;				/* cancelled and put back since: not ours */
		values[1] = TimestampTzGetDatum(r->next_at);
		(void) execute(r->outcome == QC_ASYNC_RETRY ? STMT_RETRY : STMT_WAIT, values, nulls);
		return;
	}
	if (r->outcome == QC_ASYNC_RETRY || r->outcome == QC_ASYNC_WAIT)
		return;					/* the cancel keeps its secrets' deletion */
	if (r->has_secrets)
		(void) execute(STMT_SECRETS, values, nulls);
}

/* ---- outcomes kept for a later pass ---- */

/* A flight with no request yet, in a memory context of its own below parent. */
static QcAsyncFlight *
new_flight(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "queryclaw async request",
											  ALLOCSET_SMALL_SIZES);
	QcAsyncFlight *f = MemoryContextAllocZero(cxt, sizeof(QcAsyncFlight));

	f->cxt = cxt;
	return f;
}

/* The requests whose outcome waits for a user's transaction to end. */
static MemoryContext deferred_cxt = NULL;
static List *deferred = NIL;

static Jsonb *
copy_jsonb(const Jsonb *j)
{
	Jsonb	   *copy;

	if (j == NULL)
		return NULL;
	/* binary: it holds NUL bytes, so no string copy will do */
	copy = palloc(VARSIZE(j));
	memcpy(copy, j, VARSIZE(j));
	return copy;
}

static char *
copy_text(const char *s)
{
	return s ? pstrdup(s) : NULL;
}

/* A copy of r, in the current memory context. */
static QcAsyncRequest *
copy_request(const QcAsyncRequest *r)
{
	QcAsyncRequest *c = palloc(sizeof(QcAsyncRequest));

	*c = *r;
	c->func = copy_text(r->func);
	c->args = copy_jsonb(r->args);
	c->callback = copy_text(r->callback);
	c->context = copy_jsonb(r->context);
	c->idempotency_key = copy_text(r->idempotency_key);
	c->result = copy_jsonb(r->result);
	c->error = copy_text(r->error);
	c->sqlstate = copy_text(r->sqlstate);
	c->query = copy_text(r->query);
	c->waiting = copy_text(r->waiting);
	return c;
}

static void
defer(const QcAsyncRequest *r)
{
	MemoryContext old;

	if (deferred_cxt == NULL)
		deferred_cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw deferred outcomes",
											 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(deferred_cxt);
	deferred = lappend(deferred, copy_request(r));
	MemoryContextSwitchTo(old);
}

bool
qc_async_have_deferred(void)
{
	return deferred != NIL;
}

QcAsyncFlight **
qc_async_take_deferred(MemoryContext parent, int *n)
{
	QcAsyncFlight **flights = palloc(Max(list_length(deferred), 1) * sizeof(QcAsyncFlight *));
	ListCell   *lc;

	*n = 0;
	foreach(lc, deferred)
	{
		QcAsyncFlight *f = new_flight(parent);
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		f->r = copy_request(lfirst(lc));
		MemoryContextSwitchTo(old);
		flights[(*n)++] = f;
	}
	deferred = NIL;
	if (deferred_cxt != NULL)
		MemoryContextReset(deferred_cxt);
	return flights;
}

/*
 * As the worker: record one request's retry or wait (the final outcomes
 * go to handoff.c together).  A request whose row a user's transaction
 * holds is kept for a later pass (qc_async_take_deferred).
 */
static void
finish(QcAsyncRequest *r)
{
	Record		rec = {.r = r};

	record_outcome(&rec);
	if (rec.deferred)
		defer(r);
}

/* ---- running the calls ---- */

/* The retry settings, as the role has them (retry_max: the call's server's). */
static QcRetrySettings
retry_settings(const QcCall *call)
{
	QcRetrySettings s = {qc_server_retry_max(call, qc_retry_max), qc_retry_base_delay,
	qc_retry_max_delay};

	return s;
}

/* A retryable failure: again after a while, or failed with note. */
static void
retry_or_fail(QcAsyncRequest *r, const QcCall *call, int64 retry_after_ms, const char *what)
{
	QcRetrySettings s = retry_settings(call);
	int64		wait_ms = 0;

	/* the server's Retry-After is honoured up to retry_max_delay */
	if (retry_after_ms > s.max_delay_ms)
		retry_after_ms = s.max_delay_ms;
	if (qc_retry_next(&s, r->attempts, retry_after_ms, s.max_delay_ms,
					  pg_prng_double(&pg_global_prng_state), &wait_ms) == QC_RETRY_WAIT)
	{
		r->outcome = QC_ASYNC_RETRY;
		r->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
		r->waiting = psprintf("retry %d of %d after %s%s", r->attempts, s.max_retries, what,
							  retry_after_ms >= 0 ?
							  psprintf(" (Retry-After %lld s)", (long long) (retry_after_ms / 1000)) : "");
		return;
	}
	r->outcome = QC_ASYNC_FAILED;
	r->error = psprintf("%s after %d %s", what, r->attempts,
						r->attempts == 1 ? "attempt" : "attempts");
	if (r->sqlstate == NULL)
		r->sqlstate = pstrdup(unpack_sql_state(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION));
}

/* The outcome of a call that ended (shaped already into r's final fields). */
static void
decide(QcAsyncRequest *r, QcCall *call)
{
	QcRetryTarget target = {QC_ENDPOINT_OTHER, call->method, r->idempotency_key != NULL};
	int64		after_ms = -1;

	if (call->error_code == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED)
		set_calls_wait(r, call->retry_at);	/* spent meanwhile */
	else if (call->error_code == ERRCODE_INSUFFICIENT_RESOURCES && call->status == 0)
		set_wait(r, QC_PAUSE_MS, pstrdup("no room in the audit queue (queryclaw.audit_queue_size)"));
	else if (call->status == 0 && call->error_code != 0)
	{
		bool		connect = call->error_code == ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION;
		bool		transfer = call->error_code == ERRCODE_CONNECTION_FAILURE;

		if ((connect || transfer) &&
			qc_retry_failure(&target, connect ? QC_FAILED_CONNECT : QC_FAILED_TRANSFER))
			retry_or_fail(r, call, -1, r->error);
	}
	else if (call->status != 0 && qc_retry_status(&target, call->status))
	{
		(void) qc_retry_after_header(call->response_headers ? call->response_headers : "",
									 time(NULL), &after_ms);
		retry_or_fail(r, call, after_ms, psprintf("HTTP status %ld", call->status));
	}
}

/* Shape a call that ended into its flight's outcome, and audit it. */
static void
shape_call(QcAsyncFlight *f, QcCall *call)
{
	QcAsyncRequest *r = f->r;
	MemoryContext work = AllocSetContextCreate(f->cxt, "queryclaw async response",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);
	Jsonb	   *result = NULL;
	const char *error;
	List	   *secrets;

	if (strcmp(r->func, "api_call_async") == 0)
		result = qc_api_result(call);
	else
	{
		char	   *text = qc_fetch_result(call, (QcFormat) f->format);

		if (text != NULL)
		{
			StringInfoData s;

			initStringInfo(&s);
			appendStringInfoString(&s, "{\"content\": ");
			escape_json(&s, text);
			appendStringInfoChar(&s, '}');
			result = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data)));
		}
	}
	/* shaping may have failed too: the error is read once it is done */
	error = qc_call_error_text(call);
	secrets = qc_call_secret_set(call);
	MemoryContextSwitchTo(f->cxt);
	set_final(r, result ? QC_ASYNC_DONE : QC_ASYNC_FAILED, result, error,
			  call->error_code, secrets);
	decide(r, call);
	MemoryContextSwitchTo(work);
	qc_call_end(call);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	qc_call_drop_response(call);
}

/* A text member of the arguments, or NULL. */
static char *
arg_text(QcAsyncRequest *r, const char *key)
{
	return qc_jsonb_get_string(&r->args->root, key);
}

/*
 * What an audit row of the request's attempt adds to its detail: the
 * request and the attempt, as one object, so that an attempt of the LLM
 * endpoint within it ("attempt", as in a direct call) keeps its own key;
 * and for an enrichment's request (its callback is the enrichments' own),
 * the enrichment's name.
 */
static char *
audit_extra(const QcAsyncRequest *r)
{
	char	   *extra = psprintf("\"request\": {\"id\": " INT64_FORMAT ", \"attempt\": %d}",
								 r->id, r->attempts);
	char	   *enrichment;

	if (r->callback != NULL && r->context != NULL &&
		strncmp(r->callback, "queryclaw.enrichment_done(", 26) == 0 &&
		(enrichment = qc_jsonb_get_string(&r->context->root, "enrichment")) != NULL)
	{
		StringInfoData s;

		initStringInfo(&s);
		appendStringInfo(&s, "%s, \"enrichment\": ", extra);
		escape_json(&s, enrichment);
		extra = s.data;
	}
	return extra;
}

/* The call of a web or API request, built as its synchronous twin does. */
static QcCall *
build_call(QcAsyncFlight *f)
{
	QcAsyncRequest *r = f->r;
	int64		max_chars = 0;
	bool		given = qc_jsonb_get_int64(&r->args->root, "max_chars", &max_chars);
	QcCall	   *call;

	if (strcmp(r->func, "api_call_async") == 0)
	{
		JsonbContainer *headers = qc_jsonb_get_object(&r->args->root, "headers");
		char	   *method = arg_text(r, "method");

		call = qc_api_prepare(r->func, arg_text(r, "url"), method ? method : "GET",
							  headers ? JsonbValueToJsonb(qc_jsonb_get(&r->args->root, "headers")) : NULL,
							  arg_text(r, "body"),
							  qc_clamp_max_chars(given, (int) Min(max_chars, PG_INT32_MAX)));
		if (r->idempotency_key != NULL)
			call->headers = qc_http_add_header(call->headers, "Idempotency-Key",
											   r->idempotency_key);
	}
	else
	{
		char	   *format = arg_text(r, "format");

		f->format = (int) qc_format_parse(format ? format : "text");
		call = qc_call_new(r->func, "GET", arg_text(r, "url"));
		call->max_chars = qc_clamp_max_chars(given, (int) Min(max_chars, PG_INT32_MAX));
	}
	call->audit_extra = audit_extra(r);
	call->query = r->query;
	return call;
}

/* A call to build, and the call built. */
typedef struct Build
{
	QcAsyncFlight *f;
	QcCall	   *call;
} Build;

static void
build(void *arg)
{
	Build	   *b = arg;

	b->call = build_call(b->f);
}

/* A role's claimed requests whose calls are built together. */
typedef struct BuildAll
{
	QcAsyncFlight **flights;
	int			n;
	QcCall	  **calls;			/* out: flights[i]'s, or NULL */
} BuildAll;

static void
build_all(void *arg)
{
	BuildAll   *b = arg;

	for (int i = 0; i < b->n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(b->flights[i]->cxt);

		b->calls[i] = build_call(b->flights[i]);
		MemoryContextSwitchTo(old);
	}
}

/* Does r run as a job (a model's loop, an embedding) rather than one call? */
static bool
runs_as_job(const QcAsyncRequest *r)
{
	return strcmp(r->func, QC_FUNC_LLM_CHAT_TOOLS_ASYNC) == 0 ||
		strcmp(r->func, QC_FUNC_ENRICHMENT_EMBED_ASYNC) == 0;
}

/*
 * The calls of the plain requests among flights, built in one
 * subtransaction: built[i] is flights[i]'s, or NULL (not plain, or one of
 * them failed: each is then built in its own subtransaction, so that
 * invalid arguments fail their request alone).  A subtransaction for each
 * cost the worker about 2 % of its CPU at 256 in flight.
 */
static QcCall **
build_plain_calls(QcAsyncFlight **flights, int n)
{
	BuildAll	b = {palloc(n * sizeof(QcAsyncFlight *)), 0, palloc(n * sizeof(QcCall *))};
	QcCall	  **built = palloc0(n * sizeof(QcCall *));

	for (int i = 0; i < n; i++)
		if (flights[i]->r->outcome == QC_ASYNC_PENDING && !runs_as_job(flights[i]->r))
			b.flights[b.n++] = flights[i];
	if (b.n > 0 && qc_subxact_try(build_all, &b) == NULL)
		for (int i = 0, j = 0; i < n && j < b.n; i++)
			if (flights[i] == b.flights[j])
				built[i] = b.calls[j++];
	return built;
}

/*
 * Build a call in a subtransaction, in the flight's memory: invalid
 * arguments fail the request alone.
 */
static QcCall *
try_build_call(QcAsyncFlight *f)
{
	Build		b = {f, NULL};
	MemoryContext old = MemoryContextSwitchTo(f->cxt);
	ErrorData  *edata = qc_subxact_try(build, &b);

	if (edata != NULL)
		set_failed(f->r, edata->sqlerrcode, edata->message);
	MemoryContextSwitchTo(old);
	return b.call;
}

/* A table of the worker's, for as long as it lives, keyed by its bytes. */
static HTAB *
worker_hash(const char *name, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * The requests this worker put back in the queue with a token promised by
 * their host's bucket: when they come back they go without asking again.
 * (Another worker, or this one after a restart, asks again: the request
 * waits one more turn, never goes over the rate.)
 */
static HTAB *host_promised = NULL;
static HTAB *server_promised = NULL;	/* the same, for a server's rate_limit */

static bool
take_promise(HTAB **promised, int64 id)
{
	bool		found = false;

	if (*promised != NULL)
		(void) hash_search(*promised, &id, HASH_REMOVE, &found);
	return found;
}

static void
note_promise(HTAB **promised, int64 id)
{
	if (*promised == NULL)
		*promised = worker_hash("queryclaw promised tokens", sizeof(int64), sizeof(int64));
	(void) hash_search(*promised, &id, HASH_ENTER, NULL);
}

/*
 * May the request go now, as far as its host's rate goes?  Otherwise it
 * waits for the token promised to it.
 */
static bool
host_admits(QcAsyncRequest *r, QcCall *call)
{
	char	   *rate;
	const char *host = qc_call_host(call);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz go_at;

	/* an unparsable URL ends at once in the transport */
	if (take_promise(&host_promised, r->id) || host[0] == '\0' ||
		qc_hostrate_admit(host, now, &go_at))
		return true;
	note_promise(&host_promised, r->id);
	r->outcome = QC_ASYNC_WAIT;
	r->next_at = go_at;
	rate = qc_hostrate_limit_text(host);
	r->waiting = psprintf("host rate limit %s=%s", host, rate ? rate : "?");
	return false;
}

/*
 * The same for the rate_limit of the server the call is under
 * (servers.h), the token taken here so that the call's admission does not
 * ask again.
 */
static bool
server_admits(QcAsyncRequest *r, QcCall *call)
{
	TimestampTz go_at;

	if (take_promise(&server_promised, r->id))
	{
		qc_server_rate_promised(call);
		return true;
	}
	if (qc_server_rate_admit(call, GetCurrentTimestamp(), &go_at))
		return true;
	note_promise(&server_promised, r->id);
	r->outcome = QC_ASYNC_WAIT;
	r->next_at = go_at;
	r->waiting = psprintf("server rate limit %s=%s", call->server->name,
						  call->server->opts.rate_text);
	return false;
}

/* ---- the calls each host has on the wire ---- */

/*
 * A role's calls out to a host from this worker, and how long the host's
 * responses take: at queryclaw.max_host_concurrency (the role's: the
 * transport caps every role's together at the worker's), a request waits
 * in the queue (not on the wire, so "running" means sent) for about one
 * response time of the host's; the worker then claims fewer requests at a
 * time (qc_async_blocked_count).
 */
typedef struct HostLoadKey
{
	Oid			role;
	char		host[QC_HOST_MAX + 1];
} HostLoadKey;

typedef struct HostLoad
{
	HostLoadKey key;
	int			out;
	bool		ahead;			/* it admits calls claimed ahead, as of its
								 * last admission (ahead_allowed) */
	double		mean_ms;		/* of its responses, smoothed; 0 before the first */
	TimestampTz busy_since;		/* when out last went from none to one */
} HostLoad;

/*
 * All hosts' calls out, and those of them to hosts that do not admit calls
 * claimed ahead (see qc_async_ahead_fits).
 */
static int	calls_out = 0;
static int	calls_out_plain = 0;

#define QC_HOST_MIN_WAIT_MS		10

/* Requests put back for a host's concurrency since the worker last asked. */
static int	blocked_count = 0;

/* The worker's max_host_concurrency, which the transport holds all roles to. */
static int	worker_host_cap = 0;

static HTAB *host_loads = NULL;

static HostLoad *
host_load(Oid role, const char *host)
{
	HostLoadKey key;
	bool		found;
	HostLoad   *h;

	if (host_loads == NULL)
		host_loads = worker_hash("queryclaw host loads", sizeof(HostLoadKey), sizeof(HostLoad));
	memset(&key, 0, sizeof(key));
	key.role = role;
	strlcpy(key.host, host, sizeof(key.host));
	h = hash_search(host_loads, &key, HASH_ENTER, &found);
	if (!found)
	{
		h->out = 0;
		h->ahead = false;
		h->mean_ms = 0;
		h->busy_since = 0;
	}
	return h;
}

/* One more call of h's out (delta 1), or one fewer (-1), counted. */
static void
count_out(HostLoad *h, int delta)
{
	h->out += delta;
	calls_out += delta;
	if (!h->ahead)
		calls_out_plain += delta;
}

int
qc_async_ahead(void)
{
	return Min(qc_async_concurrency / 4, QC_ASYNC_AHEAD_MAX);
}

/*
 * The calls a host admits beyond the role's cap of them: those claimed
 * ahead, which wait in the transport, not on the wire, when the transport
 * holds every role's calls to the host to the same cap (the role's
 * max_host_concurrency is the worker's or more).  A role with a lower cap
 * is held to it here alone, and a slow host's requests would wait a long
 * time for the wire, shown as running.  No more than the cap: another
 * role's call to the host, queued in the transport behind them, then waits
 * at most one more of the host's turns.
 */
static int
ahead_allowed(const HostLoad *h, int cap)
{
	bool		quick = h->mean_ms > 0 && h->mean_ms < QC_ASYNC_QUICK_HOST_MS;

	return quick && qc_max_host_concurrency >= worker_host_cap ? Min(qc_async_ahead(), cap) : 0;
}

/*
 * Has the call's host room for one more call of this worker's?  Otherwise
 * the request waits (see HostLoad).
 */
static bool
host_has_room(QcAsyncRequest *r, QcCall *call)
{
	HostLoad   *h = host_load(r->role, qc_call_host(call));
	int			cap = qc_cluster_share(Min(qc_max_host_concurrency, worker_host_cap));
	int			allowed = ahead_allowed(h, cap);

	/* its calls out count among those that keep the worker from claiming ahead */
	if (h->ahead != (allowed > 0))
	{
		h->ahead = allowed > 0;
		calls_out_plain += h->ahead ? -h->out : h->out;
	}
	if (h->out < cap + allowed)
		return true;
	/*
	 * Before its first response, the host takes at least as long as its
	 * oldest call has been out: a slow host's waiting requests are read
	 * again less and less often, not every few milliseconds.
	 */
	set_wait(r, Max((int64) (h->mean_ms > 0 ? h->mean_ms :
							 (GetCurrentTimestamp() - h->busy_since) / 1000),
					QC_HOST_MIN_WAIT_MS),
			 psprintf("host concurrency %d reached", cap));
	blocked_count++;
	return false;
}

/*
 * Would requests claimed ahead go out?  Only while every call out is to a
 * host that admits them: otherwise a claim ahead would put its requests
 * back for the host's concurrency (two row writes each, and while
 * requests wait to come due again, another worker with free slots does not
 * see them).  Counted as calls are admitted and end, and as a host's
 * verdict changes.
 */
bool
qc_async_ahead_fits(void)
{
	return calls_out > 0 && calls_out_plain == 0;
}

int
qc_async_blocked_count(void)
{
	int			n = blocked_count;

	blocked_count = 0;
	return n;
}

void
qc_async_hosts_reset(void)
{
	blocked_count = 0;
	calls_out = 0;
	calls_out_plain = 0;
	if (host_loads != NULL)
		hash_destroy(host_loads);
	host_loads = NULL;
}

void
qc_async_call_ended(QcCall *call)
{
	QcAsyncFlight *f = call->owner;
	HostLoad   *h = host_load(f->r->role, qc_call_host(call));
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	count_out(h, -1);
	if (call->status != 0)
		h->mean_ms = h->mean_ms == 0 ? call->elapsed_ms :
			0.8 * h->mean_ms + 0.2 * call->elapsed_ms;
	f->out--;
	f->ended = lappend(f->ended, call);
	MemoryContextSwitchTo(old);
}

/* Why a call's admission said "later": its server's cap, or the audit queue. */
static char *
later_reason(QcCall *call)
{
	if (call->server != NULL && qc_server_admit_slot(call, true) == QC_SERVER_LATER)
		return psprintf("server %s concurrency %d reached", call->server->name,
						call->server->opts.max_concurrency);
	return pstrdup("no room in the audit queue (queryclaw.audit_queue_size)");
}

/*
 * Admit a call of the flight's and count it out (appended to *calls), or
 * end it at once: a refusal (the rate limit's, taken in as the call's
 * outcome), or no room yet (its server's concurrency cap, the audit
 * queue): a web or API request then waits a moment in the queue, not
 * sent; a call of an LLM request's job is held in the flight and admitted
 * again at the next step (llm_continue), the job's other calls going on.
 */
static void
send_call(QcAsyncFlight *f, QcCall *call, List **calls)
{
	HostLoad   *h;

	/* what the call keeps (a refusal's words) outlives the transaction */
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	call->owner = f;
	switch (qc_call_admit_detached(call))
	{
		case QC_ADMIT_START:
			f->out++;
			if (f->job == NULL)
				f->call = call;
			h = host_load(f->r->role, qc_call_host(call));
			if (h->out == 0)
				h->busy_since = GetCurrentTimestamp();
			count_out(h, 1);
			*calls = lappend(*calls, call);
			MemoryContextSwitchTo(old);
			return;
		case QC_ADMIT_LATER:
			if (f->job == NULL)
			{
				/* not sent: the request waits a moment, the claims slow down */
				set_wait(f->r, QC_HOST_MIN_WAIT_MS, later_reason(call));
				blocked_count++;
			}
			else
				f->held = lappend(f->held, call);
			MemoryContextSwitchTo(old);
			return;
		case QC_ADMIT_ENDED:
			break;
	}
	f->ended = lappend(f->ended, call);
	MemoryContextSwitchTo(old);
}

/* ---- LLM requests ---- */

/* Starting one LLM request: the request, and the job made of it. */
typedef struct LlmStart
{
	QcAsyncRequest *r;
	QcLlmJob   *job;
} LlmStart;

/* The request's job, its arguments checked as llm_chat_tools checks them. */
static void
start_llm(void *arg)
{
	LlmStart   *s = arg;

	s->job = qc_llm_job_from_request(s->r->args, audit_extra(s->r), s->r->query, s->r);
}

/* An LLM request that raised fails, or waits when a budget is spent. */
static void
llm_failed(QcAsyncRequest *r, const ErrorData *edata)
{
	if (edata->sqlerrcode == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED)
		set_wait(r, QC_BUDGET_WAIT_MS,	/* a budget spent: wait, never fail */
				 psprintf("max_tokens_per_day %d spent",
						  qc_cluster_share(qc_max_tokens_per_day)));
	else
		set_failed(r, edata->sqlerrcode, edata->message);
}

/* The calls of an LLM request's job that were held, admitted again. */
static void
llm_resend(QcAsyncFlight *f, List **calls)
{
	List	   *held = f->held;
	ListCell   *lc;

	f->held = NIL;
	foreach(lc, held)
		send_call(f, lfirst(lc), calls);
	list_free(held);
}

/* The next calls of an LLM request's job, sent. */
static void
llm_next(QcAsyncFlight *f, List **calls)
{
	MemoryContext old = MemoryContextSwitchTo(f->cxt);
	List	   *next = qc_llm_job_calls(f->job);
	ListCell   *lc;

	foreach(lc, next)
		send_call(f, lfirst(lc), calls);
	list_free(next);
	MemoryContextSwitchTo(old);
}

/* The job is over: its result or its error is the request's outcome. */
static void
llm_settle(QcAsyncFlight *f)
{
	QcLlmJob   *job = f->job;
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	if (qc_llm_job_error(job) != NULL)
		llm_failed(f->r, qc_llm_job_error(job));
	else
		set_final(f->r, QC_ASYNC_DONE, qc_llm_job_result(job), NULL, 0,
				  qc_llm_job_secrets(job));
	qc_llm_job_free(job);
	f->job = NULL;
	MemoryContextSwitchTo(old);
}

/* The flight's calls that ended, each ended (audited once), and let go. */
static void
end_calls(QcAsyncFlight *f)
{
	ListCell   *lc;

	foreach(lc, f->ended)
		qc_call_end(lfirst(lc));
	list_free(f->ended);
	f->ended = NIL;
}

/*
 * The calls an LLM request's job sent have all ended: each audited as it
 * would be in a direct call (a failure before the job reads it, a response
 * once read), the job moved on.
 */
static void
llm_take(QcAsyncFlight *f)
{
	ListCell   *lc;

	foreach(lc, f->ended)
	{
		QcCall	   *call = lfirst(lc);

		if (call->error_code != 0)
			qc_call_end(call);
	}
	qc_llm_job_take(f->job);
	end_calls(f);
	qc_llm_job_advance(f->job);
}

/*
 * The job's step ended part-sent (calls held, then a cancel or a stop):
 * the calls that ran are audited, those held, never sent, are dropped.
 */
static void
llm_drop_step(QcAsyncFlight *f)
{
	end_calls(f);
	list_free(f->held);
	f->held = NIL;
}

/*
 * An LLM request between two steps of its job: a request cancelled
 * meanwhile stops; a worker that is stopping puts it back in the queue,
 * to start again (an LLM request is repeatable); calls held for room are
 * admitted again, and the step waits for them; a job that is over
 * settles; else its next calls go once its wait is over.
 */
static void
llm_continue(QcAsyncFlight *f, List **calls)
{
	bool		stopping = f->r->cancel_seen || qc_bgsession_stop;

	if (f->held != NIL && !stopping)
	{
		llm_resend(f, calls);
		if (f->held != NIL || f->out > 0)
			return;
	}
	if (f->held != NIL)
		llm_drop_step(f);
	else if (f->ended != NIL)
		llm_take(f);
	if (stopping)
	{
		qc_llm_job_free(f->job);
		f->job = NULL;
		if (f->r->cancel_seen)
			f->r->outcome = QC_ASYNC_CANCELLED;
		else
			set_wait(f->r, 0, NULL);
		return;
	}
	if (!qc_llm_job_done(f->job) && qc_llm_job_not_before(f->job) <= GetCurrentTimestamp())
		llm_next(f, calls);
	if (qc_llm_job_done(f->job) && f->out == 0 && f->ended == NIL)
		llm_settle(f);
}

/*
 * Before anything is built: the pauses that make all of the role's
 * requests wait, and the refusals that fail one; each flight gets its
 * callback.  Flights whose outcome is set already (recovered, cancelled)
 * only get their callback.
 */
static void
admit(QcAsyncFlight **flights, int n)
{
	Oid			role = flights[0]->r->role;
	bool		role_exists = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role));
	int64		calls_left = PG_INT64_MAX;
	TimestampTz reopens = 0;
	List	   *checks = NIL;

	if (role_exists && qc_max_calls_per_hour > 0)
	{
		int64		used = qc_ratelimit_used(role);

		calls_left = used < 0 ? 0 : qc_cluster_share(qc_max_calls_per_hour) - used;
	}
	for (int i = 0; i < n; i++)
	{
		QcAsyncRequest *r = flights[i]->r;
		Oid		   *callback = &flights[i]->callback;
		char	   *why;

		*callback = InvalidOid;
		if (r->outcome != QC_ASYNC_PENDING)
		{
			if (role_exists && refusal(r, &checks, callback) != NULL)
				*callback = InvalidOid;
			continue;
		}
		if (!role_exists)
		{
			set_failed(r, ERRCODE_UNDEFINED_OBJECT,
					   psprintf("role with OID %u does not exist", r->role));
			continue;
		}
		if ((why = refusal(r, &checks, callback)) != NULL)
		{
			set_failed(r, ERRCODE_INSUFFICIENT_PRIVILEGE, why);
			*callback = InvalidOid;
		}
		else if (!qc_enabled)
			set_wait(r, QC_PAUSE_MS, qc_queue_paused_reason(r->role));
		else if (calls_left <= 0)
		{
			if (reopens == 0)
				reopens = qc_ratelimit_reopens(r->role);
			set_calls_wait(r, reopens);
		}
		else
			calls_left--;
	}
	list_free_deep(checks);
}

/* ---- flights ---- */

QcAsyncFlight *
qc_async_flight_new(MemoryContext parent, HeapTuple tuple, TupleDesc desc)
{
	QcAsyncFlight *f = new_flight(parent);
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	f->r = qc_async_request_from_tuple(tuple, desc);
	MemoryContextSwitchTo(old);
	return f;
}

void
qc_async_flight_free(QcAsyncFlight *f)
{
	if (f->job != NULL)
		qc_llm_job_free(f->job);
	MemoryContextDelete(f->cxt);
}

bool
qc_async_flight_over(const QcAsyncFlight *f)
{
	return f->recorded;
}

bool
qc_async_flight_never_sent(const QcAsyncFlight *f)
{
	return f->job == NULL &&
		(f->r->outcome == QC_ASYNC_PENDING || f->r->outcome == QC_ASYNC_WAIT) &&
		(f->call == NULL || !f->call->taken_up);
}

bool
qc_async_flight_ready(const QcAsyncFlight *f, TimestampTz now)
{
	if (f->recorded || f->out > 0)
		return false;
	/* a worker that stops does not wait for an LLM request's retry */
	return f->ended != NIL ||
		(f->job != NULL && (qc_llm_job_not_before(f->job) <= now || qc_bgsession_stop));
}

/* Take in what ended for a flight with no call out, or move its job on. */
static void
take_in(QcAsyncFlight *f, List **calls)
{
	if (f->job != NULL)
		llm_continue(f, calls);
	else if (f->ended != NIL)
	{
		QcCall	   *call = linitial(f->ended);

		list_free(f->ended);
		f->ended = NIL;
		shape_call(f, call);
	}
}

/* Start a claimed request that may go: its job, or its call. */
static void
start_flight(QcAsyncFlight *f, QcCall *built, List **calls)
{
	QcAsyncRequest *r = f->r;

	if (runs_as_job(r))
	{
		LlmStart	s = {r, NULL};
		MemoryContext old = MemoryContextSwitchTo(f->cxt);
		ErrorData  *edata = qc_subxact_try(start_llm, &s);

		MemoryContextSwitchTo(old);
		if (edata != NULL)
			llm_failed(r, edata);
		else
		{
			f->job = s.job;
			llm_next(f, calls);
		}
	}
	else
	{
		QcCall	   *call = built ? built : try_build_call(f);

		if (call != NULL && host_admits(r, call) && server_admits(r, call) &&
			host_has_room(r, call))
			send_call(f, call, calls);
	}
}

/* The earliest time a request put back since the worker last asked is due. */
static TimestampTz next_wake = 0;

TimestampTz
qc_async_take_next_wake(void)
{
	TimestampTz at = next_wake;

	next_wake = 0;
	return at;
}

/* A role's flights to record, and how many were. */
typedef struct Settled
{
	QcAsyncFlight **flights;
	int			n;
	int		   *done;
} Settled;

static bool
settled(const QcAsyncFlight *f)
{
	return !f->recorded && f->r->outcome != QC_ASYNC_PENDING && f->out == 0 &&
		f->job == NULL && f->ended == NIL;
}

/*
 * As the worker: record each flight whose outcome is set and that has
 * nothing out; the final ones together, made final or, with a callback
 * due, handed to the callback workers (handoff.c).  A failed outcome always
 * has a SQLSTATE: the callback workers tell it from a done one by that.
 */
static void
record_all(void *arg)
{
	Settled    *s = arg;
	QcAsyncRequest **finals = palloc(Max(s->n, 1) * sizeof(QcAsyncRequest *));
	bool	   *handed = palloc(Max(s->n, 1) * sizeof(bool));
	int			nfinals = 0;
	List	   *held = NIL;
	ListCell   *lc;

	for (int i = 0; i < s->n; i++)
	{
		QcAsyncFlight *f = s->flights[i];
		QcAsyncRequest *r = f->r;

		if (!settled(f))
			continue;
		CHECK_FOR_INTERRUPTS();
		if (r->outcome == QC_ASYNC_FAILED && r->sqlstate == NULL)
			r->sqlstate = pstrdup(unpack_sql_state(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION));
		if (r->outcome == QC_ASYNC_DONE || r->outcome == QC_ASYNC_FAILED)
		{
			handed[nfinals] = OidIsValid(f->callback);
			finals[nfinals++] = r;
		}
		else
			finish(r);
		f->recorded = true;
		if ((r->outcome == QC_ASYNC_WAIT || r->outcome == QC_ASYNC_RETRY) &&
			(next_wake == 0 || r->next_at < next_wake))
			next_wake = r->next_at;
		(*s->done)++;
	}
	if (nfinals > 0)
		qc_handoff_record(finals, handed, nfinals, &held);
	foreach(lc, held)
		defer(lfirst(lc));
	pfree(finals);
	pfree(handed);
}

/* Record the settled flights, all in one scope of the worker's. */
static void
record_settled(QcAsyncFlight **flights, int n, int *done)
{
	Settled		s = {flights, n, done};

	for (int i = 0; i < n; i++)
		if (settled(flights[i]))
		{
			qc_async_as_writer(record_all, &s);
			return;
		}
}

void
qc_async_start_role(QcAsyncFlight **flights, int n, List **calls, int *done)
{
	QcRoleSettings *settings;
	QcRoleScope scope;
	QcCall	  **built;

	/*
	 * The catalogs as of the claim: a GRANT or REVOKE committed with the
	 * request (after this transaction took its locks) is seen by the checks
	 * below.
	 */
	AcceptInvalidationMessages();
	settings = qc_role_settings_load(flights[0]->r->role);
	worker_host_cap = qc_max_host_concurrency;
	qc_role_enter(settings, &scope);
	admit(flights, n);
	built = build_plain_calls(flights, n);
	for (int i = 0; i < n; i++)
	{
		if (flights[i]->r->outcome == QC_ASYNC_PENDING)
			start_flight(flights[i], built[i], calls);
		/* a call that ended at once (not admitted) is taken in now */
		if (flights[i]->out == 0 && flights[i]->ended != NIL)
			take_in(flights[i], calls);
	}
	qc_role_leave(&scope);
	record_settled(flights, n, done);
}

void
qc_async_continue_role(QcAsyncFlight **flights, int n, List **calls, int *done)
{
	QcRoleSettings *settings = qc_role_settings_load(flights[0]->r->role);
	QcRoleScope scope;

	qc_role_enter(settings, &scope);
	for (int i = 0; i < n; i++)
		take_in(flights[i], calls);
	qc_role_leave(&scope);
	record_settled(flights, n, done);
}
