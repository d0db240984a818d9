/*-------------------------------------------------------------------------
 *
 * ratelimit.h
 *	  queryclaw.max_calls_per_hour: per-role call counters in shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RATELIMIT_H
#define QC_RATELIMIT_H

#include "http.h"

/* _PG_init, while preloading: shared memory hooks. */
extern void qc_ratelimit_init(void);

/*
 * Count the call against the calling role's hourly limit; or refuse it and
 * return false, the refusal recorded on the call and audited (53400; 55000
 * when the counters do not exist because the library was not preloaded).
 * Nothing happens while the limit is 0.
 */
extern bool qc_ratelimit_check(QcCall *call);

/* The role's calls in the last hour; -1 without the counters (queryclaw.my_budget). */
extern int64 qc_ratelimit_used(Oid role);

#endif							/* QC_RATELIMIT_H */
