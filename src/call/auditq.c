/*-------------------------------------------------------------------------
 *
 * auditq.c
 *	  The shared-memory queue between the calling backends and the audit
 *	  worker, and queryclaw.audit_status().
 *
 * The queue is a byte ring of queryclaw.audit_queue_size, created by the
 * shmem_request/shmem_startup hooks when the library is preloaded.  Each
 * record in it is a uint32 length followed by that many bytes (audit.c's
 * encoding; the queue does not look inside).
 *
 * Records are never dropped for want of room.  A call reserves room for
 * the largest possible record (QC_AUDIT_MAX_RECORD) before it sends
 * anything, waiting on a condition variable while the queue is full; so
 * when the call ends, however it ends, its record fits without waiting.
 * The worker copies a batch out, commits it, and only then consumes it: a
 * worker that fails or is restarted finds the same records again.
 *
 * Locking rules:
 *
 * - The "queryclaw_audit" LWLock protects every field of QcAuditQueue but
 *   size and the condition variable.  Reserving, releasing, pushing and
 *   consuming take it exclusively; the worker's copy of a batch and
 *   audit_status() take it shared.
 * - Bytes between tail and head are written only by a push (under the
 *   exclusive lock, into room that was reserved, so never over unconsumed
 *   data) and read only by the worker.  Only the worker advances tail.
 * - Nothing that can wait, fail or take another lock is done while the lock
 *   is held: the longest hold is the copy of one record (at most
 *   QC_AUDIT_MAX_RECORD bytes) or of one batch.
 * - "room" is broadcast whenever room comes free (records consumed, a
 *   reservation given back, the unused part of a reservation after a push);
 *   waiters recheck under the lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "audit.h"
#include "auditq.h"
#include "compat.h"
#include "guc.h"

#define QC_AUDITQ_TRANCHE "queryclaw_audit"

typedef struct QcAuditQueue
{
	LWLock	   *lock;
	ConditionVariable room;
	pid_t		worker_pid;		/* 0 while no worker runs */
	Latch	   *worker_latch;
	uint64		head;			/* bytes ever appended */
	uint64		tail;			/* bytes ever consumed */
	uint64		reserved;		/* bytes reserved by calls in flight */
	uint64		records;		/* records between tail and head */
	uint64		written;		/* records committed since server start */
	uint64		lost;			/* records that could not be written */
	uint64		waits;			/* reservations that had to wait for room */
	Size		size;			/* bytes in data */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} QcAuditQueue;

static QcAuditQueue *queue = NULL;
static int	my_reservations = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(audit_status);

static Size
queue_shmem_size(void)
{
	return add_size(offsetof(QcAuditQueue, data),
					mul_size((Size) qc_audit_queue_size, 1024));
}

static void
auditq_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(queue_shmem_size());
	RequestNamedLWLockTranche(QC_AUDITQ_TRANCHE, 1);
}

static void
auditq_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	queue = ShmemInitStruct("queryclaw audit queue", queue_shmem_size(), &found);
	if (!found)
	{
		memset(queue, 0, offsetof(QcAuditQueue, data));
		queue->lock = &(GetNamedLWLockTranche(QC_AUDITQ_TRANCHE))->lock;
		ConditionVariableInit(&queue->room);
		queue->size = (Size) qc_audit_queue_size * 1024;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
qc_auditq_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = auditq_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = auditq_shmem_startup;
}

bool
qc_auditq_active(void)
{
	return queue != NULL;
}

/* Free bytes; the caller holds the lock. */
static uint64
free_bytes(void)
{
	return queue->size - (queue->head - queue->tail) - queue->reserved;
}

static void
wake_worker(Latch *latch)
{
	if (latch != NULL)
		SetLatch(latch);
}

bool
qc_auditq_reserve(int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	bool		waiting = false;
	bool		reserved;

	for (;;)
	{
		Latch	   *latch;
		long		left;

		LWLockAcquire(queue->lock, LW_EXCLUSIVE);
		reserved = free_bytes() >= QC_AUDIT_MAX_RECORD;
		if (reserved)
			queue->reserved += QC_AUDIT_MAX_RECORD;
		else if (!waiting && timeout_ms > 0)
			queue->waits++;
		latch = queue->worker_latch;
		LWLockRelease(queue->lock);
		if (reserved)
			break;

		/* the worker frees room: make sure it is awake */
		wake_worker(latch);
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		if (!waiting)
		{
			ConditionVariablePrepareToSleep(&queue->room);
			waiting = true;
		}
		else
			(void) ConditionVariableTimedSleep(&queue->room, left,
											   qc_wait_event(QC_WAIT_AUDIT_QUEUE));
	}
	if (waiting)
		ConditionVariableCancelSleep();
	if (reserved)
		my_reservations++;
	return reserved;
}

void
qc_auditq_release(void)
{
	Assert(my_reservations > 0);
	LWLockAcquire(queue->lock, LW_EXCLUSIVE);
	queue->reserved -= QC_AUDIT_MAX_RECORD;
	LWLockRelease(queue->lock);
	my_reservations--;
	ConditionVariableBroadcast(&queue->room);
}

/* Copy n bytes into the ring at position pos, wrapping around. */
static void
ring_write(uint64 pos, const void *src, Size n)
{
	Size		off = pos % queue->size;
	Size		first = Min(n, queue->size - off);

	memcpy(queue->data + off, src, first);
	memcpy(queue->data, (const char *) src + first, n - first);
}

static void
ring_read(uint64 pos, void *dst, Size n)
{
	Size		off = pos % queue->size;
	Size		first = Min(n, queue->size - off);

	memcpy(dst, queue->data + off, first);
	memcpy((char *) dst + first, queue->data, n - first);
}

void
qc_auditq_push(const char *data, uint32 len)
{
	Latch	   *latch;

	Assert(my_reservations > 0);
	Assert(sizeof(len) + len <= QC_AUDIT_MAX_RECORD);
	LWLockAcquire(queue->lock, LW_EXCLUSIVE);
	queue->reserved -= QC_AUDIT_MAX_RECORD;
	ring_write(queue->head, &len, sizeof(len));
	ring_write(queue->head + sizeof(len), data, len);
	queue->head += sizeof(len) + len;
	queue->records++;
	latch = queue->worker_latch;
	LWLockRelease(queue->lock);
	my_reservations--;
	ConditionVariableBroadcast(&queue->room);
	wake_worker(latch);
}

static void
detach_worker(int code, Datum arg)
{
	LWLockAcquire(queue->lock, LW_EXCLUSIVE);
	queue->worker_pid = 0;
	queue->worker_latch = NULL;
	LWLockRelease(queue->lock);
}

/* The worker announces itself, so that pushes wake it. */
void
qc_auditq_attach_worker(void)
{
	LWLockAcquire(queue->lock, LW_EXCLUSIVE);
	queue->worker_pid = MyProcPid;
	queue->worker_latch = MyLatch;
	LWLockRelease(queue->lock);
	before_shmem_exit(detach_worker, (Datum) 0);
}

/*
 * Copy the oldest records, with their length words, into batch: at most
 * max_bytes of them, and always one if any is queued (max_bytes is at
 * least QC_AUDIT_MAX_RECORD).  They stay queued until qc_auditq_consume().
 */
int
qc_auditq_peek(StringInfo batch, int max_bytes)
{
	uint64		pos;
	int			n = 0;

	Assert(max_bytes >= QC_AUDIT_MAX_RECORD);
	/* no allocation under the lock */
	enlargeStringInfo(batch, max_bytes);
	LWLockAcquire(queue->lock, LW_SHARED);
	for (pos = queue->tail; pos < queue->head; n++)
	{
		uint32		len;

		ring_read(pos, &len, sizeof(len));
		if (batch->len + sizeof(len) + len > max_bytes)
			break;
		ring_read(pos, batch->data + batch->len, sizeof(len) + len);
		batch->len += sizeof(len) + len;
		pos += sizeof(len) + len;
	}
	LWLockRelease(queue->lock);
	return n;
}

/* The oldest records (bytes in all) are committed, lost of them lost. */
void
qc_auditq_consume(int records, Size bytes, int lost)
{
	LWLockAcquire(queue->lock, LW_EXCLUSIVE);
	queue->tail += bytes;
	queue->records -= records;
	queue->written += records - lost;
	queue->lost += lost;
	LWLockRelease(queue->lock);
	ConditionVariableBroadcast(&queue->room);
}

/* Nothing queued and no call in flight that will queue a record. */
bool
qc_auditq_idle(void)
{
	bool		idle;

	LWLockAcquire(queue->lock, LW_SHARED);
	idle = queue->records == 0 && queue->reserved == 0;
	LWLockRelease(queue->lock);
	return idle;
}

uint64
qc_auditq_pending(void)
{
	uint64		records;

	LWLockAcquire(queue->lock, LW_SHARED);
	records = queue->records;
	LWLockRelease(queue->lock);
	return records;
}

bool
qc_auditq_durable(void)
{
	/* decided once: a backend's database does not change */
	static int	same_database = -1;

	if (!qc_auditq_active())
		return false;
	if (same_database < 0)
		same_database = (get_database_oid(qc_database, true) == MyDatabaseId);
	/* a standby cannot write; the transactional insert says so at once */
	return same_database && !RecoveryInProgress();
}

/*
 * queryclaw.audit_status() returns (durable, database, worker_pid, queued,
 * in_flight, written, lost, waits, queue_used, queue_size)
 */
Datum
audit_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};
	QcAuditQueue snap;

	if (!qc_auditq_active())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("queryclaw_ext must be loaded via shared_preload_libraries"),
				 errdetail("Without it there is no audit worker: audit rows are written in the caller's transaction."),
				 errhint("Add queryclaw_ext to shared_preload_libraries and restart the server.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(queue->lock, LW_SHARED);
	memcpy(&snap, queue, offsetof(QcAuditQueue, data));
	LWLockRelease(queue->lock);

	values[0] = BoolGetDatum(qc_auditq_durable());
	values[1] = CStringGetTextDatum(qc_database);
	values[2] = Int32GetDatum(snap.worker_pid);
	nulls[2] = snap.worker_pid == 0;
	values[3] = Int64GetDatum((int64) snap.records);
	values[4] = Int64GetDatum((int64) (snap.reserved / QC_AUDIT_MAX_RECORD));
	values[5] = Int64GetDatum((int64) snap.written);
	values[6] = Int64GetDatum((int64) snap.lost);
	values[7] = Int64GetDatum((int64) snap.waits);
	values[8] = Int64GetDatum((int64) (snap.head - snap.tail));
	values[9] = Int64GetDatum((int64) snap.size);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
