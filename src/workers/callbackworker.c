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
 *   update (waiting QC_WAITING_CALLBACK, queue.h; handoff.c), tells these
 *   workers its id in shared memory (callbackhints.c) and wakes them as
 *   its transaction commits.  A request without a callback never comes
 *   here, nor waits for one.
 * - A callback worker takes the due callbacks QC_CALLBACK_BATCH at a time,
 *   from the hints, or from the table when hints were lost (and at its
 *   start, after an idle nap, after a failure): round-robin between roles,
 *   the role it served least recently first, the oldest request first
 *   within a role.  It commits as soon as the callbacks it ran took
 *   QC_CALLBACK_SLICE_MS: another role's callback waits for at most one
 *   slow callback of a role's, however many are due.
 * - Each callback runs as the async workers ran it: in a subtransaction
 *   of its own, as the role, at a GUC nest level with
 *   the role's stored settings, in a security-restricted operation, within
 *   callback_timeout (rolesession.c); run again on a serialization failure
 *   or a deadlock, QC_CALLBACK_TRIES times at most; whatever it left in the
 *   session dropped after it.  A callback that fails makes the request
 *   failed with its error, the result kept (a cancelled one stays
 *   cancelled).  EXECUTE on it is checked again as it runs; a role dropped
 *   since fails the request.
 * - The write-backs of enrichments (enrichment_done) of one role taken in
 *   a transaction are called together, in one subtransaction, through
 *   enrichment_done_many, which writes each enrichment's answered results
 *   back in one statement: called one by one, their statements cost three
 *   times what a short hand-written callback does.  If that call fails,
 *   each is called on its own in its turn, as any callback (the slice
 *   still bounds what another role waits for).
 * - A callback may queue requests (api_call_async...), but sends none:
 *   qc_call_refuse_sending is on in these workers, so none of queryclaw's
 *   network functions waits for the network inside the transaction that
 *   makes a request final.
 * - The rows are locked (FOR UPDATE SKIP LOCKED: two workers never take
 *   the same) by the transaction that calls the callbacks and makes the
 *   requests final: one statement takes a batch's rows, the callbacks run
 *   one by one, and one statement makes the requests final (two statements
 *   of its own a request cost more than a short callback); a crash rolls
 *   all back, and the callbacks run after the restart.  The requests are
 *   never sent again: their outcomes are stored.
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
#include "callbackhints.h"
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

/* A due callback, and its request's row as this worker took it. */
typedef struct Due
{
	int64		id;
	Oid			role;
	bool		taken;			/* locked by this worker, still due: made final */
	bool		cancelled;		/* it stays 'cancelled' */
	char	   *callback;		/* its signature */
	Oid			fn;				/* the function it names; InvalidOid: gone */
	Jsonb	   *context;
	Jsonb	   *result;			/* NULL for a cancelled one */
	char	   *error;
	bool		called;			/* its callback's turn came: made final */
	char	   *failure;		/* the callback failed for good: why */
	char	   *failure_state;	/* and its SQLSTATE */
	bool		alone;			/* a write-back to call on its own */
} Due;

/* One transaction's work, and what it found. */
typedef struct Batch
{
	bool		absent;			/* no queue in this database (yet) */
	bool		read;			/* the table was read, not the hints */
	bool		failed;			/* the transaction failed */
	bool		cut;			/* it ended before it saw every one found */
	bool		slow;			/* its callbacks took the whole slice */
	int			wanted;			/* due callbacks asked for */
	int			found;			/* due callbacks seen */
	int			done;			/* requests made final */
	QcCallbackHint hints[QC_CALLBACK_BATCH];	/* those taken from the hints */
	bool		used[QC_CALLBACK_BATCH];	/* the due one there: seen or called */
} Batch;

/*
 * Read the table rather than the hints (callbackhints.c): at the start,
 * after hints were lost, after a nap no hint ended, and while the last
 * read found a full batch or was cut short.
 */
static bool must_read = true;

/*
 * How many hints a batch takes: a batch's worth, but one at a time while
 * callbacks take a slice each, so that those waiting are left for the
 * other callback workers meanwhile.
 */
static int	hints_wanted = QC_CALLBACK_BATCH;

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

/* served as an array of *n OIDs. */
static Oid *
served_oids(int *n)
{
	Oid		   *roles = palloc(Max(list_length(served), 1) * sizeof(Oid));
	ListCell   *lc;

	*n = 0;
	foreach(lc, served)
		roles[(*n)++] = lfirst_oid(lc);
	return roles;
}

/* served as an oid[] (NULL when empty). */
static ArrayType *
served_array(void)
{
	int			n;
	Oid		   *roles = served_oids(&n);
	Datum	   *values = palloc(Max(n, 1) * sizeof(Datum));

	for (int i = 0; i < n; i++)
		values[i] = ObjectIdGetDatum(roles[i]);
	return n == 0 ? NULL : construct_array(values, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

/*
 * The role of a request whose callback is due, through
 * requests_running_idx: among a role's requests on the wire, those marked.
 */
#define DUE_OF_ROLE \
	"SELECT r.role::pg_catalog.oid FROM queryclaw.requests r" \
	" WHERE " QC_RUNNING_ROWS \
	" AND r.waiting OPERATOR(pg_catalog.=) '" QC_WAITING_CALLBACK "'"

/*
 * As the worker: up to QC_CALLBACK_BATCH due callbacks, as a List of Due,
 * round-robin between their roles (the first of every role before the
 * second of any), the roles this worker served least recently first.
 * Nothing is locked yet: each is locked as its turn comes (take_final).
 */
static void
claim_due(void *arg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4OID, OIDARRAYOID};
	ArrayType  *order = served_array();
	Datum		values[2] = {Int32GetDatum(QC_CALLBACK_BATCH), PointerGetDatum(order)};
	const char	nulls[2] = {' ', order ? ' ' : 'n'};

	qc_queue_plan(&plan, QC_ROLES_OF(DUE_OF_ROLE, ", r.id")
				  " SELECT c.id, g.role FROM roles g,"
				  " LATERAL (SELECT d.id, pg_catalog.row_number() OVER (ORDER BY d.id) AS place"
				  "   FROM (SELECT r.id FROM queryclaw.requests r"
				  "    WHERE r.role::pg_catalog.oid OPERATOR(pg_catalog.=) g.role"
				  "      AND " QC_RUNNING_ROWS
				  "      AND r.waiting OPERATOR(pg_catalog.=) '" QC_WAITING_CALLBACK "'"
				  "    ORDER BY r.id LIMIT $1) d) c"
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

/* A jsonb column of the row returned, copied; NULL for SQL NULL. */
static Jsonb *
jsonb_column(uint64 row, int n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, n, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/* The Due of id in due, or NULL. */
static Due *
due_of(List *due, int64 id)
{
	ListCell   *lc;

	foreach(lc, due)
		if (((Due *) lfirst(lc))->id == id)
			return lfirst(lc);
	return NULL;
}

/*
 * As the worker: lock the rows of the due callbacks, never waiting, and
 * read what the callbacks need of those still due (not taken by another
 * worker, not retried since); those are taken.  One statement for the
 * batch, its rows named by their ids alone, so that only the primary
 * key's index fits, whatever the statistics say: the mark it checks is a
 * parameter, for with the mark written out the generic plan read the
 * index of the marked rows whole instead (its predicate), through the
 * entries of every request made final since the last VACUUM that a
 * snapshot open elsewhere keeps from being dead to all.
 */
static void
take_due(void *arg)
{
	static SPIPlanPtr plan = NULL;
	List	   *due = arg;
	Oid			types[2] = {INT8ARRAYOID, TEXTOID};
	Datum	   *ids = palloc(Max(list_length(due), 1) * sizeof(Datum));
	int			n = 0;
	Datum		values[2];
	ListCell   *lc;

	foreach(lc, due)
		ids[n++] = Int64GetDatum(((Due *) lfirst(lc))->id);
	values[0] = qc_queue_array(ids, NULL, n, INT8OID);
	values[1] = CStringGetTextDatum(QC_WAITING_CALLBACK);
	qc_queue_plan(&plan,
				  "SELECT q.id, q.state OPERATOR(pg_catalog.=) 'cancelled', q.callback, q.context,"
				  " q.result, q.error FROM queryclaw.requests q"
				  " WHERE q.id OPERATOR(pg_catalog.=) ANY ($1)"
				  " AND q.waiting OPERATOR(pg_catalog.=) $2"
				  " AND q.state OPERATOR(pg_catalog.=) ANY ('{running,cancelled}'::pg_catalog.text[])"
				  " FOR UPDATE SKIP LOCKED",
				  2, types);
	if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read queryclaw.requests");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Due		   *d = due_of(due, DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
																	SPI_tuptable->tupdesc, 1,
																	&isnull)));

		if (d == NULL)
			continue;
		d->taken = true;
		d->cancelled = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
												  2, &isnull));
		d->callback = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
		/* looked up as the worker: the role's search_path plays no part */
		d->fn = d->callback ? qc_proc_by_signature(d->callback) : InvalidOid;
		d->context = jsonb_column(i, 4);
		d->result = d->cancelled ? NULL : jsonb_column(i, 5);
		d->error = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 6);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * As the worker: make the requests whose callbacks were called final, in
 * one statement (with the failure of those whose callback failed for
 * good; a cancelled one stays as it is; a failed outcome always has a
 * SQLSTATE, asyncrun.c).  Their rows are locked by take_due.
 */
static void
make_final(void *arg)
{
	static SPIPlanPtr plan = NULL;
	List	   *due = arg;
	int			n = list_length(due);
	Datum	   *ids = palloc(Max(n, 1) * sizeof(Datum));
	Datum	   *errors = palloc(Max(n, 1) * sizeof(Datum));
	Datum	   *states = palloc(Max(n, 1) * sizeof(Datum));
	bool	   *no_error = palloc(Max(n, 1) * sizeof(bool));
	Oid			types[3] = {INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		values[3];
	int			k = 0;
	ListCell   *lc;

	foreach(lc, due)
	{
		Due		   *d = lfirst(lc);

		if (!d->called)
			continue;
		ids[k] = Int64GetDatum(d->id);
		no_error[k] = d->failure == NULL;
		errors[k] = d->failure ? CStringGetTextDatum(d->failure) : (Datum) 0;
		states[k] = d->failure ? CStringGetTextDatum(d->failure_state) : (Datum) 0;
		k++;
	}
	if (k == 0)
		return;
	values[0] = qc_queue_array(ids, NULL, k, INT8OID);
	values[1] = qc_queue_array(errors, no_error, k, TEXTOID);
	values[2] = qc_queue_array(states, no_error, k, TEXTOID);
	qc_queue_plan(&plan,
				  "UPDATE queryclaw.requests r SET"
				  " state = CASE WHEN r.state OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'"
				  "   WHEN v.sqlstate IS NOT NULL OR r.sqlstate IS NOT NULL THEN 'failed' ELSE 'done' END,"
				  " error = CASE WHEN r.state OPERATOR(pg_catalog.=) 'cancelled' OR v.sqlstate IS NULL"
				  "   THEN r.error ELSE v.error END,"
				  " sqlstate = CASE WHEN r.state OPERATOR(pg_catalog.=) 'cancelled' OR v.sqlstate IS NULL"
				  "   THEN r.sqlstate ELSE v.sqlstate END,"
				  " finished_at = pg_catalog.clock_timestamp(), waiting = NULL"
				  " FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2),"
				  "  pg_catalog.unnest($3)) AS v(id, error, sqlstate)"
				  " WHERE r.id OPERATOR(pg_catalog.=) v.id",
				  3, types);
	if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update queryclaw.requests");
}

/* As the role, in its scope: EXECUTE checked again, then the callback. */
static void
call_callback(void *arg)
{
	Due		   *d = arg;

	if (OidIsValid(d->fn) && !qc_proc_executable(d->fn, d->role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for callback %s", d->callback)));
	qc_queue_call_callback(d->fn, d->callback, d->id, d->result,
						   d->cancelled ? "cancelled" : d->error, d->context);
}

/* One attempt at call(arg) as a role, with its settings. */
typedef struct Attempt
{
	void		(*call) (void *arg);
	void	   *arg;
	const QcRoleSettings *settings;
} Attempt;

static void
attempt_callback(void *arg)
{
	Attempt    *a = arg;

	qc_role_run_callback(a->settings, a->call, a->arg);
}

/*
 * Call the callback of taken d (settings: its role's; NULL when the role
 * is gone), in a subtransaction, its failure noted in d for make_final;
 * see the file header for the retries and failures.  cxt holds what d
 * keeps.
 */
static void
call_due(Due *d, const QcRoleSettings *settings, MemoryContext cxt)
{
	Attempt		a = {call_callback, d, settings};

	d->called = true;
	if (settings == NULL)
	{
		d->failure = MemoryContextStrdup(cxt, psprintf("callback failed: role with OID %u does not exist",
													   d->role));
		d->failure_state = MemoryContextStrdup(cxt, unpack_sql_state(ERRCODE_UNDEFINED_OBJECT));
		return;
	}
	if (d->callback == NULL)
		return;
	for (int tries = 1;; tries++)
	{
		ErrorData  *edata = qc_subxact_try(attempt_callback, &a);

		qc_role_forget_callback();
		if (edata == NULL)
			return;
		if (!(edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
			  edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED) || tries >= QC_CALLBACK_TRIES)
		{
			/* it failed for good: the request fails, its result kept */
			d->failure = MemoryContextStrdup(cxt, psprintf("callback failed: %s", edata->message));
			d->failure_state = MemoryContextStrdup(cxt, unpack_sql_state(edata->sqlerrcode));
			FreeErrorData(edata);
			return;
		}
		FreeErrorData(edata);
	}
}

/*
 * An enrichment's write-back (the callback of every request an enrichment
 * queues) costs a few statements of its own a request.  Those of one role
 * taken in the same transaction are called together: enrichment_done_many
 * writes each enrichment's answered results back in one statement.
 */
#define QC_WRITE_BACK		"queryclaw.enrichment_done(bigint,jsonb,text,jsonb)"
#define QC_WRITE_BACKS		"queryclaw.enrichment_done_many(bigint[],jsonb[],text[],jsonb[])"

/* enrichment_done, looked up once per transaction by run_batch */
static Oid	write_back_fn = InvalidOid;

static bool
is_write_back(const Due *d)
{
	return d->taken && !d->called && !d->alone && OidIsValid(d->fn) && d->fn == write_back_fn;
}

/* One role's write-backs, and enrichment_done_many. */
typedef struct WriteBacks
{
	List	   *group;			/* of Due */
	Oid			fn;
} WriteBacks;

/* As the role, in its scope: the write-backs of w in one call. */
static void
call_write_backs(void *arg)
{
	WriteBacks *w = arg;
	int			n = list_length(w->group);
	Oid			types[4] = {INT8OID, JSONBOID, TEXTOID, JSONBOID};
	Datum	   *values[4];
	bool	   *nulls[4];
	ListCell   *lc;

	for (int k = 0; k < 4; k++)
	{
		values[k] = palloc0(n * sizeof(Datum));
		nulls[k] = palloc0(n * sizeof(bool));
	}
	foreach(lc, w->group)
	{
		Due		   *d = lfirst(lc);
		int			i = foreach_current_index(lc);
		const char *error = d->cancelled ? "cancelled" : d->error;

		values[0][i] = Int64GetDatum(d->id);
		values[1][i] = PointerGetDatum(d->result);
		nulls[1][i] = d->result == NULL;
		values[2][i] = error ? CStringGetTextDatum(error) : (Datum) 0;
		nulls[2][i] = error == NULL;
		values[3][i] = PointerGetDatum(d->context);
		nulls[3][i] = d->context == NULL;
	}
	(void) OidFunctionCall4(w->fn, qc_queue_array(values[0], nulls[0], n, types[0]),
							qc_queue_array(values[1], nulls[1], n, types[1]),
							qc_queue_array(values[2], nulls[2], n, types[2]),
							qc_queue_array(values[3], nulls[3], n, types[3]));
}

/*
 * Call the write-backs taken in due of its role from place from on
 * together (settings: the role's, not NULL), in one subtransaction, if
 * the role may still run both functions (looked up as the worker).
 * Returns how many were called; 0 when they were not, and then each is
 * to be called on its own in its turn, as any callback, so that the
 * slice bounds what another role waits for.
 */
static int
call_write_backs_of(List *due, int from, const QcRoleSettings *settings)
{
	Oid			role = ((Due *) list_nth(due, from))->role;
	WriteBacks	w = {NIL, qc_proc_by_signature(QC_WRITE_BACKS)};
	Attempt		a = {call_write_backs, &w, settings};
	ErrorData  *edata = NULL;
	bool		together = false;
	ListCell   *lc;

	for_each_from(lc, due, from)
		if (((Due *) lfirst(lc))->role == role && is_write_back(lfirst(lc)))
			w.group = lappend(w.group, lfirst(lc));
	if (OidIsValid(w.fn) && qc_proc_executable(w.fn, role) &&
		qc_proc_executable(write_back_fn, role))
	{
		edata = qc_subxact_try(attempt_callback, &a);
		qc_role_forget_callback();
		together = edata == NULL;
	}
	foreach(lc, w.group)
	{
		if (together)
			((Due *) lfirst(lc))->called = true;
		else
			((Due *) lfirst(lc))->alone = true;
	}
	if (edata != NULL)
		FreeErrorData(edata);
	return together ? list_length(w.group) : 0;
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

/* The due callbacks the hints name, taken from them in their turns. */
static List *
hinted(Batch *b)
{
	int			norder;
	Oid		   *order = served_oids(&norder);
	int			n = qc_callback_hints_take(b->hints, b->wanted, order, norder);
	List	   *due = NIL;

	for (int i = 0; i < n; i++)
	{
		Due		   *d = palloc0(sizeof(Due));

		d->id = b->hints[i].id;
		d->role = b->hints[i].role;
		due = lappend(due, d);
	}
	return due;
}

/*
 * One transaction: the due callbacks taken in their turns, from the hints
 * or from the table, until the slice is spent or the worker is to stop.
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
	bool		sliced = false;
	const QcRoleSettings *settings;
	int			called;
	ListCell   *lc;

	if (!OidIsValid(qc_async_statement_role()))
	{
		b->absent = true;
		return;
	}
	b->read = qc_callback_hints_take_lost() || must_read;
	b->wanted = b->read ? QC_CALLBACK_BATCH : hints_wanted;
	if (b->read)
		qc_async_as_writer(claim_due, &due);
	else
		due = hinted(b);
	b->found = list_length(due);
	if (due != NIL)
		qc_async_as_writer(take_due, due);
	write_back_fn = qc_proc_by_signature(QC_WRITE_BACK);
	one = AllocSetContextCreate(cxt, "queryclaw callback", ALLOCSET_DEFAULT_SIZES);
	foreach(lc, due)
	{
		Due		   *d = lfirst(lc);

		if (qc_bgsession_stop || sliced)
		{
			b->cut = true;
			break;
		}
		b->used[foreach_current_index(lc)] = true;
		if (!d->taken || d->called)
			continue;
		settings = settings_of(&roles, d->role, cxt);
		MemoryContextSwitchTo(one);
		if (is_write_back(d) && settings != NULL &&
			(called = call_write_backs_of(due, foreach_current_index(lc), settings)) > 0)
			b->done += called;
		else
		{
			call_due(d, settings, cxt);
			b->done++;
		}
		note_served(d->role);
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(one);
		sliced = TimestampDifferenceExceeds(start, GetCurrentTimestamp(), QC_CALLBACK_SLICE_MS);
	}
	foreach(lc, due)
		if (((Due *) lfirst(lc))->called)
			b->used[foreach_current_index(lc)] = true;	/* a role's write-backs, together */
	qc_async_as_writer(make_final, due);
	b->slow = sliced;
}

/*
 * Move the hints of b whose due callbacks were neither seen nor called to
 * the front of b->hints; returns how many there are.
 */
static int
unused_hints(Batch *b)
{
	int			n = 0;

	for (int i = 0; i < b->found; i++)
		if (!b->used[i])
			b->hints[n++] = b->hints[i];
	return n;
}

/*
 * A transaction of callbacks; an error is logged, and the worker goes on.
 * The hints it took and did not use go back: all of them when it failed.
 */
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
	if (!b->read)
		qc_callback_hints_return(b->hints, b->failed ? b->found : unused_hints(b));
	must_read = b->failed || (b->read && (b->cut || b->found == b->wanted));
	hints_wanted = b->slow ? 1 : QC_CALLBACK_BATCH;
	if (b->done > 0 && !b->failed)
		qc_queue_notify_finished();
	MemoryContextReset(cxt);
}

/*
 * Sleep until the latch is set (an async worker handed callbacks over, a
 * cancel committed: set during the batch, it ends the sleep at once), or:
 * not at all when more may be due (the batch was cut short, or full); a
 * moment while due ones the table showed are others' (another worker's,
 * or a row a user holds); a second otherwise, after which the table is
 * read.
 */
static void
wait_for_callbacks(const Batch *b)
{
	long		ms = QC_CALLBACK_NAP_MS;

	if (b->failed)
		ms = QC_CALLBACK_RETRY_MS;
	else if (b->cut || (b->found > 0 && b->found == b->wanted))
		return;
	else if (b->read && b->found > b->done)
		ms = QC_CALLBACK_BUSY_MS;
	if (WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
				  qc_wait_event(QC_WAIT_CALLBACK_WORKER)) & WL_TIMEOUT)
		must_read = true;
}

void
qc_callback_worker_main(Datum main_arg)
{
	int			slot = DatumGetInt32(main_arg);
	MemoryContext cxt;

	qc_bgsession_start(qc_database);
	qc_queue_attach_callback_worker(slot);
	qc_call_refuse_sending(QC_SENDING_IN_CALLBACK);
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
