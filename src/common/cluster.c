/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  queryclaw_ext on a Citus cluster: the node's group (request ids carry
 *	  it, queue.c) and each node's share of the limits.  GRANT and REVOKE
 *	  on the extension's objects sent from the coordinator to the workers
 *	  are clustergrant.c's; the privileges a node that joins later copies
 *	  from the coordinator, clusterjoin.c's.
 *
 * Citus is never linked against: its state is read through its catalog
 * (pg_dist_local_group, pg_dist_node, pg_dist_partition) and its SQL
 * functions, and only when the extension citus exists in this database, so
 * that nothing changes without it.
 *
 * The limits are shared out between the nodes Citus's metadata lists: the
 * active primary nodes of pg_dist_node (each group once), and this node
 * if it is not among them (a coordinator never registered), unless
 * queryclaw.cluster_nodes gives the number.  Each process keeps the count
 * until pg_dist_node or pg_dist_local_group changes: Citus's triggers on
 * them invalidate their relcache entries on every node whose metadata
 * changes (citus_add_node, citus_remove_node, citus_disable_node...), and
 * that invalidation reaches every process of the database at its next
 * transaction, the async workers included, so that the shares follow
 * without a restart.  The count is read again only where reading it is
 * safe (in a transaction, with no lock or critical section held); until
 * then the count last read is used.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "cluster.h"
#include "guc.h"

/* This node's group, once read in this transaction. */
static bool group_known = false;
static int32 group_id = 0;

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

bool
qc_cluster_is_coordinator(void)
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

char
qc_cluster_table_method(Oid relid)
{
	Oid			type = OIDOID;
	Datum		arg = ObjectIdGetDatum(relid);
	char		method = 0;

	if (!qc_cluster_active())
		return 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT partmethod::pg_catalog.text FROM pg_catalog.pg_dist_partition"
							  " WHERE logicalrelid OPERATOR(pg_catalog.=) $1",
							  1, &type, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	if (SPI_processed == 1)
		method = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)[0];
	SPI_finish();
	return method;
}

void
qc_cluster_ddl_here(void)
{
	if (qc_cluster_active())
		(void) set_config_option("citus.enable_ddl_propagation", "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * The nodes Citus's metadata lists, as last read (0: never read), and
 * whether that count may be out of date; the relations whose changes make
 * it so, once known (InvalidOid: any relation's change does, as the
 * extension citus may just have been created).
 */
static int	nodes_read = 0;
static bool nodes_stale = true;
static Oid	dist_node_rel = InvalidOid;
static Oid	local_group_rel = InvalidOid;

/* Read the number of nodes from pg_dist_node; the caller is in a transaction. */
static int
read_node_count(void)
{
	bool		pushed = false;
	bool		isnull = true;
	int64		count = 1;

	dist_node_rel = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
	local_group_rel = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(dist_node_rel) || !OidIsValid(local_group_rel) || !qc_cluster_active())
		return 1;
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT pg_catalog.count(DISTINCT n.groupid)"
					" + (NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node m, pg_catalog.pg_dist_local_group l"
					"  WHERE m.groupid OPERATOR(pg_catalog.=) l.groupid"
					"  AND m.isactive AND m.noderole OPERATOR(pg_catalog.=) 'primary'))::pg_catalog.int4"
					" FROM pg_catalog.pg_dist_node n"
					" WHERE n.isactive AND n.noderole OPERATOR(pg_catalog.=) 'primary'",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read pg_dist_node");
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (pushed)
		PopActiveSnapshot();
	return isnull ? 1 : (int) Min(Max(count, 1), INT_MAX);
}

int
qc_cluster_node_count(void)
{
	if (qc_cluster_nodes > 0)
		return qc_cluster_nodes;
	/* reading takes a transaction, and no lock held (SPI may wait, or fail) */
	if (nodes_stale && IsTransactionState() && CritSectionCount == 0 &&
		InterruptHoldoffCount == 0)
	{
		/* an invalidation while it reads makes it stale again */
		nodes_stale = false;
		PG_TRY();
		{
			nodes_read = read_node_count();
		}
		PG_CATCH();
		{
			nodes_stale = true;
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	return Max(nodes_read, 1);
}

int
qc_cluster_share(int limit)
{
	int			nodes;

	if (limit <= 0)
		return limit;
	nodes = qc_cluster_node_count();
	return nodes <= 1 ? limit : Max(1, limit / nodes);
}

double
qc_cluster_share_rate(double per_second)
{
	return per_second / qc_cluster_node_count();
}

/* Citus's metadata of the nodes changed (or every relation's cache was reset). */
static void
cluster_relcache_callback(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || !OidIsValid(dist_node_rel) ||
		relid == dist_node_rel || relid == local_group_rel)
		nodes_stale = true;
}

bool
qc_cluster_xact_ended(XactEvent event)
{
	return event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT;
}

/* The end of a transaction: the group is read again in the next one. */
static void
cluster_xact_callback(XactEvent event, void *arg)
{
	if (qc_cluster_xact_ended(event))
		group_known = false;
}

void
qc_cluster_init(void)
{
	RegisterXactCallback(cluster_xact_callback, NULL);
	CacheRegisterRelcacheCallback(cluster_relcache_callback, (Datum) 0);
}
