/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a piece of work in an internal subtransaction whose failure
 *	  is handed back: a tool call whose error the model reads, a step of an
 *	  LLM job whose error ends that job alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * The one body of both: cancel_stops says whether a query cancel is raised
 * again (a statement's, which the user means for the whole statement) or
 * handed back (a background worker's, where a statement_timeout of the
 * request's role ends that request alone).  A termination always stops.
 */
static ErrorData *
run_in_subxact(void (*fn) (void *arg), void *arg, bool cancel_stops)
{
	MemoryContext callercxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(callercxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(callercxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(callercxt);
		CurrentResourceOwner = owner;
		if ((cancel_stops && edata->sqlerrcode == ERRCODE_QUERY_CANCELED) ||
			ProcDiePending)
			ReThrowError(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(callercxt);
	CurrentResourceOwner = owner;
	return edata;
}

ErrorData *
qc_subxact_run(void (*fn) (void *arg), void *arg)
{
	return run_in_subxact(fn, arg, true);
}

ErrorData *
qc_subxact_try(void (*fn) (void *arg), void *arg)
{
	return run_in_subxact(fn, arg, false);
}
