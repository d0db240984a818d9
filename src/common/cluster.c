/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  queryclaw_ext on a Citus cluster: the node's group (request ids carry
 *	  it, queue.c), each node's share of the limits, and GRANT and REVOKE
 *	  on the extension's objects sent from the coordinator to the workers.
 *
 * Citus is never linked against: its state is read through its catalog
 * (pg_dist_local_group) and its SQL functions (citus_is_coordinator,
 * run_command_on_workers), and only when the extension citus exists in
 * this database, so that nothing changes without it.
 *
 * GRANT and REVOKE: Citus sends the DDL of the objects it distributes to
 * every node, but an extension's members are not among them (Citus refuses
 * to distribute them, the extension being created on every node), so a
 * role granted EXECUTE on api_call on the coordinator would be refused by
 * every worker a query is pushed down to.  This ProcessUtility hook sees a
 * GRANT or REVOKE whose objects are this extension's, on the coordinator,
 * and once it has run here, keeps its text; just before the transaction
 * commits (or is prepared) the texts are run on every worker through
 * run_command_on_workers, and an error there aborts the commit.  So a
 * GRANT rolled back is sent nowhere, and one that failed on a worker is not
 * kept on the coordinator either.  (Each worker commits on its own: a
 * coordinator that failed after them would leave the workers granted.)  A
 * statement naming this extension's objects and others is refused: the
 * others may not exist on the workers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "cluster.h"
#include "guc.h"

#define QC_EXTENSION_NAME "queryclaw_ext"

static ProcessUtility_hook_type prev_utility_hook = NULL;

/* This node's group, once read in this transaction. */
static bool group_known = false;
static int32 group_id = 0;

/*
 * The GRANT and REVOKE statements to send to the workers at commit, in
 * TopTransactionContext, each with the transaction nesting level that ran
 * it (a subtransaction rolled back takes its own with it).
 */
typedef struct ForwardedStmt
{
	char	   *sql;
	int			nest_level;
} ForwardedStmt;
static List *to_forward = NIL;

bool
qc_cluster_active(void)
{
	return OidIsValid(get_extension_oid("citus", true));
}

int32
qc_cluster_group(void)
{
	if (group_known)
		return group_id;
	group_id = 0;
	if (qc_cluster_active())
	{
		bool		isnull = true;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute("SELECT groupid FROM pg_catalog.pg_dist_local_group", true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_dist_local_group");
		if (SPI_processed == 1)
			group_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
												   SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull || group_id < 0)
			group_id = 0;
		SPI_finish();
	}
	group_known = true;
	return group_id;
}

int
qc_cluster_share(int limit)
{
	if (limit <= 0 || qc_cluster_nodes <= 1)
		return limit;
	return Max(1, limit / qc_cluster_nodes);
}

double
qc_cluster_share_rate(double per_second)
{
	return per_second / qc_cluster_nodes;
}

/* Is the object (classid, objid) a member of this extension? */
static bool
ours(Oid classid, Oid objid, Oid extension)
{
	return OidIsValid(objid) && getExtensionOfObject(classid, objid) == extension;
}

/*
 * Is schema nsp the extension's (pg_extension.extnamespace)?  CREATE
 * EXTENSION makes it, but not as a member.
 */
static bool
our_schema(Oid nsp, Oid extension)
{
	Oid			types[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(extension)};
	bool		isnull = true;
	Oid			found = InvalidOid;

	if (!OidIsValid(nsp))
		return false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT extnamespace FROM pg_catalog.pg_extension"
							  " WHERE oid OPERATOR(pg_catalog.=) $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_extension");
	if (SPI_processed == 1)
		found = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	SPI_finish();
	return !isnull && found == nsp;
}

/*
 * How many of the GRANT's objects are this extension's, out of how many
 * (*total); objects that do not exist count as not ours (the GRANT then
 * fails on its own).
 */
static int
count_ours(GrantStmt *stmt, Oid extension, int *total)
{
	int			n = 0;
	ListCell   *lc;

	*total = list_length(stmt->objects);
	foreach(lc, stmt->objects)
	{
		Node	   *obj = lfirst(lc);

		if (stmt->targtype == ACL_TARGET_ALL_IN_SCHEMA || stmt->objtype == OBJECT_SCHEMA)
			n += our_schema(get_namespace_oid(strVal(obj), true), extension);
		else if (stmt->objtype == OBJECT_FUNCTION || stmt->objtype == OBJECT_PROCEDURE ||
				 stmt->objtype == OBJECT_ROUTINE)
			n += ours(ProcedureRelationId,
					  LookupFuncWithArgs(stmt->objtype, (ObjectWithArgs *) obj, true),
					  extension);
		else if (stmt->objtype == OBJECT_TABLE || stmt->objtype == OBJECT_SEQUENCE)
			n += ours(RelationRelationId,
					  RangeVarGetRelid((RangeVar *) obj, NoLock, true), extension);
	}
	return n;
}

/* Is this node a Citus coordinator? */
static bool
is_coordinator(void)
{
	bool		coordinator;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT pg_catalog.citus_is_coordinator()", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not call citus_is_coordinator()");
	coordinator = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											 1, &isnull));
	SPI_finish();
	return coordinator && !isnull;
}

/*
 * Should this GRANT or REVOKE go to the workers too?  Raises for one that
 * mixes this extension's objects with others, on the coordinator.
 */
static bool
to_be_forwarded(GrantStmt *stmt)
{
	Oid			extension;
	int			total;
	int			n;

	/* an extension script's own GRANTs run on every node with the script */
	if (!IsTransactionState() || creating_extension || !qc_cluster_active())
		return false;
	extension = get_extension_oid(QC_EXTENSION_NAME, true);
	if (!OidIsValid(extension))
		return false;
	n = count_ours(stmt, extension, &total);
	if (n == 0 || !is_coordinator())
		return false;
	if (n < total)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s on objects of extension \"%s\" and other objects in one statement on a Citus coordinator",
						stmt->is_grant ? "GRANT" : "REVOKE", QC_EXTENSION_NAME),
				 errdetail("The statement is sent to every worker for the extension's objects, which the other objects may not exist on."),
				 errhint("Name the extension's objects in a statement of their own.")));
	return true;
}

/* The text of statement pstmt in queryString. */
static char *
statement_text(PlannedStmt *pstmt, const char *queryString)
{
	int			start = Max(pstmt->stmt_location, 0);
	int			len = pstmt->stmt_len > 0 ? pstmt->stmt_len : (int) strlen(queryString + start);

	return pnstrdup(queryString + start, len);
}

static void
cluster_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				ProcessUtilityContext context, ParamListInfo params,
				QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	bool		forward = IsA(parsetree, GrantStmt) &&
		to_be_forwarded((GrantStmt *) parsetree);

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	if (forward && queryString != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		ForwardedStmt *f = palloc(sizeof(ForwardedStmt));

		f->sql = statement_text(pstmt, queryString);
		f->nest_level = GetCurrentTransactionNestLevel();
		to_forward = lappend(to_forward, f);
		MemoryContextSwitchTo(old);
	}
}

/* Run the statements kept on every worker; an error aborts the commit. */
static void
forward_to_workers(void)
{
	Oid			types[1] = {TEXTOID};
	ListCell   *lc;

	/* a statement of its own at commit: it needs a snapshot */
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, to_forward)
	{
		ForwardedStmt *f = lfirst(lc);
		Datum		args[1] = {CStringGetTextDatum(f->sql)};

		if (SPI_execute_with_args("SELECT w.nodename, w.nodeport, w.result"
								  " FROM pg_catalog.run_command_on_workers($1) w"
								  " WHERE NOT w.success",
								  1, types, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not call run_command_on_workers()");
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not run \"%s\" on worker %s:%s", f->sql,
							SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
							SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
					 errdetail_internal("%s", SPI_getvalue(SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc, 3)),
					 errhint("The extension's privileges must be the same on every node; the transaction is rolled back.")));
	}
	SPI_finish();
	PopActiveSnapshot();
}

static void
cluster_xact_callback(XactEvent event, void *arg)
{
	if ((event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE) && to_forward != NIL)
		forward_to_workers();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		to_forward = NIL;
		group_known = false;
	}
}

/* A subtransaction rolled back: its statements are not sent. */
static void
cluster_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *kept = NIL;
	ListCell   *lc;

	MemoryContext old;

	if (event != SUBXACT_EVENT_ABORT_SUB || to_forward == NIL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	foreach(lc, to_forward)
		if (((ForwardedStmt *) lfirst(lc))->nest_level < level)
			kept = lappend(kept, lfirst(lc));
	MemoryContextSwitchTo(old);
	to_forward = kept;
}

void
qc_cluster_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = cluster_utility;
	RegisterXactCallback(cluster_xact_callback, NULL);
	RegisterSubXactCallback(cluster_subxact_callback, NULL);
}
