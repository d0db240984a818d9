/*-------------------------------------------------------------------------
 *
 * enrichfeed.c
 *	  The enrichment worker: a background worker that feeds each
 *	  enrichment that has stale rows, or a backfill still to walk, as its
 *	  owner.
 *
 * Feeding (queryclaw.enrichment_feed, SQL in the update script) walks the
 * backfill on, evaluates the stale rows' request expressions and queues
 * what they ask, up to the enrichment's cap of requests in flight; its
 * requests' callback writes the results back.  It runs here, not in the
 * transaction that made a row stale, because the request expression is
 * the owner's and must run as the owner, with the owner's settings, never
 * as whoever inserted or updated the row: in a role's session, as a
 * callback is (rolesession.c), bounded by callback_timeout, in a
 * transaction of its own so that one enrichment's failure is recorded on
 * it (last_error) and stops nothing else, and its requests go out as soon
 * as it commits.
 *
 * It is a worker of its own, not a turn of the async worker's: a feed
 * evaluates hundreds of request expressions and queues their requests,
 * tens of milliseconds during which an async worker would leave its
 * responses unread.  Here it takes the other core, as the callback
 * workers take the write-backs.  Like them it sends nothing itself
 * (qc_call_refuse_sending): a request expression that calls the network
 * fails its row, saying so.
 *
 * It looks every QC_ENRICH_LOOK_MS; while an enrichment has rows to ask
 * but a full window of requests, every QC_ENRICH_FEED_BUSY_MS; and at
 * once again after a turn that asked for rows: a backfill's requests are
 * topped up a quarter of its window at a time, as they end.  A trigger
 * that made rows stale, and create, resume, retry and refresh, wake it at
 * commit (enrichment_wake).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "asyncrun.h"
#include "bgsession.h"
#include "call.h"
#include "compat.h"
#include "enrichfeed.h"
#include "guc.h"
#include "queue.h"
#include "rolesession.h"
#include "subxact.h"

/* Enrichments fed in one turn; the others wait for the next. */
#define QC_ENRICH_FEED_BATCH 16

/*
 * While an enrichment has rows to ask but no room in its window of
 * requests, the next look comes this soon, so that the window is topped
 * up as its requests end (the feed waits for a quarter of it to be free,
 * so that each turn asks hundreds); otherwise once in QC_ENRICH_LOOK_MS,
 * or when woken.
 */
#define QC_ENRICH_FEED_BUSY_MS	20
#define QC_ENRICH_LOOK_MS		1000
#define QC_ENRICH_RETRY_MS		1000	/* after a failed look */
#define QC_ENRICH_RESTART_S		5

typedef struct Due
{
	int64		id;
	Oid			owner;
	int			asked;			/* rows its feed asked for (or failed) */
} Due;

typedef struct DueList
{
	int			n;
	Due			due[QC_ENRICH_FEED_BATCH];
} DueList;

/* As the worker: the enrichments with something to ask, in turn. */
static void
read_due(void *arg)
{
	DueList    *list = arg;

	/* an owner who lost EXECUTE on create_enrichment has its enrichments stop */
	if (SPI_execute("SELECT d.id, d.owner::pg_catalog.oid FROM queryclaw.enrichment_definitions d"
					" WHERE NOT d.paused AND pg_catalog.has_function_privilege(d.owner,"
					"  'queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval)',"
					"  'EXECUTE')"
					" AND (NOT d.backfill_done OR (d.citus OPERATOR(pg_catalog.->>) 'shared') OPERATOR(pg_catalog.=) 'false'"
					"  OR EXISTS"
					"  (SELECT 1 FROM queryclaw.enrichment_rows r"
					"	 WHERE r.enrichment OPERATOR(pg_catalog.=) d.id"
					"	   AND r.state OPERATOR(pg_catalog.=) 'stale'"
					"	 ORDER BY r.key DESC LIMIT 1))"
					" ORDER BY pg_catalog.random() LIMIT " CppAsString2(QC_ENRICH_FEED_BATCH),
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the enrichments");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		list->due[i].id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		list->due[i].owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	list->n = (int) SPI_processed;
}

/* As the owner: feed it. */
static void
feed_as_owner(void *arg)
{
	Due		   *due = arg;
	Oid			type = INT8OID;
	Datum		value = Int64GetDatum(due->id);
	bool		isnull;

	if (SPI_execute_with_args("SELECT queryclaw.enrichment_feed($1)", 1, &type, &value, NULL,
							  false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not feed enrichment " INT64_FORMAT, due->id);
	due->asked = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											 &isnull));
}

static void
feed(void *arg)
{
	Due		   *due = arg;

	qc_role_run_callback(qc_role_settings_load(due->owner), feed_as_owner, due);
}

typedef struct Failure
{
	int64		id;
	const char *message;
} Failure;

/* As the worker: what stopped a feed, where its owner sees it. */
static void
record_failure(void *arg)
{
	Failure    *f = arg;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(f->id), CStringGetTextDatum(f->message)};

	if (SPI_execute_with_args("UPDATE queryclaw.enrichment_definitions SET last_error = $2"
							  " WHERE id OPERATOR(pg_catalog.=) $1", 2, types, values, NULL,
							  false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record an enrichment's failure");
}

typedef struct Pass
{
	DueList		list;
	int			at;				/* the one to feed */
} Pass;

/* As the worker: the enrichments with something to ask, if 0.3 is there. */
static void
read_all_due(void *arg)
{
	Pass	   *pass = arg;

	pass->list.n = 0;
	/* the extension's objects may be older than 0.3 until ALTER EXTENSION */
	if (OidIsValid(get_relname_relid("enrichment_definitions",
									 get_namespace_oid("queryclaw", true))))
		qc_async_as_writer(read_due, &pass->list);
}

/*
 * One enrichment's feed, in a transaction of its own: its requests go out
 * at its commit (the async workers are woken then), and a failure is
 * recorded in another.
 */
static void
feed_one(void *arg)
{
	Pass	   *pass = arg;
	Due		   *due = &pass->list.due[pass->at];
	static TimestampTz quiet_until = 0;
	ErrorData  *failure = qc_subxact_try(feed, due);
	Failure		f;

	qc_role_forget_callback();
	if (failure == NULL)
		return;
	due->asked = -1;
	f.id = due->id;
	f.message = psprintf("feed failed: %s", failure->message);
	/* its owner sees it in last_error; the log hears of it once a minute */
	if (GetCurrentTimestamp() >= quiet_until)
	{
		ereport(WARNING,
				(errmsg("enrichment " INT64_FORMAT " could not be fed: %s",
						f.id, failure->message),
				 errdetail("Failures of enrichments are logged once a minute at most; queryclaw.enrichments shows each one's last error.")));
		quiet_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 60 * 1000);
	}
	qc_async_as_writer(record_failure, &f);
	FreeErrorData(failure);
}

/* What a pass found. */
typedef enum Found
{
	FOUND_FAILURE,				/* a transaction failed */
	FOUND_NOTHING,				/* no enrichment has rows to ask */
	FOUND_NO_ROOM,				/* some have, but their windows are full */
	FOUND_ASKED					/* some rows were asked for */
} Found;

/* What the pass's feeds found; one whose feed failed counts for nothing. */
static Found
pass_found(const Pass *pass)
{
	Found		found = FOUND_NOTHING;

	for (int i = 0; i < pass->list.n; i++)
		if (pass->list.due[i].asked >= 0)
			found = Max(found, pass->list.due[i].asked > 0 ? FOUND_ASKED : FOUND_NO_ROOM);
	return found;
}

/* Feed every enrichment that has work, each in turn. */
static Found
feed_all(MemoryContext cxt)
{
	Pass		pass = {0};
	volatile bool failed = false;
	Found		found;

	PG_TRY();
	{
		qc_bgsession_transaction("looking for stale rows", read_all_due, &pass);
		for (pass.at = 0; pass.at < pass.list.n && !qc_bgsession_stop; pass.at++)
			qc_bgsession_transaction("feeding an enrichment", feed_one, &pass);
	}
	PG_CATCH();
	{
		qc_bgsession_recover(cxt);
		failed = true;
	}
	PG_END_TRY();
	found = pass_found(&pass);
	MemoryContextReset(cxt);
	return failed ? FOUND_FAILURE : found;
}

void
qc_enrich_worker_init(void)
{
	if (qc_async_workers > 0)
		qc_bgsession_register("qc_enrich_worker_main", "queryclaw enrichment worker",
							  "queryclaw enrichment worker", QC_ENRICH_RESTART_S,
							  Int32GetDatum(0));
}

PGDLLEXPORT void qc_enrich_worker_main(Datum main_arg);

void
qc_enrich_worker_main(Datum main_arg)
{
	MemoryContext cxt;

	qc_bgsession_start(qc_database);
	qc_queue_attach_enrich_worker();
	qc_call_refuse_sending(QC_SENDING_IN_ENRICHMENT);
	cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw enrichments",
								ALLOCSET_DEFAULT_SIZES);
	ereport(LOG,
			(errmsg("queryclaw enrichment worker started in database \"%s\"", qc_database)));
	while (!qc_bgsession_stop)
	{
		static const long wait_ms[] = {
			[FOUND_FAILURE] = QC_ENRICH_RETRY_MS,
			[FOUND_NOTHING] = QC_ENRICH_LOOK_MS,
			[FOUND_NO_ROOM] = QC_ENRICH_FEED_BUSY_MS,
			[FOUND_ASKED] = 0,
		};
		Found		found;

		(void) qc_bgsession_next_pass();
		MemoryContextSwitchTo(cxt);
		found = feed_all(cxt);
		if (!qc_bgsession_stop && wait_ms[found] > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms[found], qc_wait_event(QC_WAIT_ENRICH_WORKER));
	}
	proc_exit(1);
}
