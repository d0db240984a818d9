/*-------------------------------------------------------------------------
 *
 * cluster.h
 *	  queryclaw_ext on a Citus cluster: the node's group, which request ids
 *	  carry, and the share of the limits a node applies (cluster.c); GRANT
 *	  and REVOKE on the extension's objects given on the coordinator, made
 *	  on the workers (clustergrant.c), and copied by a node that joins later
 *	  (clusterjoin.c).  Without Citus in the database, the group is 0, the
 *	  limits are not shared out, and nothing is sent.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CLUSTER_H
#define QC_CLUSTER_H

#include "access/xact.h"

/*
 * _PG_init: the transaction callback that forgets the group, and the
 * relcache callback that makes the number of nodes be read again.
 */
extern void qc_cluster_init(void);

/* Is the extension citus in this database?  The caller is in a transaction. */
extern bool qc_cluster_active(void);

/*
 * Is this node the coordinator of a Citus cluster (of group 0, with nodes
 * to read from)?  The caller is in a transaction, with Citus in the
 * database.
 */
extern bool qc_cluster_is_coordinator(void);

/*
 * How Citus spreads relid's rows, if it manages relid (pg_dist_partition's
 * partmethod: 'h' for a distributed table, 'n' for a reference or Citus
 * local table); 0 for any other table, and without Citus.  The caller is
 * in a transaction.
 */
extern char qc_cluster_table_method(Oid relid);

/*
 * The DDL that follows, until the caller's GUC nest level ends, stays on
 * this node: Citus does not send it to the others (objects that serve this
 * node alone, such as an enrichment's views and functions).
 */
extern void qc_cluster_ddl_here(void);

/*
 * This node's Citus group id (pg_dist_local_group): 0 on the coordinator
 * and without Citus.  Read once per transaction; the caller is in one.
 */
extern int32 qc_cluster_group(void);

/*
 * The number of nodes that share the limits: queryclaw.cluster_nodes when
 * set, else the active primary nodes of Citus's metadata (this one
 * included), 1 without Citus.  Read again once that metadata changes.
 */
extern int	qc_cluster_node_count(void);

/*
 * This node's share of a limit that the nodes share: limit divided by
 * their number, at least 1; 0 (no limit) stays 0.
 */
extern int	qc_cluster_share(int limit);
extern double qc_cluster_share_rate(double per_second);

/*
 * Does this event end the transaction (commit, abort or prepare)?  What
 * the files keep for a transaction is forgotten then.
 */
extern bool qc_cluster_xact_ended(XactEvent event);

/*
 * clustergrant.c: GRANT and REVOKE on the extension's objects given on the
 * coordinator, made on every worker as the role that ran them; its
 * ProcessUtility hook and transaction callbacks (_PG_init).
 */
extern void qc_cluster_grant_init(void);

/*
 * Run the PL/pgSQL statement plpgsql on every worker as the current role
 * (SET LOCAL ROLE there): now, or just before this transaction commits (not
 * at all if it or its subtransaction is rolled back).  A worker's refusal
 * raises an error with its message, and hint.
 */
extern void qc_cluster_run_on_workers(const char *plpgsql, const char *hint);
extern void qc_cluster_forward_at_commit(const char *plpgsql, const char *hint);

/*
 * clusterjoin.c: a node Citus creates the extension on after it was
 * created on the coordinator (a node added later) copies the privileges
 * on the extension's objects from the coordinator, as that transaction
 * commits; its transaction callback (_PG_init).  clustergrant.c's
 * ProcessUtility hook tells it of each CREATE EXTENSION that ran.
 */
extern void qc_cluster_join_init(void);
extern void qc_cluster_join_created(const char *extname);

#endif							/* QC_CLUSTER_H */
