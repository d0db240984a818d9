/*-------------------------------------------------------------------------
 *
 * qwait.c
 *	  SQL entry points on queued requests: wait() and cancel_requests().
 *
 * wait() reads the rows as the caller, so the table's row-level security
 * shows it its own (all of them for queryclaw_admin): ids of other roles'
 * requests are left out, as ids that do not exist.  Each look is a new
 * statement, hence in READ COMMITTED a new snapshot that sees what the
 * workers committed since; between looks it sleeps on the condition
 * variable the workers broadcast after committing final states, and looks
 * again at least every QC_WAIT_POLL_MS anyway.  In a REPEATABLE READ or
 * SERIALIZABLE transaction, or for a request queued in the caller's own
 * open transaction, it would see nothing change: it says so at once.
 *
 * cancel_requests() writes as the table's owner, and only the caller's own
 * rows: see queue.h for what the workers do with a cancelled row.  So does
 * enrichment_purge(), which deletes an enrichment's final requests once
 * their results were written, so that a backfill of any size keeps about
 * a thousand of its rows in the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "queue.h"

PG_FUNCTION_INFO_V1(queue_wait);
PG_FUNCTION_INFO_V1(cancel_requests);
PG_FUNCTION_INFO_V1(enrichment_cancel);
PG_FUNCTION_INFO_V1(enrichment_purge);

/* Longest sleep between two looks at the rows. */
#define QC_WAIT_POLL_MS 200

/* The timeout argument in milliseconds (a month counts 30 days). */
static int64
timeout_ms(const Interval *span)
{
	double		ms = ((double) span->month * DAYS_PER_MONTH + span->day) * (USECS_PER_DAY / 1000) +
		span->time / 1000.0;

	if (ms < 0)
		return 0;
	return ms > (double) PG_INT64_MAX / 2 ? PG_INT64_MAX / 2 : (int64) ms;
}

/*
 * Read the caller's rows among ids (SPI connected); raise 55000 if one was
 * queued in this very transaction.  Returns whether all are final.
 */
static bool
look(ArrayType *ids)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		args[1] = {PointerGetDatum(ids)};
	bool		all_final = true;

	qc_queue_plan(&plan,
				  "SELECT r.*, r.xmin AS qc_xmin,"
				  " r.state OPERATOR(pg_catalog.=) ANY (ARRAY['done', 'failed', 'cancelled']) AS qc_final"
				  " FROM queryclaw.requests r"
				  " WHERE r.id OPERATOR(pg_catalog.=) ANY ($1) ORDER BY r.id",
				  1, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read requests");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		TransactionId xmin = DatumGetTransactionId(SPI_getbinval(row, desc, desc->natts - 1,
																 &isnull));

		if (TransactionIdIsCurrentTransactionId(xmin))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot wait for request %lld in the transaction that queued it",
							(long long) DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull))),
					 errdetail("The async workers see a request only once the transaction that queued it has committed."),
					 errhint("Commit first, then call queryclaw.wait() in a new transaction.")));
		all_final &= DatumGetBool(SPI_getbinval(row, desc, desc->natts, &isnull));
	}
	return all_final;
}

/* The rows of the last look, as wait()'s result set. */
static void
return_rows(ReturnSetInfo *rsinfo)
{
	TupleDesc	out = rsinfo->setDesc;
	TupleDesc	in = SPI_tuptable->tupdesc;
	Datum	   *values = palloc(out->natts * sizeof(Datum));
	bool	   *nulls = palloc(out->natts * sizeof(bool));
	int		   *from = palloc(out->natts * sizeof(int));

	for (int c = 0; c < out->natts; c++)
		from[c] = TupleDescAttr(out, c)->attisdropped ? SPI_ERROR_NOATTRIBUTE :
			SPI_fnumber(in, NameStr(TupleDescAttr(out, c)->attname));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		for (int c = 0; c < out->natts; c++)
		{
			nulls[c] = true;
			if (from[c] > 0)
				values[c] = SPI_getbinval(SPI_tuptable->vals[i], in, from[c], &nulls[c]);
		}
		tuplestore_putvalues(rsinfo->setResult, out, values, nulls);
	}
}

/*
 * wait(ids bigint[], timeout interval DEFAULT '30 seconds')
 *	returns SETOF queryclaw.requests
 *
 * Called on NULL input: NULL ids name no request (no rows, at once); a
 * NULL timeout waits until every request is final, as long as
 * statement_timeout (or a cancel) lets it.
 */
Datum
queue_wait(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *ids;
	bool		forever = PG_ARGISNULL(1);
	TimestampTz deadline = 0;
	ConditionVariable *finished;
	bool		sleeping = false;

	qc_queue_require("wait");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot wait for requests in a %s transaction",
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("Its snapshot does not change, so it would not see the async workers' progress."),
				 errhint("Call queryclaw.wait() in a READ COMMITTED transaction.")));
	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	ids = PG_GETARG_ARRAYTYPE_P(0);
	qc_queue_check_ids(ids, "wait");
	if (!forever)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   timeout_ms(PG_GETARG_INTERVAL_P(1)));
	finished = &qc_queue_shared()->finished;

	for (;;)
	{
		long		left = QC_WAIT_POLL_MS;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (!forever)
			left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (look(ids) || left <= 0)
			break;
		SPI_finish();
		if (!sleeping)
		{
			ConditionVariablePrepareToSleep(finished);
			sleeping = true;
		}
		(void) ConditionVariableTimedSleep(finished, Min(left, QC_WAIT_POLL_MS),
										   qc_wait_event(QC_WAIT_REQUESTS));
		CHECK_FOR_INTERRUPTS();
	}
	if (sleeping)
		ConditionVariableCancelSleep();
	return_rows(rsinfo);
	SPI_finish();
	return (Datum) 0;
}

/* Cancel role's requests among ids; how many were cancelled. */
static int32
cancel_of_role(Datum ids, Oid role)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8ARRAYOID, REGROLEOID};
	Datum		args[2];
	QcQueueAsOwner save;
	bool		isnull;
	bool		called_back;
	int32		n;

	args[0] = ids;
	args[1] = ObjectIdGetDatum(role);
	qc_queue_begin_as_owner(&save);
	/*
	 * With a callback, finished_at waits for a callback worker to call it.
	 * A request whose response came and whose callback is due is no longer
	 * cancelled: its outcome is recorded.
	 */
	qc_queue_plan(&plan,
				  "WITH c AS (UPDATE queryclaw.requests r"
				  " SET state = 'cancelled', error = 'cancelled', sqlstate = '57014',"
				  " finished_at = CASE WHEN r.callback IS NULL THEN pg_catalog.now() END,"
				  " waiting = CASE WHEN r.callback IS NOT NULL THEN '" QC_WAITING_CALLBACK "' END,"
				  " next_attempt_at = pg_catalog.now()"
				  " WHERE r.id OPERATOR(pg_catalog.=) ANY ($1)"
				  " AND r.role OPERATOR(pg_catalog.=) $2"
				  " AND r.state OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running', 'retrying'])"
				  " AND r.waiting IS DISTINCT FROM '" QC_WAITING_CALLBACK "'"
				  " RETURNING r.id, r.callback IS NOT NULL AS called_back),"
				  " s AS (DELETE FROM queryclaw.request_secrets x"
				  " WHERE x.id OPERATOR(pg_catalog.=) ANY (SELECT c.id FROM c))"
				  " SELECT pg_catalog.count(*)::pg_catalog.int4, pg_catalog.bool_or(c.called_back)"
				  " FROM c",
				  2, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not cancel requests");
	n = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	called_back = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
											 &isnull)) && !isnull;
	qc_queue_end_as_owner(&save);
	if (n > 0)
		qc_queue_wake_at_commit(called_back);
	return n;
}

/* cancel_requests(ids bigint[]) returns int: how many were cancelled */
Datum
cancel_requests(PG_FUNCTION_ARGS)
{
	qc_queue_require("cancel_requests");
	qc_queue_check_ids(PG_GETARG_ARRAYTYPE_P(0), "cancel_requests");
	PG_RETURN_INT32(cancel_of_role(PG_GETARG_DATUM(0), GetUserId()));
}

/*
 * enrichment_cancel(ids bigint[], owner regrole) returns int: an
 * enrichment's requests cancelled by its owner (who may have no EXECUTE on
 * cancel_requests) or by its triggers, which run as the tables' owner
 * whoever deletes a row.  Nobody else can name another role's requests.
 */
Datum
enrichment_cancel(PG_FUNCTION_ARGS)
{
	Oid			owner = PG_GETARG_OID(1);

	if (owner != GetUserId() && !superuser() && GetUserId() != qc_queue_table_owner())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to cancel requests of role %s",
						GetUserNameFromId(owner, false))));
	qc_queue_require("enrichment_cancel");
	PG_RETURN_INT32(cancel_of_role(PG_GETARG_DATUM(0), owner));
}

/*
 * enrichment_purge(ids bigint[]) returns bigint: the calling role's final
 * enrichment requests among ids deleted (those whose callback is the
 * enrichments' own, which wrote their results in the transaction that
 * made them final); how many.  No other request of the role's history
 * goes before async_retention.
 */
Datum
enrichment_purge(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8ARRAYOID, REGROLEOID};
	Datum		args[2];
	QcQueueAsOwner save;
	uint64		n;

	qc_queue_require("enrichment_purge");
	args[0] = PG_GETARG_DATUM(0);
	args[1] = ObjectIdGetDatum(GetUserId());
	qc_queue_begin_as_owner(&save);
	qc_queue_plan(&plan,
				  "DELETE FROM queryclaw.requests r"
				  " WHERE r.id OPERATOR(pg_catalog.=) ANY ($1)"
				  " AND r.role OPERATOR(pg_catalog.=) $2"
				  " AND r.finished_at IS NOT NULL"
				  " AND pg_catalog.starts_with(r.callback, 'queryclaw.enrichment_done(')",
				  2, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete requests");
	n = SPI_processed;
	qc_queue_end_as_owner(&save);
	PG_RETURN_INT64((int64) n);
}
