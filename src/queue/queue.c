/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  The asynchronous requests' queue: its shared memory, the wake-up of
 *	  the async workers when a transaction that enqueued commits, and the
 *	  retention of finished requests.
 *
 * The queue itself is the table queryclaw.requests (queue.h says who
 * writes what in it).  Shared memory holds only what a table cannot do:
 * the workers' latches, so that a commit wakes them at once rather than
 * at their next poll, and counters and a condition variable that tell
 * workers and waiters something changed.
 *
 * The wake-up follows the transaction: an enqueue only notes that its
 * transaction wrote a request; at commit, once its locks are released,
 * the workers' latches are set, so a worker never looks for rows that are
 * not yet visible nor under catalogs of before the commit, and a
 * rolled-back enqueue wakes nobody.  A transaction that enqueued and is prepared
 * (PREPARE TRANSACTION, as every multi-node write on Citus is) has its
 * GID kept in shared memory, and its COMMIT PREPARED, in any session,
 * wakes the workers once it has run.  The last QC_PREPARED_KEPT such GIDs
 * are kept, and none across a restart: a transaction committed after
 * that many others were prepared, or after a restart, waits for the
 * workers' next poll.
 *
 * Request ids carry the Citus group of the node that queued them (queue.h),
 * so that ids a pushed-down query returns from several nodes are distinct,
 * and wait(), cancel_requests() and retry_requests() refuse another node's
 * rather than act on a request of theirs that has the same number.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "callbackhints.h"
#include "cluster.h"
#include "compat.h"
#include "guc.h"
#include "queue.h"

/* The lock tag class of the enqueue lock; pg_advisory_lock uses 1 and 2. */
#define QC_ENQUEUE_LOCK_CLASS 0x5143

static QcQueueShared *shared = NULL;
/* This worker's latch slot (an async, a callback or the enrichment worker's), or NULL. */
static Latch **my_latch = NULL;

/* This transaction enqueued or cancelled: the workers have work at commit. */
static bool xact_wakes_workers = false;
static bool wake_after_locks = false;
/* ... and it cancelled requests whose callback is due: the callback workers too */
static bool xact_wakes_callbacks = false;
static bool wake_callbacks_after_locks = false;
/* ... or it may have made enrichments' rows stale: the enrichment worker */
static bool xact_wakes_enrich = false;
static bool wake_enrich_after_locks = false;
static bool xact_callback_registered = false;

/*
 * The unfinished requests of one role, read once in this transaction under
 * its enqueue lock (lock_role_enqueue).
 */
static Oid	counted_role = InvalidOid;
static int64 counted_open = 0;

static ProcessUtility_hook_type prev_utility_hook = NULL;
static void queue_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
						  ProcessUtilityContext context, ParamListInfo params,
						  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc);
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
queue_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(QcQueueShared)));
}

static void
queue_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("queryclaw request queue", sizeof(QcQueueShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(QcQueueShared));
		SpinLockInit(&shared->mutex);
		ConditionVariableInit(&shared->finished);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
qc_queue_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = queue_utility;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = queue_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = queue_shmem_startup;
}

QcQueueShared *
qc_queue_shared(void)
{
	return shared;
}

void
qc_queue_require(const char *what)
{
	/* decided once: a backend's database does not change */
	static int	same_database = -1;

	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s needs queryclaw_ext in shared_preload_libraries", what),
				 errdetail("Asynchronous requests are run by background workers, which only a preloaded library has."),
				 errhint("Add queryclaw_ext to shared_preload_libraries and restart the server; the synchronous functions work without it.")));
	if (qc_async_workers == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s is turned off", what),
				 errdetail("queryclaw.async_workers is 0: no worker would run the request."),
				 errhint("Set queryclaw.async_workers to 1 or more and restart the server.")));
	if (same_database < 0)
		same_database = (get_database_oid(qc_database, true) == MyDatabaseId);
	if (!same_database)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s can only be used in database \"%s\"", what, qc_database),
				 errdetail("The async workers run the queue of the database named by queryclaw.database."),
				 errhint("Connect to database \"%s\"; the synchronous functions work in any database.", qc_database)));
}

/* Set the latch of each of the n workers attached to these. */
static void
wake(Latch *const *attached, int n)
{
	Latch	   *latches[QC_ASYNC_MAX_WORKERS];

	Assert(n <= QC_ASYNC_MAX_WORKERS);
	SpinLockAcquire(&shared->mutex);
	memcpy(latches, attached, n * sizeof(Latch *));
	SpinLockRelease(&shared->mutex);
	for (int i = 0; i < n; i++)
		if (latches[i] != NULL)
			SetLatch(latches[i]);
}

static void
wake_workers(void)
{
	wake(shared->worker_latch, QC_ASYNC_MAX_WORKERS);
}

void
qc_queue_wake_callback_workers(void)
{
	wake(shared->callback_latch, QC_ASYNC_MAX_WORKERS);
}

/*
 * A commit that queued requests wakes the workers once its locks are
 * released, not at XACT_EVENT_COMMIT: the transaction is visible by then,
 * but its catalog invalidations are sent later in the commit.  A worker
 * woken at once could claim a request queued with a REVOKE in the same
 * transaction and check the privilege against the catalog cache of before
 * it.
 */
static void
queue_release_callback(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel ||
		!(wake_after_locks || wake_enrich_after_locks))
		return;
	if (isCommit && wake_after_locks)
		wake_workers();
	wake_after_locks = false;
	if (isCommit && wake_enrich_after_locks)
		wake(shared->enrich_latch, 1);
	wake_enrich_after_locks = false;
	if (isCommit && wake_callbacks_after_locks)
	{
		/* a cancel's callbacks are due: no hint names them */
		qc_callback_hints_lose();
		qc_queue_wake_callback_workers();
	}
	wake_callbacks_after_locks = false;
}

static void
queue_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && (xact_wakes_workers || xact_wakes_enrich))
	{
		wake_after_locks = xact_wakes_workers;
		wake_callbacks_after_locks = xact_wakes_callbacks;
		wake_enrich_after_locks = xact_wakes_enrich;
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		xact_wakes_workers = false;
		xact_wakes_callbacks = false;
		xact_wakes_enrich = false;
		counted_role = InvalidOid;
	}
}

/*
 * A subtransaction that aborts takes the enqueue lock it took with it, and
 * the requests it counted: count again, under the lock again.
 */
static void
queue_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		counted_role = InvalidOid;
}

static void
note(bool *flag)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(queue_xact_callback, NULL);
		RegisterSubXactCallback(queue_subxact_callback, NULL);
		RegisterResourceReleaseCallback(queue_release_callback, NULL);
		xact_callback_registered = true;
	}
	if (flag != NULL)
		*flag = true;
}

void
qc_queue_wake_at_commit(bool callbacks)
{
	note(&xact_wakes_workers);
	if (callbacks)
		xact_wakes_callbacks = true;
}

void
qc_queue_wake_enrich_worker_at_commit(void)
{
	note(&xact_wakes_enrich);
}

/* A GID as the ring of prepared transactions keeps it: never 0 (a free slot). */
static uint32
gid_hash(const char *gid)
{
	return hash_bytes((const unsigned char *) gid, strlen(gid)) | 1;
}

/* Keep gid, prepared by a transaction that wakes the workers. */
static void
remember_prepared(const char *gid)
{
	uint32		h = gid_hash(gid);

	SpinLockAcquire(&shared->mutex);
	shared->prepared_gid[shared->next_prepared] = h;
	shared->next_prepared = (shared->next_prepared + 1) % QC_PREPARED_KEPT;
	SpinLockRelease(&shared->mutex);
}

/*
 * Forget gid; returns whether it was kept.  (Two GIDs of the same hash
 * wake the workers once more than needed: a pass that finds nothing.)
 */
static bool
forget_prepared(const char *gid)
{
	uint32		h = gid_hash(gid);
	bool		found = false;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < QC_PREPARED_KEPT && !found; i++)
		if (shared->prepared_gid[i] == h)
		{
			shared->prepared_gid[i] = 0;
			found = true;
		}
	SpinLockRelease(&shared->mutex);
	return found;
}

/*
 * PREPARE TRANSACTION of a transaction that enqueued keeps its GID in
 * shared memory (the transaction callback only learns that it was
 * prepared, not as what); COMMIT PREPARED of a GID kept, in any session,
 * wakes the workers once the commit is done.
 */
static void
queue_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			  ProcessUtilityContext context, ParamListInfo params,
			  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	TransactionStmt *stmt = IsA(pstmt->utilityStmt, TransactionStmt) ?
		(TransactionStmt *) pstmt->utilityStmt : NULL;

	if (stmt != NULL && stmt->kind == TRANS_STMT_PREPARE && xact_wakes_workers)
		remember_prepared(stmt->gid);
	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	if (stmt != NULL && (stmt->kind == TRANS_STMT_COMMIT_PREPARED ||
						 stmt->kind == TRANS_STMT_ROLLBACK_PREPARED) &&
		forget_prepared(stmt->gid) && stmt->kind == TRANS_STMT_COMMIT_PREPARED)
	{
		/* what it did is not kept: a cancel's callback may be due too */
		wake_workers();
		qc_callback_hints_lose();
		qc_queue_wake_callback_workers();
	}
}

int64
qc_queue_id_base(void)
{
	return (int64) qc_cluster_group() << QC_NODE_ID_SHIFT;
}

void
qc_queue_check_ids(ArrayType *ids, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64		here;

	if (!qc_cluster_active())
		return;
	here = qc_cluster_group();
	deconstruct_array(ids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		int64		id = nulls[i] ? 0 : DatumGetInt64(elems[i]);

		/* ids below 1 name no request on any node */
		if (id > 0 && (id >> QC_NODE_ID_SHIFT) != here)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("request %lld was queued on another node of the Citus cluster",
							(long long) id),
					 errdetail("A request id carries the group of the node that queued it: group %lld, and this node is group %lld.",
							   (long long) (id >> QC_NODE_ID_SHIFT), (long long) here),
					 errhint("Call queryclaw.%s() on that node with its own requests' ids, for instance through run_command_on_all_nodes(); docs/citus.md shows how.",
							 what)));
	}
}

/*
 * Unfinished requests of role's, counting at most limit of them, as the
 * latest snapshot sees them: under REPEATABLE READ too, what other
 * transactions committed counts.
 */
static int64
count_open(Oid role, int limit)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {REGROLEOID, INT4OID};
	Datum		args[2] = {ObjectIdGetDatum(role), Int32GetDatum(limit)};
	bool		isnull;
	int64		count;

	/*
	 * This transaction's requests count too, those its statement under way
	 * queued included: they carry the statement's command id, which a
	 * snapshot sees once the counter has moved past it.
	 */
	CommandCounterIncrement();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/*
	 * The waiting ones through requests_role_due_idx, those on the wire or
	 * whose callback is due through requests_running_idx: each repeats its
	 * index's predicate.
	 */
	qc_queue_plan(&plan,
				  "SELECT (SELECT pg_catalog.count(*) FROM (SELECT FROM queryclaw.requests r"
				  "  WHERE r.role OPERATOR(pg_catalog.=) $1"
				  "  AND r.state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'retrying'])"
				  "  LIMIT $2) w)"
				  " OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM (SELECT FROM queryclaw.requests r"
				  "  WHERE r.role OPERATOR(pg_catalog.=) $1 AND " QC_RUNNING_ROWS
				  "  AND r.state OPERATOR(pg_catalog.=) 'running'"
				  "  LIMIT $2) o)",
				  2, types);
	if (SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count requests");
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return count;
}

/*
 * The role's enqueue lock in this database, held to the end of the
 * transaction: two transactions of one role that each counted before the
 * other committed would together pass max_queued_per_role.  An advisory
 * lock's tag with a class of its own, which pg_advisory_lock() cannot take.
 */
static void
lock_role_enqueue(Oid role)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) role, 0, QC_ENQUEUE_LOCK_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

char *
qc_queue_paused_reason(Oid role)
{
	return psprintf("paused: queryclaw.enabled is off for role %s",
					quote_identifier(GetUserNameFromId(role, false)));
}

void
qc_queue_admit(Oid role)
{
	if (qc_max_queued_per_role == 0)
		return;
	if (counted_role != role)
	{
		lock_role_enqueue(role);
		counted_open = count_open(role, qc_max_queued_per_role);
		counted_role = role;
		/* the count is forgotten at the end of the (sub)transaction */
		note(NULL);
	}
	if (counted_open >= qc_max_queued_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("role \"%s\" has too many unfinished asynchronous requests",
						GetUserNameFromId(role, false)),
				 errdetail("It has %lld queued, running or retrying, and queryclaw.max_queued_per_role is %d.",
						   (long long) counted_open, qc_max_queued_per_role),
				 errhint("Wait for them to finish (queryclaw.wait), or cancel some (queryclaw.cancel_requests).")));
	counted_open++;
}

static void
detach_worker(int code, Datum arg)
{
	SpinLockAcquire(&shared->mutex);
	*my_latch = NULL;
	SpinLockRelease(&shared->mutex);
	my_latch = NULL;
}

/* A worker announces itself in its latch slot, so that commits wake it. */
static void
attach(Latch **slot)
{
	Assert(my_latch == NULL);
	my_latch = slot;
	SpinLockAcquire(&shared->mutex);
	*slot = MyLatch;
	SpinLockRelease(&shared->mutex);
	before_shmem_exit(detach_worker, (Datum) 0);
}

void
qc_queue_attach_worker(int slot)
{
	Assert(slot >= 0 && slot < QC_ASYNC_MAX_WORKERS);
	attach(&shared->worker_latch[slot]);
}

void
qc_queue_attach_callback_worker(int slot)
{
	Assert(slot >= 0 && slot < QC_ASYNC_MAX_WORKERS);
	attach(&shared->callback_latch[slot]);
}

void
qc_queue_attach_enrich_worker(void)
{
	attach(&shared->enrich_latch[0]);
}

/* After a worker committed final states: wake whoever waits in wait(). */
void
qc_queue_notify_finished(void)
{
	ConditionVariableBroadcast(&shared->finished);
}

uint64
qc_queue_purge(int max_rows)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2];
	Oid			types[2] = {TIMESTAMPTZOID, INT4OID};
	int			rc;

	if (qc_async_retention_us == 0)
		return 0;
	args[0] = TimestampTzGetDatum(GetCurrentTimestamp() - qc_async_retention_us);
	args[1] = Int32GetDatum(max_rows);
	/* the oldest first, through requests_finished_idx */
	rc = SPI_execute_plan(qc_queue_plan(&plan,
										"DELETE FROM queryclaw.requests WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY("
										" SELECT r.id FROM queryclaw.requests r"
										"  WHERE r.finished_at OPERATOR(pg_catalog.<) $1"
										"  ORDER BY r.finished_at LIMIT $2 FOR UPDATE SKIP LOCKED))",
										2, types),
						  args, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "could not delete finished requests: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/* The owner of queryclaw.requests. */
Oid
qc_queue_table_owner(void)
{
	Oid			relid = get_relname_relid("requests", get_namespace_oid("queryclaw", false));
	HeapTuple	tuple;
	Oid			owner;

	/* release 0.1's objects: the update adds the queue */
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table queryclaw.requests does not exist"),
				 errhint("The extension's SQL objects are older than its library: run ALTER EXTENSION queryclaw_ext UPDATE.")));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

void
qc_queue_begin_as_owner(QcQueueAsOwner *save)
{
	GetUserIdAndSecContext(&save->save_userid, &save->save_sec_context);
	SetUserIdAndSecContext(qc_queue_table_owner(),
						   save->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
qc_queue_end_as_owner(const QcQueueAsOwner *save)
{
	SPI_finish();
	SetUserIdAndSecContext(save->save_userid, save->save_sec_context);
}

Datum
qc_queue_array(Datum *values, bool *isnull, int n, Oid type)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1] = {n};
	int			lbs[1] = {1};

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_md_array(values, isnull, 1, dims, lbs, type,
											  typlen, typbyval, typalign));
}

SPIPlanPtr
qc_queue_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types)
{
	if (*plan == NULL)
	{
		/*
		 * In our background workers, planned once: a custom plan for each
		 * call would cost a planning per statement (they run these hundreds
		 * of times a second), and their pinned planner settings
		 * (bgsession.c) make the plan made without the parameters' values
		 * the right one whatever the statistics say.  A user's session,
		 * which has no such pins, keeps a plan made for each call's values
		 * and the table as it is then.
		 */
		int			options = MyBackendType == B_BG_WORKER ? CURSOR_OPT_GENERIC_PLAN : 0;
		SPIPlanPtr	made = SPI_prepare_cursor(sql, nargs, types, options);

		if (made == NULL)
			elog(ERROR, "could not prepare a statement on queryclaw.requests: %s",
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(made);
		*plan = made;
	}
	return *plan;
}

/* 42883 when fn is gone, 22023 unless it has a callback's shape. */
static void
check_callback_shape(Oid fn)
{
	static const Oid args[4] = {INT8OID, JSONBOID, TEXTOID, JSONBOID};
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	bool		fits;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("callback function with OID %u does not exist", fn)));
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	fits = (proc->prokind == PROKIND_FUNCTION || proc->prokind == PROKIND_PROCEDURE) &&
		!proc->proretset && proc->pronargs == 4 &&
		memcmp(proc->proargtypes.values, args, sizeof(args)) == 0;
	ReleaseSysCache(tuple);
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot be a callback", format_procedure(fn)),
				 errdetail("A callback is a procedure, or a function not returning a set, taking (id bigint, result jsonb, error text, context jsonb)."),
				 errhint("For example: CREATE PROCEDURE my_callback(id bigint, result jsonb, error text, context jsonb) ...")));
}

/*
 * The signature of fn as queued: computed once per statement and function
 * (a trigger or an INSERT ... SELECT queues thousands with the same), its
 * checks made every time.  A rename is a statement of its own, after
 * which the statement start (or, in a function, the command) differs.
 */
static const char *
callback_signature(Oid fn)
{
	static Oid	cached_fn = InvalidOid;
	static TimestampTz cached_start = 0;
	static CommandId cached_command = InvalidCommandId;
	static char *cached = NULL;
	TimestampTz start = GetCurrentStatementStartTimestamp();
	CommandId	command = GetCurrentCommandId(false);

	if (fn != cached_fn || start != cached_start || command != cached_command || cached == NULL)
	{
		char	   *name = format_procedure_qualified(fn);

		if (cached != NULL)
			pfree(cached);
		cached = MemoryContextStrdup(TopMemoryContext, name);
		cached_fn = fn;
		cached_start = start;
		cached_command = command;
	}
	return cached;
}

char *
qc_queue_check_callback(Oid fn)
{
	check_callback_shape(fn);
	if (qc_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", format_procedure(fn)),
				 errdetail("The callback runs as the role that queues the request, which needs EXECUTE on it."),
				 errhint("The function's owner or a superuser can grant EXECUTE on it.")));
	return pstrdup(callback_signature(fn));
}

void
qc_queue_call_callback(Oid fn, const char *callback, int64 id, Jsonb *result,
					   const char *error, Jsonb *context)
{
	FmgrInfo	flinfo;

	LOCAL_FCINFO(fcinfo, 4);

	if (!SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(fn)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("callback %s does not exist", callback),
				 errdetail("It was dropped after the request was queued.")));
	check_callback_shape(fn);
	fmgr_info(fn, &flinfo);
	InitFunctionCallInfoData(*fcinfo, &flinfo, 4, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = Int64GetDatum(id);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = PointerGetDatum(result);
	fcinfo->args[1].isnull = result == NULL;
	fcinfo->args[2].value = error ? CStringGetTextDatum(error) : (Datum) 0;
	fcinfo->args[2].isnull = error == NULL;
	fcinfo->args[3].value = PointerGetDatum(context);
	fcinfo->args[3].isnull = context == NULL;
	if (flinfo.fn_strict && (result == NULL || error == NULL || context == NULL))
		return;
	(void) FunctionCallInvoke(fcinfo);
}
