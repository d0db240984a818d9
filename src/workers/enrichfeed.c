/*-------------------------------------------------------------------------
 *
 * enrichfeed.c
 *	  The async worker's turn at enrichments: each enrichment that has
 *	  stale rows, or a backfill still to walk, is fed as its owner.
 *
 * Feeding (queryclaw.enrichment_feed, SQL in the update script) walks the
 * backfill on, evaluates the stale rows' request expressions and queues
 * what they ask, up to the enrichment's cap of requests in flight; its
 * requests' callback writes the results back.  It runs here, not in the
 * transaction that made a row stale, because the request expression is
 * the owner's and must run as the owner, with the owner's settings, never
 * as whoever inserted or updated the row: in a role's session, as a
 * callback is (rolesession.c), bounded by callback_timeout, in a
 * subtransaction of its own so that one enrichment's failure is recorded
 * on it (last_error) and stops nothing else.
 *
 * The worker looks at every chore (QC_ASYNC_CHORES_MS), and while its
 * last look found rows to ask, at every service step QC_ENRICH_FEED_BUSY_MS
 * after it: a backfill's requests are topped up as they end.  A trigger
 * that made rows stale, and create, resume, retry and refresh, wake the
 * workers at commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "asyncrun.h"
#include "enrichfeed.h"
#include "rolesession.h"
#include "subxact.h"

/* Enrichments fed in one turn; the others wait for the next. */
#define QC_ENRICH_FEED_BATCH 16

/*
 * While an enrichment has rows to ask, the next turn comes this soon (at
 * every service step past it), so that a backfill's window of requests is
 * topped up as they end (the feed itself waits until half the window is
 * free, so that each turn asks hundreds); an idle worker looks only at its
 * chores.
 */
#define QC_ENRICH_FEED_BUSY_MS 20

typedef struct Due
{
	int64		id;
	Oid			owner;
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
					"	   AND r.state OPERATOR(pg_catalog.=) 'stale'))"
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

	if (SPI_execute_with_args("SELECT queryclaw.enrichment_feed($1)", 1, &type, &value, NULL,
							  false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not feed enrichment " INT64_FORMAT, due->id);
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

/*
 * Feed every enrichment that has work; how many have it (each may have
 * found its window of requests still too full to be worth topping up).
 */
static int
feed_all(void)
{
	static TimestampTz quiet_until = 0;
	DueList		list;

	/* the extension's objects may be older than 0.3 until ALTER EXTENSION */
	if (!OidIsValid(get_relname_relid("enrichment_definitions",
									  get_namespace_oid("queryclaw", true))))
		return 0;
	qc_async_as_writer(read_due, &list);
	for (int i = 0; i < list.n; i++)
	{
		ErrorData  *edata = qc_subxact_try(feed, &list.due[i]);

		qc_role_forget_callback();
		if (edata != NULL)
		{
			Failure		f = {list.due[i].id, psprintf("feed failed: %s", edata->message)};

			/* its owner sees it in last_error; the log hears of it once a minute */
			if (GetCurrentTimestamp() >= quiet_until)
			{
				ereport(WARNING,
						(errmsg("enrichment " INT64_FORMAT " could not be fed: %s",
								list.due[i].id, edata->message),
						 errdetail("Failures of enrichments are logged once a minute at most; queryclaw.enrichments shows each one's last error.")));
				quiet_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 60 * 1000);
			}
			qc_async_as_writer(record_failure, &f);
			FreeErrorData(edata);
		}
	}
	return list.n;
}

void
qc_enrich_feed(TimestampTz now, bool chores)
{
	static TimestampTz next_at = 0;
	static bool busy = false;

	if (!chores && !(busy && now >= next_at))
		return;
	busy = feed_all() > 0;	/* some enrichment had work */
	next_at = TimestampTzPlusMilliseconds(now, QC_ENRICH_FEED_BUSY_MS);
}
