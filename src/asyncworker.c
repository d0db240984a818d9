/*-------------------------------------------------------------------------
 *
 * asyncworker.c
 *	  The async workers: background workers that run the queued requests of
 *	  queryclaw.requests, retry them, record their final states and call
 *	  their callbacks (README, "Asynchronous requests").
 *
 * queryclaw.async_workers of them are registered when the library is
 * preloaded; each connects to queryclaw.database as the audit worker does
 * (bgsession.c: the database's and role's settings cannot steer it) and
 * loops as worker_spi does, waiting on its latch, which a transaction that
 * enqueued sets as it commits (queue.c), or until the next request is due.
 * A pass:
 *
 * 1. claims up to 4 x queryclaw.async_concurrency requests that are due,
 *    oldest first, in a transaction of its own: state 'running', one more
 *    attempt (FOR UPDATE SKIP LOCKED, so workers never claim the same);
 *    the requests of roles for which queryclaw.enabled is off are not
 *    claimed, nor written (claimable_roles);
 * 2. runs them, one role after another (asyncrun.c), in one transaction,
 *    which also records each outcome: final, retrying, or queued again;
 * 3. calls the callbacks of requests cancelled while queued;
 * 4. once a minute (or as often as the retention, when shorter) deletes
 *    finished requests older than queryclaw.async_retention (queue.c).
 *
 * Crashes: a request is 'running' only between its claim and the commit
 * of its outcome.  When the server starts (or restarts after a crash,
 * which restarts every worker), the worker of slot 0 first puts the
 * requests left 'running' back in the queue, as at-least-once delivery
 * wants, except a POST or PATCH without an idempotency key, which may have
 * been sent: it fails, "interrupted; not sent again", its callback called.
 * The other workers claim nothing until that is done.  An error in a pass
 * applies the same rule to the requests of that pass, and the worker goes
 * on a second later.
 *
 * The worker's statements run as queryclaw_writer inside a
 * security-restricted operation with the pinned settings, and name their
 * schema and operators; the requests and callbacks run as their roles.
 *
 * SIGTERM ends the worker after the pass in flight; it exits with code 1,
 * so that the postmaster starts it again (except during a shutdown).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "asyncrun.h"
#include "asyncworker.h"
#include "bgsession.h"
#include "compat.h"
#include "guc.h"
#include "queue.h"
#include "rolesession.h"

#define QC_ASYNC_RESTART_S		5
#define QC_ASYNC_NAP_MS			1000	/* longest sleep between passes */
#define QC_ASYNC_RETRY_MS		1000	/* after a failed pass */
#define QC_ASYNC_CLAIM_FACTOR	4	/* requests claimed per pass, per concurrency */
#define QC_ASYNC_CANCELLED_BATCH 100
#define QC_RETENTION_EVERY_MS	60000	/* or the retention, when shorter */
#define QC_RETENTION_BATCH		10000

PGDLLEXPORT void qc_async_worker_main(Datum main_arg);

static int	my_slot = 0;
static TimestampTz retention_at = 0;
static TimestampTz next_due = 0;	/* when the next queued request is due */

/* The columns a claim returns (asyncrun.h's order). */
#define REQUEST_COLUMNS \
	"r.id, r.role, r.func," \
	" COALESCE((SELECT s.request FROM queryclaw.request_secrets s" \
	" WHERE s.id OPERATOR(pg_catalog.=) r.id), r.request)," \
	" r.callback, r.context, r.idempotency_key, r.attempts," \
	" EXISTS (SELECT FROM queryclaw.request_secrets s WHERE s.id OPERATOR(pg_catalog.=) r.id)," \
	" r.query"

/* A POST or PATCH without an idempotency key, which must not be sent twice. */
#define UNREPEATABLE \
	"(r.func OPERATOR(pg_catalog.=) 'api_call_async' AND r.idempotency_key IS NULL" \
	" AND pg_catalog.upper(r.request OPERATOR(pg_catalog.->>) 'method')" \
	" OPERATOR(pg_catalog.=) ANY ('{POST,PATCH}'::pg_catalog.text[]))"

/* Requests read by a statement, in the pass's memory. */
typedef struct Claimed
{
	MemoryContext cxt;
	int			n;
	QcAsyncRequest **reqs;
} Claimed;

void
qc_asyncworker_init(void)
{
	for (int slot = 0; slot < qc_async_workers; slot++)
		qc_bgsession_register("qc_async_worker_main",
							  psprintf("queryclaw async worker %d", slot),
							  "queryclaw async worker", QC_ASYNC_RESTART_S,
							  Int32GetDatum(slot));
}

/* Keep the rows a statement returned as requests, in c->cxt. */
static void
keep_rows(Claimed *c)
{
	MemoryContext old = MemoryContextSwitchTo(c->cxt);

	c->reqs = palloc(Max(SPI_processed, 1) * sizeof(QcAsyncRequest *));
	c->n = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
		c->reqs[c->n++] = qc_async_request_from_tuple(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc);
	MemoryContextSwitchTo(old);
}

static int
by_role(const void *a, const void *b)
{
	const QcAsyncRequest *ra = *(QcAsyncRequest *const *) a;
	const QcAsyncRequest *rb = *(QcAsyncRequest *const *) b;

	if (ra->role != rb->role)
		return ra->role < rb->role ? -1 : 1;
	return ra->id < rb->id ? -1 : ra->id > rb->id;
}

/* Run (or only record) c's requests, one role after another. */
static void
run_by_role(Claimed *c)
{
	qsort(c->reqs, c->n, sizeof(QcAsyncRequest *), by_role);
	for (int start = 0; start < c->n;)
	{
		int			end = start + 1;

		while (end < c->n && c->reqs[end]->role == c->reqs[start]->role)
			end++;
		qc_async_run_role(c->reqs + start, end - start);
		start = end;
	}
}

/* Run work in a transaction of its own, connected to SPI. */
static void
in_transaction(const char *activity, void (*work) (void *arg), void *arg)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, activity);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	work(arg);
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* ---- claiming ---- */

/* What a claim takes: up to its limit of the due requests of these roles. */
typedef struct ClaimScope
{
	Claimed    *claimed;
	ArrayType  *roles;			/* oid[]: the roles found not paused */
} ClaimScope;

static void next_due_time(void *arg);

static void
claim_rows(void *arg)
{
	ClaimScope *scope = arg;
	Claimed    *c = scope->claimed;
	Datum		limit = Int32GetDatum(qc_async_concurrency * QC_ASYNC_CLAIM_FACTOR);
	Oid			types[2] = {INT4OID, OIDARRAYOID};
	Datum		values[2] = {limit, PointerGetDatum(scope->roles)};
	int			rc;

	rc = SPI_execute_with_args("UPDATE queryclaw.requests r SET state = 'running',"
							   " attempts = r.attempts OPERATOR(pg_catalog.+) 1, waiting = NULL"
							   " WHERE r.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   "  SELECT q.id FROM queryclaw.requests q"
							   "   WHERE q.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
							   "     AND q.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
							   "     AND q.role::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($2)"
							   "   ORDER BY q.next_attempt_at, q.id LIMIT $1 FOR UPDATE SKIP LOCKED))"
							   " RETURNING " REQUEST_COLUMNS,
							   2, types, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim requests: %s", SPI_result_code_string(rc));
	keep_rows(c);
	if (c->n == DatumGetInt32(limit))
		next_due = 0;
	else
		next_due_time(NULL);
}

/*
 * When the next request falls due, after a claim.  One due now is a paused
 * role's (the next nap looks at it again), another worker's (locked), or
 * queued since the roles were read (see claim): none is waited for here.
 */
static void
next_due_time(void *arg)
{
	bool		isnull;
	int			rc;

	rc = SPI_execute("SELECT pg_catalog.min(r.next_attempt_at) FROM queryclaw.requests r"
					 " WHERE r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
					 "   AND r.next_attempt_at OPERATOR(pg_catalog.>) pg_catalog.now()",
					 true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue: %s", SPI_result_code_string(rc));
	next_due = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												 1, &isnull));
	if (isnull)
		next_due = DT_NOEND;
}

#define DUE_OF_ROLE \
	"SELECT r.role::pg_catalog.oid FROM queryclaw.requests r" \
	" WHERE r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])" \
	"   AND r.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"

/*
 * The roles that have due requests, as a List of OIDs.  Read role after
 * role through the index on role (each step the next role with a due
 * request), so that a pass costs the number of roles, not of the requests
 * waiting: a paused role's stay due, however many.
 */
static void
due_roles(void *arg)
{
	int			rc = SPI_execute("WITH RECURSIVE due(role) AS ("
								 " (" DUE_OF_ROLE " ORDER BY r.role LIMIT 1)"
								 " UNION ALL"
								 " SELECT (" DUE_OF_ROLE
								 "   AND r.role::pg_catalog.oid OPERATOR(pg_catalog.>) due.role"
								 "   ORDER BY r.role LIMIT 1)"
								 " FROM due WHERE due.role IS NOT NULL)"
								 " SELECT role FROM due WHERE role IS NOT NULL",
								 true, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue: %s", SPI_result_code_string(rc));
	*(List **) arg = NIL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 1, &isnull));

		*(List **) arg = lappend_oid(*(List **) arg, role);
	}
}

/*
 * The paused roles whose waiting requests say so already (note_pause): a
 * role's are marked once as its pause begins, not at every pass.
 */
static List *marked_paused = NIL;

/*
 * As the worker: requests.waiting of a paused role's waiting requests.  A
 * row a user's transaction holds (a cancel) is skipped, not waited for.
 */
static void
mark_paused_rows(void *arg)
{
	Oid			role = *(Oid *) arg;
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(role),
	CStringGetTextDatum(qc_queue_paused_reason(role))};

	if (SPI_execute_with_args("UPDATE queryclaw.requests u SET waiting = $2"
							  " WHERE u.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							  "  SELECT r.id FROM queryclaw.requests r"
							  "   WHERE r.role::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
							  "   AND r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
							  "   AND r.waiting IS DISTINCT FROM $2"
							  "   FOR UPDATE SKIP LOCKED))",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not mark a paused role's requests");
}

/* Note whether role is paused, marking its requests as its pause begins. */
static void
note_pause(Oid role, bool paused)
{
	MemoryContext old;

	if (!paused)
	{
		marked_paused = list_delete_oid(marked_paused, role);
		return;
	}
	if (list_member_oid(marked_paused, role))
		return;
	qc_async_as_writer(mark_paused_rows, &role);
	old = MemoryContextSwitchTo(TopMemoryContext);
	marked_paused = lappend_oid(marked_paused, role);
	MemoryContextSwitchTo(old);
}

/*
 * The roles whose due requests a pass may claim, as an oid[] (NULL when
 * there are none): not those for
 * which queryclaw.enabled is off, whose requests are left as they are,
 * queued and untouched (a paused queue of any size costs no write), and
 * looked at again at the next pass, at most a nap later.  Only the roles
 * read here are claimed from, so that a request queued since (its role
 * perhaps paused) is not seen running before a pass looks at its role.
 */
static ArrayType *
claimable_roles(List **due)
{
	List	   *roles = NIL;
	Datum	   *going;
	int			ngoing = 0;
	ListCell   *lc;

	qc_async_as_writer(due_roles, &roles);
	*due = roles;
	going = palloc(Max(list_length(roles), 1) * sizeof(Datum));
	foreach(lc, roles)
	{
		Oid			role = lfirst_oid(lc);

		/* a dropped role's requests go, to fail for that reason */
		bool		paused = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)) &&
			qc_role_paused(role);

		note_pause(role, paused);
		if (!paused)
			going[ngoing++] = ObjectIdGetDatum(role);
	}
	if (ngoing == 0)
		return NULL;
	return construct_array(going, ngoing, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

/* Has a role with due requests come since the roles in seen were read? */
static bool
new_due_role(List *seen)
{
	List	   *roles = NIL;
	ListCell   *lc;

	qc_async_as_writer(due_roles, &roles);
	foreach(lc, roles)
		if (!list_member_oid(seen, lfirst_oid(lc)))
			return true;
	return false;
}

static void
claim(void *arg)
{
	List	   *seen;
	ClaimScope	scope = {arg, claimable_roles(&seen)};

	/* with none, no index scan passes over a paused queue's requests */
	if (scope.roles != NULL)
		qc_async_as_writer(claim_rows, &scope);
	else
		qc_async_as_writer(next_due_time, NULL);
	/* its requests were not claimed: the next pass looks at its role now */
	if (next_due != 0 && new_due_role(seen))
		next_due = 0;
}

static void
run_claimed(void *arg)
{
	run_by_role(arg);
}

/* ---- recovery ---- */

/* The ids of c's requests as an int8[], or NULL for all. */
static Datum
ids_array(const Claimed *c)
{
	Datum	   *ids = palloc(Max(c->n, 1) * sizeof(Datum));

	for (int i = 0; i < c->n; i++)
		ids[i] = Int64GetDatum(c->reqs[i]->id);
	return PointerGetDatum(construct_array(ids, c->n, INT8OID, 8, true, TYPALIGN_DOUBLE));
}

/*
 * Requests left 'running' (all of them, or only those of the pass that
 * failed, c->n > 0): back in the queue; the unrepeatable ones are read
 * into c, to be failed.  A row a user's transaction holds (a cancel not
 * yet committed) is skipped, not waited for: that cancel ends it.
 */
static void
requeue_running(void *arg)
{
	Claimed    *c = arg;
	Oid			type = INT8ARRAYOID;
	Datum		ids = c->n > 0 ? ids_array(c) : (Datum) 0;
	const char *nulls = c->n > 0 ? " " : "n";
	int			rc;

	rc = SPI_execute_with_args("UPDATE queryclaw.requests u SET state = 'queued',"
							   " next_attempt_at = pg_catalog.now()"
							   " WHERE u.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   "  SELECT r.id FROM queryclaw.requests r"
							   "   WHERE r.state OPERATOR(pg_catalog.=) 'running' AND NOT " UNREPEATABLE
							   "   AND ($1 IS NULL OR r.id OPERATOR(pg_catalog.=) ANY ($1))"
							   "   FOR UPDATE SKIP LOCKED))",
							   1, &type, &ids, nulls, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "could not queue interrupted requests again: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
		ereport(LOG,
				(errmsg("queryclaw async worker queued %llu interrupted request(s) again",
						(unsigned long long) SPI_processed)));
	rc = SPI_execute_with_args("SELECT " REQUEST_COLUMNS " FROM queryclaw.requests r"
							   " WHERE r.state OPERATOR(pg_catalog.=) 'running' AND " UNREPEATABLE
							   " AND ($1 IS NULL OR r.id OPERATOR(pg_catalog.=) ANY ($1))"
							   " FOR UPDATE SKIP LOCKED",
							   1, &type, &ids, nulls, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read interrupted requests: %s", SPI_result_code_string(rc));
	keep_rows(c);
}

static void
recover(void *arg)
{
	Claimed    *c = arg;

	qc_async_as_writer(requeue_running, c);
	for (int i = 0; i < c->n; i++)
	{
		c->reqs[i]->outcome = QC_ASYNC_FAILED;
		c->reqs[i]->error = "interrupted; not sent again";
		c->reqs[i]->sqlstate = pstrdup(unpack_sql_state(ERRCODE_OPERATOR_INTERVENTION));
	}
	if (c->n > 0)
		ereport(LOG,
				(errmsg("queryclaw async worker failed %d interrupted POST or PATCH request(s)", c->n),
				 errdetail("They may have been sent, and carry no idempotency key: they are not sent again.")));
	run_by_role(c);
}

/* Slot 0 recovers once per server start; the others wait for it. */
static bool
recovered(MemoryContext cxt)
{
	QcQueueShared *shared = qc_queue_shared();
	bool		done;

	SpinLockAcquire(&shared->mutex);
	done = shared->recovered;
	SpinLockRelease(&shared->mutex);
	if (done || my_slot != 0)
		return done;
	{
		Claimed		c = {cxt, 0, NULL};

		in_transaction("recovering interrupted requests", recover, &c);
	}
	SpinLockAcquire(&shared->mutex);
	shared->recovered = true;
	SpinLockRelease(&shared->mutex);
	return true;
}

/* ---- outcomes held back, cancelled requests and retention ---- */

/* Outcomes a user's transaction held back in an earlier pass: recorded now. */
static void
record_deferred(void *arg)
{
	Claimed    *c = arg;
	MemoryContext old = MemoryContextSwitchTo(c->cxt);

	c->reqs = qc_async_take_deferred(&c->n);
	MemoryContextSwitchTo(old);
	run_by_role(c);
}

static void
read_cancelled(void *arg)
{
	Claimed    *c = arg;
	int			rc;

	rc = SPI_execute("SELECT " REQUEST_COLUMNS " FROM queryclaw.requests r"
					 " WHERE r.state OPERATOR(pg_catalog.=) 'cancelled' AND r.finished_at IS NULL"
					 " LIMIT " CppAsString2(QC_ASYNC_CANCELLED_BATCH) " FOR UPDATE SKIP LOCKED",
					 false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read cancelled requests: %s", SPI_result_code_string(rc));
	keep_rows(c);
}

static void
finish_cancelled(void *arg)
{
	Claimed    *c = arg;

	qc_async_as_writer(read_cancelled, c);
	for (int i = 0; i < c->n; i++)
		c->reqs[i]->outcome = QC_ASYNC_CANCELLED;
	run_by_role(c);
}

static void
purge(void *arg)
{
	(void) qc_queue_purge(QC_RETENTION_BATCH);
}

static void
purge_as_writer(void *arg)
{
	qc_async_as_writer(purge, arg);
}

/* ---- the loop ---- */

/* After a failed pass: its requests left 'running' go back (or fail). */
static void
release(Claimed *c)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		in_transaction("releasing requests of a failed pass", recover, c);
	}
	PG_CATCH();
	{
		/* left 'running': the next server start recovers them */
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
}

static void
find_queue(void *arg)
{
	*(bool *) arg = OidIsValid(qc_async_statement_role());
}

/*
 * How often retention is applied: once a minute, or as often as the
 * retention itself when it is shorter, so that a short one is kept to.
 */
static long
retention_every_ms(void)
{
	int64		ms = qc_async_retention_us / 1000;

	return (ms > 0 && ms < QC_RETENTION_EVERY_MS) ? (long) ms : QC_RETENTION_EVERY_MS;
}

/*
 * One pass (see the file header); true when there may be more to do now.
 * c gets the requests it claimed, for safe_pass when the pass fails.
 */
static bool
pass(Claimed *c)
{
	bool		busy = false;
	bool		present = false;

	in_transaction("looking for the queue", find_queue, &present);
	if (!present)
	{
		next_due = DT_NOEND;	/* no queue here yet: a commit wakes us */
		return false;
	}
	if (!recovered(c->cxt))
		return false;
	if (qc_async_have_deferred())
	{
		in_transaction("recording outcomes held back", record_deferred, c);
		qc_queue_notify_finished();
		c->n = 0;
	}
	in_transaction("claiming requests", claim, c);
	if (c->n > 0)
	{
		in_transaction("running requests", run_claimed, c);
		qc_queue_notify_finished();
		busy = true;
	}
	c->n = 0;
	in_transaction("calling the callbacks of cancelled requests", finish_cancelled, c);
	if (c->n > 0)
		qc_queue_notify_finished();
	busy |= (c->n == QC_ASYNC_CANCELLED_BATCH);
	c->n = 0;
	if (GetCurrentTimestamp() >= retention_at)
	{
		in_transaction("applying queryclaw.async_retention", purge_as_writer, NULL);
		retention_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), retention_every_ms());
	}
	return busy;
}

/* A pass; an error is logged, and the pass's requests released. */
static bool
safe_pass(MemoryContext cxt)
{
	volatile bool busy = false;
	Claimed		c = {cxt, 0, NULL};

	PG_TRY();
	{
		busy = pass(&c);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		pgstat_report_activity(STATE_IDLE, NULL);
		if (c.n > 0)
			release(&c);
		next_due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), QC_ASYNC_RETRY_MS);
	}
	PG_END_TRY();
	MemoryContextReset(cxt);
	return busy;
}

/* Sleep until the latch is set, the next request is due, or a nap passed. */
static void
wait_for_work(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = QC_ASYNC_NAP_MS;

	if (next_due != DT_NOEND && next_due > now)
		ms = Min(ms, (long) ((next_due - now) / 1000) + 1);
	else if (next_due != DT_NOEND)
		ms = 0;
	if (ms <= 0)
		return;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, qc_wait_event(QC_WAIT_ASYNC_WORKER));
}

void
qc_async_worker_main(Datum main_arg)
{
	MemoryContext cxt;

	my_slot = DatumGetInt32(main_arg);
	qc_bgsession_start(qc_database);
	qc_queue_attach_worker(my_slot);
	cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw async worker pass",
								ALLOCSET_DEFAULT_SIZES);
	ereport(LOG,
			(errmsg("queryclaw async worker %d started in database \"%s\"", my_slot, qc_database)));

	while (!qc_bgsession_stop)
	{
		if (qc_bgsession_next_pass())
			retention_at = 0;	/* a new retention applies at once */
		if (!safe_pass(cxt))
			wait_for_work();
	}
	proc_exit(1);
}
