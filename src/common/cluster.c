/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  queryclaw_ext on a Citus cluster: the node's group (request ids carry
 *	  it, queue.c) and each node's share of the limits.  GRANT and REVOKE
 *	  on the extension's objects sent from the coordinator to the workers
 *	  are clustergrant.c's.
 *
 * Citus is never linked against: its state is read through its catalog
 * (pg_dist_local_group) and its SQL functions, and only when the extension
 * citus exists in this database, so that nothing changes without it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"

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

/* The end of a transaction: the group is read again in the next one. */
static void
cluster_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		group_known = false;
}

void
qc_cluster_init(void)
{
	RegisterXactCallback(cluster_xact_callback, NULL);
}
