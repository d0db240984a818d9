/*-------------------------------------------------------------------------
 *
 * proclookup.c
 *	  A function found by its signature, and whether a role may execute
 *	  it: a tool the LLM may be offered, a queued request's function or
 *	  callback.  Each may be missing (an older release's SQL objects, or
 *	  dropped after the request was queued), which is the caller's to
 *	  report, so neither raises.
 *
 * A signature's function is remembered (by_signature below): reading it
 * parses its type names with the SQL parser, and the async worker looks up
 * the same few signatures at every service step.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "proclookup.h"

/*
 * The function a signature names, looked up as regprocedure does, and what
 * the answer depends on besides the catalogs: the search path and the
 * user it is resolved for, and the session's temporary schema.
 */
typedef struct Remembered
{
	char	   *signature;
	char	   *search_path;
	Oid			user;
	Oid			temp_namespace;
	Oid			fn;				/* InvalidOid: there is none */
} Remembered;

#define QC_PROCS_REMEMBERED 64	/* then all are forgotten */

static Remembered remembered[QC_PROCS_REMEMBERED];
static int	nremembered = 0;
static MemoryContext remembered_cxt = NULL;
static bool callbacks_registered = false;

/*
 * A change to a catalog an answer came from (a function, a type, a schema
 * or its privileges, a role or its memberships), as the caches hear of it:
 * every answer is forgotten, so that each is as fresh as the catalog
 * caches a lookup would have read.
 */
static void
forget_all(Datum arg, int cacheid, uint32 hashvalue)
{
	nremembered = 0;
	if (remembered_cxt != NULL)
		MemoryContextReset(remembered_cxt);
}

static void
register_callbacks(void)
{
	int			caches[] = {PROCOID, TYPEOID, NAMESPACEOID, AUTHOID, AUTHMEMROLEMEM};

	for (int i = 0; i < lengthof(caches); i++)
		CacheRegisterSyscacheCallback(caches[i], forget_all, (Datum) 0);
	remembered_cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw functions by signature",
										   ALLOCSET_SMALL_SIZES);
	callbacks_registered = true;
}

/* to_regprocedure's answer: NULL where regprocedurein would raise. */
static Oid
look_up(const char *signature)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		fn;

	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	fn = to_regprocedure(fcinfo);
	return fcinfo->isnull ? InvalidOid : DatumGetObjectId(fn);
}

Oid
qc_proc_by_signature(const char *signature)
{
	const char *path = namespace_search_path ? namespace_search_path : "";
	Oid			user = GetUserId();
	Oid			temp_namespace;
	Oid			temp_toast;
	Remembered *r;
	Oid			fn;

	if (!callbacks_registered)
		register_callbacks();
	GetTempNamespaceState(&temp_namespace, &temp_toast);
	for (int i = 0; i < nremembered; i++)
	{
		r = &remembered[i];
		if (r->user == user && r->temp_namespace == temp_namespace &&
			strcmp(r->signature, signature) == 0 && strcmp(r->search_path, path) == 0)
			return r->fn;
	}
	/* the lookup may take in invalidations, which forget what is here */
	fn = look_up(signature);
	if (nremembered == QC_PROCS_REMEMBERED)
		forget_all((Datum) 0, 0, 0);
	r = &remembered[nremembered++];
	r->signature = MemoryContextStrdup(remembered_cxt, signature);
	r->search_path = MemoryContextStrdup(remembered_cxt, path);
	r->user = user;
	r->temp_namespace = temp_namespace;
	r->fn = fn;
	return fn;
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
