/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The audit worker: commits queued audit records in transactions of its
 *	  own, and applies queryclaw.audit_retention.
 *
 * Registered when the library is preloaded, it connects to the database
 * named by queryclaw.database, the one whose backends queue their records
 * (audit.c), and loops as worker_spi does: wait on its latch (set by every
 * push; reported as an Extension wait event), let the rest of a burst
 * queue for QC_GATHER_MS, write what is queued, one transaction per batch,
 * and, at most once a minute and right after a
 * configuration reload, delete rows older than queryclaw.audit_retention,
 * one batch per transaction.
 *
 * Records leave the queue only once committed.  When a batch fails: a data
 * error (class 22 or 23) is one record's fault, so the batch is retried
 * record by record and only the faulty record is counted lost; any other
 * error (the table missing or locked, the disk full) is retried a second
 * later and loses nothing: callers wait for room meanwhile.
 *
 * The worker connects as the bootstrap superuser (a background worker
 * cannot log in as a NOLOGIN role by name on PostgreSQL 15), but its
 * database cannot steer it: it ignores the settings stored for that
 * database and its role, and pins those its statements depend on
 * (bgsession.c).  Nor does it run its statements as a superuser: each
 * transaction runs as queryclaw_writer, which may only read, insert and
 * delete audit rows, inside a security-restricted operation (no SET ROLE,
 * no session state left behind by a trigger a DBA added).  While the
 * database still has release 0.1's objects it runs them as the table's
 * owner instead, as a caller's own rows are written, and logs it once.
 *
 * SIGTERM (pg_terminate_backend, a shutdown) drains the queue: the worker
 * writes until nothing is queued and no call in flight holds room (calls
 * being terminated queue their records as their backends exit), or
 * QC_DRAIN_GRACE_MS passed, then exits with code 1, so that the postmaster
 * starts it again after bgw_restart_time (except during a shutdown).  An
 * error that kills it is followed by the same restart, and whatever it had
 * not committed is still queued.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "audit.h"
#include "auditq.h"
#include "bgsession.h"
#include "compat.h"
#include "guc.h"
#include "worker.h"

#define QC_WORKER_RESTART_S		5
#define QC_WORKER_NAP_MS		1000	/* longest sleep between passes */
#define QC_GATHER_MS			5		/* for the records of a burst */
#define QC_RETRY_MS				1000	/* after a failed batch */
#define QC_BATCH_BYTES			(1024 * 1024)
#define QC_RETENTION_EVERY_MS	60000
#define QC_RETENTION_BATCH		10000
#define QC_DRAIN_GRACE_MS		2000
#define QC_WRITER_ROLE			"queryclaw_writer"

PGDLLEXPORT void qc_audit_worker_main(Datum main_arg);

static TimestampTz retry_at = 0;	/* no write before, after a failure */
static TimestampTz retention_at = 0;	/* the next retention pass */

/* Records copied from the queue; texts point into the copy. */
typedef struct Batch
{
	int			n;
	QcAuditRecord *recs;
	Size	   *bytes;			/* queue bytes taken by each */
} Batch;

typedef void (*TransactionWork) (void *arg);

void
qc_worker_init(void)
{
	qc_bgsession_register("qc_audit_worker_main", "queryclaw audit writer",
						  "queryclaw audit writer", QC_WORKER_RESTART_S, (Datum) 0);
}

static Oid
audit_log_relid(void)
{
	Oid			relid = get_relname_relid("audit_log",
										  get_namespace_oid("queryclaw", true));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"queryclaw.audit_log\" does not exist in database \"%s\"",
						qc_database),
				 errhint("Create the extension there, or set queryclaw.database to a database that has it.")));
	return relid;
}

/*
 * The role the statements run as: queryclaw_writer once it has its
 * privileges on the table (given by the upgrade to 0.2; looked up in every
 * transaction, so that an ALTER EXTENSION ... UPDATE takes effect at once),
 * else the table's owner (see the file header).
 */
static Oid
statement_role(Oid relid)
{
	static bool fallback_logged = false;
	AclMode		needed = ACL_SELECT | ACL_INSERT | ACL_DELETE;
	Oid			writer = get_role_oid(QC_WRITER_ROLE, true);

	if (OidIsValid(writer) &&
		pg_class_aclmask(relid, writer, needed, ACLMASK_ALL) == needed)
	{
		fallback_logged = false;
		return writer;
	}
	if (!fallback_logged)
		ereport(LOG,
				(errmsg("queryclaw audit writer runs its statements as the owner of queryclaw.audit_log in database \"%s\"",
						qc_database),
				 errdetail("Role \"%s\" does not exist or lacks its privileges on the table: the extension there still has the objects of release 0.1.",
						   QC_WRITER_ROLE),
				 errhint("Run ALTER EXTENSION queryclaw_ext UPDATE in that database.")));
	fallback_logged = true;
	return qc_audit_table_owner();
}

/*
 * Run work in a transaction of its own, connected to SPI, as the statement
 * role.  Returns 0 once committed, else the SQLSTATE of the error, which is
 * logged as a WARNING.  (An abort gives the user id back itself.)
 */
static int
run_in_transaction(const char *activity, TransactionWork work, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int sqlerrcode = 0;
	Oid			save_userid;
	int			save_sec_context;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, activity);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		SetUserIdAndSecContext(statement_role(audit_log_relid()),
							   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		work(arg);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		sqlerrcode = edata->sqlerrcode;
		ereport(WARNING,
				(errcode(sqlerrcode),
				 errmsg("queryclaw audit writer: %s", edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return sqlerrcode;
}

/* Insert b's records of this database, in one statement. */
static void
insert_records(void *arg)
{
	Batch	   *b = arg;
	QcAuditRecord *ours = palloc(b->n * sizeof(QcAuditRecord));
	int			n = 0;

	for (int i = 0; i < b->n; i++)
		if (b->recs[i].dboid == MyDatabaseId)
			ours[n++] = b->recs[i];
	qc_audit_insert(ours, n);
	pfree(ours);
}

/* An error that is one record's fault, not the table's or the server's. */
static bool
is_record_error(int sqlerrcode)
{
	int			category = ERRCODE_TO_CATEGORY(sqlerrcode);

	return category == ERRCODE_DATA_EXCEPTION ||
		category == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION;
}

/* Take b's records off the queue; failed ones, and other databases', are lost. */
static void
consume(const Batch *b, bool failed)
{
	Size		bytes = 0;
	int			lost = 0;

	for (int i = 0; i < b->n; i++)
	{
		bytes += b->bytes[i];
		if (failed || b->recs[i].dboid != MyDatabaseId)
			lost++;
	}
	if (lost > 0)
		ereport(WARNING,
				(errmsg("queryclaw audit writer lost %d audit record(s)", lost),
				 errdetail(failed ? "The record could not be inserted." :
						   "The records came from another database than queryclaw.database.")));
	qc_auditq_consume(b->n, bytes, lost);
}

static void
decode_batch(const StringInfo copy, int n, Batch *b)
{
	const char *p = copy->data;

	b->n = n;
	b->recs = palloc(n * sizeof(QcAuditRecord));
	b->bytes = palloc(n * sizeof(Size));
	for (int i = 0; i < n; i++)
	{
		uint32		len;

		memcpy(&len, p, sizeof(len));
		qc_audit_record_decode(p + sizeof(len), &b->recs[i]);
		b->bytes[i] = sizeof(len) + len;
		p += b->bytes[i];
	}
}

/* After a data error in a batch: find the faulty record, keep the others. */
static void
write_one_by_one(const Batch *b)
{
	for (int i = 0; i < b->n; i++)
	{
		Batch		one = {1, &b->recs[i], &b->bytes[i]};
		int			rc = run_in_transaction("writing one queued audit record",
											insert_records, &one);

		if (rc != 0 && !is_record_error(rc))
		{
			retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), QC_RETRY_MS);
			return;
		}
		consume(&one, rc != 0);
	}
}

/* Write the oldest queued batch; true when it did (there may be more). */
static bool
write_queued(void)
{
	StringInfoData copy;
	Batch		b;
	int			n;
	int			rc;

	if (GetCurrentTimestamp() < retry_at)
		return false;
	initStringInfo(&copy);
	n = qc_auditq_peek(&copy, QC_BATCH_BYTES);
	if (n == 0)
		return false;
	decode_batch(&copy, n, &b);
	rc = run_in_transaction("writing queued audit records", insert_records, &b);
	if (rc == 0)
		consume(&b, false);
	else if (is_record_error(rc))
		write_one_by_one(&b);
	else
		retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), QC_RETRY_MS);
	return rc == 0;
}

static void
delete_expired(void *arg)
{
	uint64	   *deleted = arg;
	Oid			type = TIMESTAMPTZOID;
	Datum		cutoff = TimestampTzGetDatum(GetCurrentTimestamp() - qc_audit_retention_us);
	int			rc;

	/*
	 * The batch's ids are collected once, into an array, and deleted through
	 * the primary key: "id IN (SELECT ... LIMIT n)" leaves the planner a
	 * join to choose, and right after a bulk load, without statistics, it
	 * may choose one that rescans the subquery for every row.  Operators
	 * are named with their schema (see bgsession.c).
	 */
	rc = SPI_execute_with_args("DELETE FROM queryclaw.audit_log"
							   " WHERE id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   " SELECT id FROM queryclaw.audit_log"
							   " WHERE at OPERATOR(pg_catalog.<) $1"
							   " LIMIT " CppAsString2(QC_RETENTION_BATCH) "))",
							   1, &type, &cutoff, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "could not apply audit retention: %s", SPI_result_code_string(rc));
	*deleted = SPI_processed;
}

/* One retention batch when due; true when there may be more to delete. */
static bool
apply_retention(void)
{
	TimestampTz now = GetCurrentTimestamp();
	uint64		deleted = 0;

	if (qc_audit_retention_us <= 0 || now < retention_at)
		return false;
	if (run_in_transaction("applying queryclaw.audit_retention", delete_expired, &deleted) == 0 &&
		deleted == QC_RETENTION_BATCH)
		return true;
	retention_at = TimestampTzPlusMilliseconds(now, QC_RETENTION_EVERY_MS);
	return false;
}

/* One pass; true when there is more to do at once. */
static bool
work(MemoryContext cxt, bool retention)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	bool		busy = write_queued();

	if (retention)
		busy |= apply_retention();
	MemoryContextSwitchTo(old);
	MemoryContextReset(cxt);
	return busy;
}

static void
wait_for_work(long timeout_ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, qc_wait_event(QC_WAIT_AUDIT_WORKER));
}

/*
 * After a wake-up, give the calls of a burst a moment to queue their
 * records, so that one transaction writes them all: woken by every record,
 * the worker would spend a transaction on each call, more than the call
 * itself costs, on the cores the callers need.
 */
static void
gather(void)
{
	(void) WaitLatch(NULL, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, QC_GATHER_MS,
					 qc_wait_event(QC_WAIT_AUDIT_WORKER));
}

/* SIGTERM: write what is queued and what calls in flight will queue. */
static void
drain(MemoryContext cxt)
{
	TimestampTz give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  QC_DRAIN_GRACE_MS);
	uint64		left;

	while (!qc_auditq_idle() && GetCurrentTimestamp() < give_up)
	{
		ResetLatch(MyLatch);
		if (!work(cxt, false))
			wait_for_work(100);
	}
	left = qc_auditq_pending();
	if (left > 0)
		ereport(LOG,
				(errmsg("queryclaw audit writer stopping with %llu audit record(s) still queued",
						(unsigned long long) left),
				 errdetail("They are written when the worker starts again; a server shutdown loses them.")));
}

void
qc_audit_worker_main(Datum main_arg)
{
	MemoryContext cxt;

	/* on SIGTERM, what is queued is written first (see the file header) */
	qc_bgsession_start(qc_database);
	qc_auditq_attach_worker();
	cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw audit writer",
								ALLOCSET_DEFAULT_SIZES);
	ereport(LOG,
			(errmsg("queryclaw audit writer started in database \"%s\"", qc_database)));

	while (!qc_bgsession_stop)
	{
		if (qc_bgsession_next_pass())
			retention_at = 0;	/* a new retention applies at once */
		if (!work(cxt, true))
		{
			wait_for_work(QC_WORKER_NAP_MS);
			gather();
		}
	}
	drain(cxt);
	proc_exit(1);
}
