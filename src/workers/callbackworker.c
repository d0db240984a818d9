/*-------------------------------------------------------------------------
 *
 * callbackworker.c
 *	  The callback workers: background workers that call the callbacks of
 *	  asynchronous requests and make the requests final, apart from the
 *	  async workers that send them (README, "Asynchronous requests").
 *
 * A callback is the role's SQL, and may take up to
 * queryclaw.callback_timeout.  Run inside an async worker's run of
 * requests, it held up every other role's outcomes while it ran, one
 * callback after another, and a network call it made reached the
 * transport whose slots held the other roles' transfers.  So:
 *
 * - An async worker records a request's outcome at once; when there is a
 *   callback to call, it hands the request over with the same one row
 *   update (waiting QC_WAITING_CALLBACK, queue.h) and wakes these workers
 *   as its transaction commits.  A request without a callback never comes
 *   here, nor waits for one.
 * - A callback worker takes the due callbacks QC_CALLBACK_BATCH at a time,
 *   round-robin between roles, the role it served least recently first,
 *   the oldest request first within a role, and commits as soon as the
 *   callbacks it ran took QC_CALLBACK_SLICE_MS: another role's callback
 *   waits for at most one slow callback of a role's, however many are due.
 * - Each callback runs as the async workers ran it: in a subtransaction
 *   with its request's final state, as the role, at a GUC nest level with
 *   the role's stored settings, in a security-restricted operation, within
 *   callback_timeout (rolesession.c); run again on a serialization failure
 *   or a deadlock, QC_CALLBACK_TRIES times at most; whatever it left in the
 *   session dropped after it.  A callback that fails makes the request
 *   failed with its error, the result kept (a cancelled one stays
 *   cancelled).  EXECUTE on it is checked again as it runs; a role dropped
 *   since fails the request.
 * - A callback may queue requests (api_call_async...), but sends none:
 *   qc_call_refuse_sending is on in these workers, so none of queryclaw's
 *   network functions waits for the network inside the transaction that
 *   makes a request final.
 * - The row is locked (FOR UPDATE SKIP LOCKED: two workers never take the
 *   same) by the transaction that calls the callback and makes the request
 *   final; a crash rolls both back, and the callback runs after the
 *   restart.  The request is never sent again: its outcome is stored.
 *
 * One callback worker is registered per async worker.  Their statements
 * run as the async workers' do (qc_async_as_writer).  SIGTERM: the worker
 * finishes the callback under way (callback_timeout bounds it), commits,
 * and exits with code 1, to be started again (except during a shutdown).
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
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "asyncrun.h"
#include "bgsession.h"
#include "call.h"
#include "callbackworker.h"
#include "compat.h"
#include "guc.h"
#include "proclookup.h"
#include "queue.h"
#include "rolesession.h"
#include "subxact.h"

#define QC_CALLBACK_RESTART_S	5
#define QC_CALLBACK_BATCH		64	/* callbacks looked at per transaction */
#define QC_CALLBACK_SLICE_MS	100 /* then the transaction commits */
#define QC_CALLBACK_TRIES		3	/* on a serialization failure, a deadlock */
#define QC_CALLBACK_NAP_MS		1000	/* longest sleep while none is due */
#define QC_CALLBACK_BUSY_MS		250 /* while others hold the due ones */
#define QC_CALLBACK_RETRY_MS	1000	/* after a failed transaction */
#define QC_SERVED_KEPT			256 /* roles remembered as served */

PGDLLEXPORT void qc_callback_worker_main(Datum main_arg);

/* A due callback: its request's row as it is locked, and how it ends. */
typedef struct Due
{
	int64		id;
	Oid			role;
	bool		locked;			/* taken by this worker, still due */
	bool		cancelled;		/* it stays 'cancelled' */
	char	   *callback;		/* its signature */
	Jsonb	   *context;
	Jsonb	   *result;
	char	   *error;
	char	   *sqlstate;
	const char *state;			/* the final state it is given */
} Due;

/* One transaction's work, and what it found. */
typedef struct Batch
{
	bool		absent;			/* no queue in this database (yet) */
	bool		failed;			/* the transaction failed */
	int			found;			/* due callbacks seen */
	int			done;			/* requests made final */
} Batch;

/* The roles whose callbacks this worker ran, least recently first. */
static List *served = NIL;

void
qc_callbackworker_init(void)
{
	for (int slot = 0; slot < qc_async_workers; slot++)
		qc_bgsession_register("qc_callback_worker_main",
							  psprintf("queryclaw callback worker %d", slot),
							  "queryclaw callback worker", QC_CALLBACK_RESTART_S,
							  Int32GetDatum(slot));
}

/* The role's callback ran: it goes last in the next turn. */
static void
note_served(Oid role)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	served = list_delete_oid(served, role);
	if (list_length(served) >= QC_SERVED_KEPT)
		served = list_delete_first(served);
	served = lappend_oid(served, role);
	MemoryContextSwitchTo(old);
}

/* served as an oid[] (NULL when empty). */
static ArrayType *
served_array(void)
{
	Datum	   *roles = palloc(Max(list_length(served), 1) * sizeof(Datum));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, served)
		roles[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return n == 0 ? NULL : construct_array(roles, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

/* The role of a request whose callback is due (through requests_callback_due_idx). */
#define DUE_OF_ROLE \
	"SELECT r.role::pg_catalog.oid FROM queryclaw.requests r" \
	" WHERE r.waiting OPERATOR(pg_catalog.=) '" QC_WAITING_CALLBACK "'"

/*
 * As the worker: up to QC_CALLBACK_BATCH due callbacks, as a List of Due,
 * round-robin between their roles (the first of every role before the
 * second of any), the roles this worker served least recently first.
 * Nothing is locked yet: each is locked as its turn comes (lock_due).
 */
static void
claim_due(void *arg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4OID, OIDARRAYOID};
	ArrayType  *order = served_array();
	Datum		values[2] = {Int32GetDatum(QC_CALLBACK_BATCH), PointerGetDatum(order)};
	const char	nulls[2] = {' ', order ? ' ' : 'n'};

	qc_queue_plan(&plan, QC_ROLES_OF(DUE_OF_ROLE)
				  " SELECT c.id, g.role FROM roles g,"
				  " LATERAL (SELECT d.id, pg_catalog.row_number() OVER (ORDER BY d.id) AS place"
				  "   FROM (SELECT q.id FROM queryclaw.requests q"
				  "    WHERE q.role::pg_catalog.oid OPERATOR(pg_catalog.=) g.role"
				  "      AND q.waiting OPERATOR(pg_catalog.=) '" QC_WAITING_CALLBACK "'"
				  "    ORDER BY q.id LIMIT $1) d) c"
				  " WHERE g.role IS NOT NULL"
				  " ORDER BY c.place, pg_catalog.array_position($2, g.role) NULLS FIRST, g.role"
				  " LIMIT $1", 2, types);
	if (SPI_execute_plan(plan, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the callbacks due");
	*(List **) arg = NIL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Due		   *d = palloc0(sizeof(Due));
		bool		isnull;

		d->id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
											&isnull));
		d->role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
												 2, &isnull));
		*(List **) arg = lappend(*(List **) arg, d);
	}
	SPI_freetuptable(SPI_tuptable);
}

/* A jsonb column of the row read, copied; NULL for SQL NULL. */
static Jsonb *
jsonb_column(int n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, n, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/*
 * As the worker: lock d's row, never waiting, and read it, if its
 * callback is still due (not taken by another worker, not retried since).
 * By its id alone, so that only the primary key's index fits.
 */
static void
lock_due(void *arg)
{
	static SPIPlanPtr plan = NULL;
	Due		   *d = arg;
	Oid			type = INT8OID;
	Datum		id = Int64GetDatum(d->id);
	char	   *state;
	char	   *waiting;

	qc_queue_plan(&plan, "SELECT state, waiting, callback, context, result, error, sqlstate"
				  " FROM queryclaw.requests WHERE id OPERATOR(pg_catalog.=) $1"
				  " FOR UPDATE SKIP LOCKED", 1, &type);
	if (SPI_execute_plan(plan, &id, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock a request");
	if (SPI_processed != 1)
		return;
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	waiting = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	d->cancelled = strcmp(state, "cancelled") == 0;
	d->locked = waiting != NULL && strcmp(waiting, QC_WAITING_CALLBACK) == 0 &&
		(d->cancelled || strcmp(state, "running") == 0);
	d->callback = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	d->context = jsonb_column(4);
	d->result = d->cancelled ? NULL : jsonb_column(5);
	d->error = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6);
	d->sqlstate = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 7);
	/* a failed outcome always has a SQLSTATE (asyncrun.c) */
	d->state = d->cancelled ? "cancelled" : d->sqlstate != NULL ? "failed" : "done";
	SPI_freetuptable(SPI_tuptable);
}

/* As the worker: the request is final, now. */
static void
record_final(void *arg)
{
	static SPIPlanPtr plan = NULL;
	Due		   *d = arg;
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4] = {Int64GetDatum(d->id), CStringGetTextDatum(d->state)};
	char		nulls[4] = {' ', ' ', d->error ? ' ' : 'n', d->sqlstate ? ' ' : 'n'};

	values[2] = d->error ? CStringGetTextDatum(d->error) : (Datum) 0;
	values[3] = d->sqlstate ? CStringGetTextDatum(d->sqlstate) : (Datum) 0;
	qc_queue_plan(&plan, "UPDATE queryclaw.requests SET state = $2, error = $3, sqlstate = $4,"
				  " finished_at = pg_catalog.clock_timestamp(), waiting = NULL"
				  " WHERE id OPERATOR(pg_catalog.=) $1", 4, types);
	if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update queryclaw.requests");
}

/* One attempt: the final state (as the worker) and the callback (as the role). */
typedef struct Attempt
{
	Due		   *d;
	Oid			fn;				/* the callback; InvalidOid: gone */
	const QcRoleSettings *settings; /* NULL: the callback is not called */
} Attempt;

/* As the role, in its scope: EXECUTE checked again, then the callback. */
static void
call_callback(void *arg)
{
	Attempt    *a = arg;
	Due		   *d = a->d;

	if (OidIsValid(a->fn) && !qc_proc_executable(a->fn, d->role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for callback %s", d->callback)));
	qc_queue_call_callback(a->fn, d->callback, d->id, d->result,
						   d->cancelled ? "cancelled" : d->error, d->context);
}

static void
record_and_call(void *arg)
{
	Attempt    *a = arg;

	qc_async_as_writer(record_final, a->d);
	if (a->settings != NULL)
		qc_role_run_callback(a->settings, call_callback, a);
}

/* The callback could not run, or failed for good: so does its request. */
static void
callback_failed(Due *d, int sqlerrcode, const char *message)
{
	if (d->cancelled)
		return;					/* a cancelled request stays cancelled */
	d->state = "failed";
	d->error = psprintf("callback failed: %s", message);
	d->sqlstate = pstrdup(unpack_sql_state(sqlerrcode));
}

/*
 * Call d's callback (settings: its role's; NULL when the role is gone)
 * and make the request final with it, in one subtransaction; see the file
 * header for the retries and failures.
 */
static void
finish_due(Due *d, const QcRoleSettings *settings)
{
	Attempt		a = {d, qc_proc_by_signature(d->callback), settings};

	if (settings == NULL)
		callback_failed(d, ERRCODE_UNDEFINED_OBJECT,
						psprintf("role with OID %u does not exist", d->role));
	for (int tries = 1;; tries++)
	{
		ErrorData  *edata = qc_subxact_try(record_and_call, &a);
		bool		retry;

		if (a.settings != NULL)
			qc_role_forget_callback();
		if (edata == NULL)
			return;
		if (a.settings == NULL)
			ReThrowError(edata);	/* the worker's own statement failed */
		retry = (edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
				 edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED) && tries < QC_CALLBACK_TRIES;
		if (!retry)
		{
			callback_failed(d, edata->sqlerrcode, edata->message);
			a.settings = NULL;
		}
		FreeErrorData(edata);
	}
}

/* The stored settings of role, read once per transaction (NULL: no such role). */
typedef struct RoleEntry
{
	Oid			role;
	QcRoleSettings *settings;
} RoleEntry;

static const QcRoleSettings *
settings_of(List **roles, Oid role, MemoryContext cxt)
{
	MemoryContext old;
	RoleEntry  *e;
	ListCell   *lc;

	foreach(lc, *roles)
		if (((RoleEntry *) lfirst(lc))->role == role)
			return ((RoleEntry *) lfirst(lc))->settings;
	old = MemoryContextSwitchTo(cxt);
	e = palloc(sizeof(RoleEntry));
	e->role = role;
	e->settings = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)) ?
		qc_role_settings_load(role) : NULL;
	*roles = lappend(*roles, e);
	MemoryContextSwitchTo(old);
	return e->settings;
}

/*
 * One transaction: the due callbacks taken in their turns, until the slice
 * is spent or the worker is to stop.
 */
static void
run_batch(void *arg)
{
	Batch	   *b = arg;
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext one;
	TimestampTz start = GetCurrentTimestamp();
	List	   *due = NIL;
	List	   *roles = NIL;
	ListCell   *lc;

	if (!OidIsValid(qc_async_statement_role()))
	{
		b->absent = true;
		return;
	}
	qc_async_as_writer(claim_due, &due);
	b->found = list_length(due);
	one = AllocSetContextCreate(cxt, "queryclaw callback", ALLOCSET_DEFAULT_SIZES);
	foreach(lc, due)
	{
		Due		   *d = lfirst(lc);

		if (qc_bgsession_stop)
			break;
		MemoryContextSwitchTo(one);
		qc_async_as_writer(lock_due, d);
		if (d->locked)
		{
			finish_due(d, settings_of(&roles, d->role, cxt));
			note_served(d->role);
			b->done++;
		}
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(one);
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), QC_CALLBACK_SLICE_MS))
			break;
	}
}

/* A transaction of callbacks; an error is logged, and the worker goes on. */
static void
safe_batch(Batch *b, MemoryContext cxt)
{
	PG_TRY();
	{
		qc_bgsession_transaction("running callbacks", run_batch, b);
	}
	PG_CATCH();
	{
		qc_bgsession_recover(cxt);
		b->failed = true;
	}
	PG_END_TRY();
	if (b->done > 0 && !b->failed)
		qc_queue_notify_finished();
	MemoryContextReset(cxt);
}

/*
 * Sleep until the latch is set (an async worker handed callbacks over, a
 * cancel committed), or: not at all when more may be due; a moment while
 * the due ones are others' (another worker's, or a row a user holds); a
 * second otherwise.
 */
static void
wait_for_callbacks(const Batch *b)
{
	long		ms = QC_CALLBACK_NAP_MS;

	if (b->failed)
		ms = QC_CALLBACK_RETRY_MS;
	else if (b->done > 0)
		return;
	else if (b->found > 0)
		ms = QC_CALLBACK_BUSY_MS;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
					 qc_wait_event(QC_WAIT_CALLBACK_WORKER));
}

void
qc_callback_worker_main(Datum main_arg)
{
	int			slot = DatumGetInt32(main_arg);
	MemoryContext cxt;

	qc_bgsession_start(qc_database);
	qc_queue_attach_callback_worker(slot);
	(void) qc_call_refuse_sending(true);
	cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw callbacks",
								ALLOCSET_DEFAULT_SIZES);
	ereport(LOG,
			(errmsg("queryclaw callback worker %d started in database \"%s\"", slot,
					qc_database)));
	while (!qc_bgsession_stop)
	{
		Batch		b = {0};

		(void) qc_bgsession_next_pass();
		MemoryContextSwitchTo(cxt);
		safe_batch(&b, cxt);
		if (!qc_bgsession_stop)
			wait_for_callbacks(&b);
	}
	proc_exit(1);
}
