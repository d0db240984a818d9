/*-------------------------------------------------------------------------
 *
 * proclookup.c
 *	  A function found by its signature, and whether a role may execute
 *	  it: a tool the LLM may be offered, a queued request's function or
 *	  callback.  Each may be missing (an older release's SQL objects, or
 *	  dropped after the request was queued), which is the caller's to
 *	  report, so neither raises.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

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

bool
qc_proc_executable(Oid fn, Oid role)
{
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	Snapshot	snapshot;
	HeapTuple	tuple;
	bool		executable = false;

	ScanKeyInit(&key, Anum_pg_proc_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(fn));
	rel = table_open(ProcedureRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, ProcedureOidIndexId, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Oid			owner = ((Form_pg_proc) GETSTRUCT(tuple))->proowner;
		bool		isnull;
		Datum		acl = heap_getattr(tuple, Anum_pg_proc_proacl,
									   RelationGetDescr(rel), &isnull);

		executable = superuser_arg(role) ||
			aclmask(isnull ? acldefault(OBJECT_FUNCTION, owner) : DatumGetAclP(acl),
					role, owner, ACL_EXECUTE, ACLMASK_ANY) != 0;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return executable;
}
