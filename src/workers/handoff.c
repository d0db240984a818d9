/*-------------------------------------------------------------------------
 *
 * handoff.c
 *	  The final outcomes of a service step's requests recorded in one
 *	  statement: made final, or handed from an async worker to the
 *	  callback workers, with the hints that tell the callback workers of
 *	  them once that commits.
 *
 * An async worker calls no callback (callbackworker.c says why).  When a
 * request's outcome is final and a callback is due, the worker stores the
 * outcome and marks the request (queue.h); without a callback it makes the
 * request final.  Either is one row update, and for all the requests of a
 * role that a service step records, one statement: a statement a request
 * cost the worker more than the request's own row did.  Each row is locked
 * without waiting, as every row the worker writes: one a user's
 * transaction holds (a cancel not yet committed) is left for a later pass,
 * one cancelled meanwhile keeps no result (its callback is the callback
 * workers' already), and the secrets of both are deleted.  The statement
 * names the rows by their ids alone, so that only the primary key's index
 * fits, whatever the statistics say, and joins the new values to them by
 * id alone (a hash join): joined to the locked rows as well, its generic
 * plan read every value once for every row, and copied it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "callbackhints.h"
#include "handoff.h"
#include "queue.h"

/* The requests handed over since the worker last told the callback workers. */
static QcCallbackHint handed_off[QC_CALLBACK_HINTS];
static int	nhanded_off = 0;
static bool handed_off_lost = false;	/* more than were kept */

static void
note_handed_off(const QcAsyncRequest *r)
{
	if (nhanded_off == QC_CALLBACK_HINTS)
	{
		handed_off_lost = true;
		return;
	}
	handed_off[nhanded_off].id = r->id;
	handed_off[nhanded_off].role = r->role;
	nhanded_off++;
}

bool
qc_handoff_hint(void)
{
	bool		any = nhanded_off > 0 || handed_off_lost;

	qc_callback_hints_add(handed_off, nhanded_off);
	if (handed_off_lost)
		qc_callback_hints_lose();
	qc_handoff_forget();
	return any;
}

void
qc_handoff_forget(void)
{
	nhanded_off = 0;
	handed_off_lost = false;
}

/*
 * The arguments of the statement below, built from the requests: the
 * state each is made (NULL: handed to the callback workers, its state kept).
 * Returns whether any of them has secrets to delete.
 */
static bool
record_args(QcAsyncRequest **rs, const bool *handed, int n, Datum *args)
{
	Datum	   *ids = palloc(n * sizeof(Datum));
	Datum	   *results = palloc(n * sizeof(Datum));
	Datum	   *errors = palloc(n * sizeof(Datum));
	Datum	   *sqlstates = palloc(n * sizeof(Datum));
	Datum	   *states = palloc(n * sizeof(Datum));
	Datum	   *secret_ids = palloc(n * sizeof(Datum));
	bool	   *no_result = palloc(n * sizeof(bool));
	bool	   *no_error = palloc(n * sizeof(bool));
	bool	   *no_sqlstate = palloc(n * sizeof(bool));
	int			nsecrets = 0;

	for (int i = 0; i < n; i++)
	{
		QcAsyncRequest *r = rs[i];

		ids[i] = Int64GetDatum(r->id);
		results[i] = PointerGetDatum(r->result);
		no_result[i] = r->result == NULL;
		errors[i] = r->error ? CStringGetTextDatum(r->error) : (Datum) 0;
		no_error[i] = r->error == NULL;
		sqlstates[i] = r->sqlstate ? CStringGetTextDatum(r->sqlstate) : (Datum) 0;
		no_sqlstate[i] = r->sqlstate == NULL;
		states[i] = CStringGetTextDatum(r->outcome == QC_ASYNC_DONE ? "done" : "failed");
		if (r->has_secrets)
			secret_ids[nsecrets++] = Int64GetDatum(r->id);
	}
	args[0] = qc_queue_array(ids, NULL, n, INT8OID);
	args[1] = qc_queue_array(results, no_result, n, JSONBOID);
	args[2] = qc_queue_array(errors, no_error, n, TEXTOID);
	args[3] = qc_queue_array(sqlstates, no_sqlstate, n, TEXTOID);
	args[4] = qc_queue_array(secret_ids, NULL, nsecrets, INT8OID);
	args[5] = qc_queue_array(states, (bool *) handed, n, TEXTOID);
	return nsecrets > 0;
}

/* The state of request id as the statement locked it, or NULL. */
static char *
locked_state(int64 id)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
										&isnull)) == id)
			return SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	return NULL;
}

/* Is id among the rows of there? */
static bool
still_there(int64 id, SPITupleTable *there, uint64 nthere)
{
	for (uint64 i = 0; i < nthere; i++)
	{
		bool		isnull;

		if (DatumGetInt64(SPI_getbinval(there->vals[i], there->tupdesc, 1, &isnull)) == id)
			return true;
	}
	return false;
}

/* Those not locked: held by a user's transaction (to be deferred), or gone. */
static void
sort_out_missing(QcAsyncRequest **missing, int n, List **held)
{
	static SPIPlanPtr plan = NULL;
	Oid			type = INT8ARRAYOID;
	Datum	   *ids = palloc(n * sizeof(Datum));
	Datum		arg;

	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(missing[i]->id);
	arg = qc_queue_array(ids, NULL, n, INT8OID);
	qc_queue_plan(&plan, "SELECT id FROM queryclaw.requests"
				  " WHERE id OPERATOR(pg_catalog.=) ANY ($1)", 1, &type);
	if (SPI_execute_plan(plan, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read queryclaw.requests");
	for (int i = 0; i < n; i++)
		if (still_there(missing[i]->id, SPI_tuptable, SPI_processed))
			*held = lappend(*held, missing[i]);
}

/*
 * The statement, with the deletion of the requests' secrets or without it
 * (most requests have none: the statement then starts without a second
 * table to write).
 */
#define HANDOFF(SECRETS) \
	"WITH l AS (SELECT r.id, r.state FROM queryclaw.requests r" \
	"  WHERE r.id OPERATOR(pg_catalog.=) ANY ($1) FOR UPDATE SKIP LOCKED)," \
	" h AS (UPDATE queryclaw.requests r SET result = v.result, error = v.error," \
	"  sqlstate = v.sqlstate," \
	"  state = COALESCE(v.state, r.state)," \
	"  finished_at = CASE WHEN v.state IS NOT NULL THEN pg_catalog.now() END," \
	"  waiting = CASE WHEN v.state IS NULL THEN '" QC_WAITING_CALLBACK "' END" \
	"  FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)," \
	"   pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($6))" \
	"   AS v(id, result, error, sqlstate, state)" \
	"  WHERE r.id OPERATOR(pg_catalog.=) v.id" \
	"  AND r.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT l.id FROM l" \
	"   WHERE l.state OPERATOR(pg_catalog.=) 'running')))" \
	SECRETS \
	" SELECT l.id, l.state FROM l"
#define HANDOFF_SECRETS \
	", s AS (DELETE FROM queryclaw.request_secrets x" \
	"  WHERE x.id OPERATOR(pg_catalog.=) ANY ($5)" \
	"  AND x.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT l.id FROM l)))"

void
qc_handoff_record(QcAsyncRequest **rs, const bool *handed, int n, List **held)
{
	static SPIPlanPtr plan = NULL;
	static SPIPlanPtr plan_no_secrets = NULL;
	Oid			types[6] = {INT8ARRAYOID, JSONBARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, TEXTARRAYOID};
	Datum		args[6];
	QcAsyncRequest **missing = palloc(n * sizeof(QcAsyncRequest *));
	int			nmissing = 0;
	bool		secrets = record_args(rs, handed, n, args);

	if (secrets)
		qc_queue_plan(&plan, HANDOFF(HANDOFF_SECRETS), 6, types);
	else
		qc_queue_plan(&plan_no_secrets, HANDOFF(""), 6, types);
	if (SPI_execute_plan(secrets ? plan : plan_no_secrets, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not update queryclaw.requests");
	for (int i = 0; i < n; i++)
	{
		char	   *state = locked_state(rs[i]->id);

		if (state == NULL)
			missing[nmissing++] = rs[i];
		else if (handed[i] && strcmp(state, "running") == 0)
			note_handed_off(rs[i]);
	}
	if (nmissing > 0)
		sort_out_missing(missing, nmissing, held);
}
