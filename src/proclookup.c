/*-------------------------------------------------------------------------
 *
 * proclookup.c
 *	  A function found by its signature: a tool the LLM may be offered, a
 *	  queued request's function or callback.  Each may be missing (an
 *	  older release's SQL objects, or dropped after the request was
 *	  queued), which is the caller's to report, so the lookup never raises.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/regproc.h"

#include "proclookup.h"

Oid
qc_proc_by_signature(const char *signature)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		fn;

	/* to_regprocedure returns NULL where regprocedurein would raise */
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	fn = to_regprocedure(fcinfo);
	return fcinfo->isnull ? InvalidOid : DatumGetObjectId(fn);
}
