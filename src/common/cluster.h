/*-------------------------------------------------------------------------
 *
 * cluster.h
 *	  queryclaw_ext on a Citus cluster: the node's group, which request ids
 *	  carry, and the share of the limits a node applies (cluster.c); GRANT
 *	  and REVOKE on the extension's objects given on the coordinator, made
 *	  on the workers (clustergrant.c).  Without Citus in the database, the
 *	  group is 0 and nothing is sent.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CLUSTER_H
#define QC_CLUSTER_H

/* _PG_init: the transaction callback that forgets the group. */
extern void qc_cluster_init(void);

/* Is the extension citus in this database?  The caller is in a transaction. */
extern bool qc_cluster_active(void);

/*
 * This node's Citus group id (pg_dist_local_group): 0 on the coordinator
 * and without Citus.  Read once per transaction; the caller is in one.
 */
extern int32 qc_cluster_group(void);

/*
 * This node's share of a limit that queryclaw.cluster_nodes nodes share:
 * limit divided by it, at least 1; 0 (no limit) stays 0.
 */
extern int	qc_cluster_share(int limit);
extern double qc_cluster_share_rate(double per_second);

/*
 * clustergrant.c: GRANT and REVOKE on the extension's objects given on the
 * coordinator, made on every worker as the role that ran them; its
 * ProcessUtility hook and transaction callbacks (_PG_init).
 */
extern void qc_cluster_grant_init(void);

#endif							/* QC_CLUSTER_H */
