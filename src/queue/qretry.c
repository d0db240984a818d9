/*-------------------------------------------------------------------------
 *
 * qretry.c
 *	  SQL entry point that runs finished requests again: retry_requests().
 *
 * It puts the caller's failed and cancelled requests back in the queue
 * under the same id, as if just queued: attempts from 0, no result, error
 * or finish time, due now.  Like cancel_requests() (qwait.c) it writes as
 * the table's owner and only the caller's own rows: other roles' ids, and
 * requests that are not failed or cancelled, are left alone.  Each request
 * put back counts against queryclaw.max_queued_per_role as an enqueue does
 * (qc_queue_admit), and the commit wakes the workers.
 *
 * A request whose arguments held secrets cannot be sent again as it was
 * queued: the arguments as given were deleted from request_secrets when it
 * ended, and requests.request holds them redacted.  Such a request is left
 * as it is, and a WARNING says how many were and why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"

#include "queue.h"

PG_FUNCTION_INFO_V1(retry_requests);

/* The caller's requests among ids that may go again. */
typedef struct Retryable
{
	Datum	   *ids;			/* int8 */
	int			n;
	int			lost;			/* final ones whose secrets are gone */
} Retryable;

/*
 * Read and lock the caller's failed and cancelled requests among ids (SPI
 * connected, as the table's owner).
 */
static void
find_retryable(Datum ids, Oid role, Retryable *found)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8ARRAYOID, REGROLEOID};
	Datum		args[2] = {ids, ObjectIdGetDatum(role)};

	qc_queue_plan(&plan,
				  "SELECT r.id, r.redacted AND NOT EXISTS (SELECT FROM queryclaw.request_secrets s"
				  "  WHERE s.id OPERATOR(pg_catalog.=) r.id)"
				  " FROM queryclaw.requests r"
				  " WHERE r.id OPERATOR(pg_catalog.=) ANY ($1)"
				  " AND r.role OPERATOR(pg_catalog.=) $2"
				  " AND r.state OPERATOR(pg_catalog.=) ANY (ARRAY['failed', 'cancelled'])"
				  " ORDER BY r.id FOR UPDATE",
				  2, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read requests");
	found->ids = palloc(Max(SPI_processed, 1) * sizeof(Datum));
	found->n = found->lost = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		bool		isnull;

		if (DatumGetBool(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull)))
			found->lost++;
		else
			found->ids[found->n++] = SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull);
	}
}

/* Put the requests found back in the queue (they are locked). */
static void
requeue(const Retryable *found)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		args[1];

	args[0] = PointerGetDatum(construct_array(found->ids, found->n, INT8OID, 8,
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	qc_queue_plan(&plan,
				  "UPDATE queryclaw.requests r SET state = 'queued', attempts = 0,"
				  " result = NULL, error = NULL, sqlstate = NULL, finished_at = NULL,"
				  " waiting = NULL, next_attempt_at = pg_catalog.now()"
				  " WHERE r.id OPERATOR(pg_catalog.=) ANY ($1)",
				  1, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != found->n)
		elog(ERROR, "could not queue requests again");
}

/* retry_requests(ids bigint[]) returns int: how many were queued again */
Datum
retry_requests(PG_FUNCTION_ARGS)
{
	Oid			role = GetUserId();
	QcQueueAsOwner save;
	Retryable	found;

	qc_queue_require("retry_requests");
	qc_queue_check_ids(PG_GETARG_ARRAYTYPE_P(0), "retry_requests");
	qc_queue_begin_as_owner(&save);
	find_retryable(PG_GETARG_DATUM(0), role, &found);
	for (int i = 0; i < found.n; i++)
		qc_queue_admit(role);
	if (found.n > 0)
		requeue(&found);
	qc_queue_end_as_owner(&save);
	if (found.lost > 0)
		ereport(WARNING,
				(errmsg_plural("%d request was not queued again",
							   "%d requests were not queued again",
							   found.lost, found.lost),
				 errdetail_plural("Its arguments held secrets, which were deleted when it ended.",
								  "Their arguments held secrets, which were deleted when they ended.",
								  found.lost),
				 errhint_plural("Queue it again with the function that queued it, giving its arguments again.",
								"Queue them again with the functions that queued them, giving their arguments again.",
								found.lost)));
	if (found.n > 0)
		qc_queue_wake_at_commit(false);
	PG_RETURN_INT32(found.n);
}
