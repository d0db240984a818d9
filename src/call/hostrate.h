/*-------------------------------------------------------------------------
 *
 * hostrate.h
 *	  queryclaw.host_rate_limit: a token bucket per host in shared memory
 *	  (hostrate.c), which asynchronous requests wait for; and a foreign
 *	  server's rate_limit, in the same table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HOSTRATE_H
#define QC_HOSTRATE_H

#include "datatype/timestamp.h"

/* _PG_init, while preloading: shared memory hooks. */
extern void qc_hostrate_init(void);

/*
 * May a request to host (as policy.c's URL parse maps it) go at now?  True
 * when host_rate_limit sets no rate for it, when there are no buckets
 * (not preloaded), or when its bucket had a token.  Otherwise the next
 * token is promised to this request: *go_at is when it is there, and the
 * request goes then without asking again.
 */
extern bool qc_hostrate_admit(const char *host, TimestampTz now,
							  TimestampTz *go_at);

/*
 * The same with a bucket of any name (a host, or a foreign server as
 * "server <oid>", which no host name can be) and the rate given.
 */
extern bool qc_hostrate_take(const char *name, double rate, TimestampTz now,
							 TimestampTz *go_at);

/*
 * The rate host_rate_limit sets for host (as policy.c's URL parse maps it),
 * this node's share of it on a Citus cluster (cluster.c), as it is written
 * ("5/s", "30/min"), or NULL when it sets none.
 */
extern char *qc_hostrate_limit_text(const char *host);

#endif							/* QC_HOSTRATE_H */
