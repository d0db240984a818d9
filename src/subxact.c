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

ErrorData *
qc_subxact_run(void (*fn) (void *arg), void *arg)
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
		/* the user asked to stop: the whole statement stops, not just fn */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || ProcDiePending)
			ReThrowError(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(callercxt);
	CurrentResourceOwner = owner;
	return edata;
}
