/*-------------------------------------------------------------------------
 *
 * ratelimit.h
 *	  queryclaw.max_calls_per_hour: per-role call counters in shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RATELIMIT_H
#define QC_RATELIMIT_H

#include "verdict.h"

/* _PG_init, while preloading: shared memory hooks. */
extern void qc_ratelimit_init(void);

/*
 * The rate limit's verdict on one more call of the calling role, counted
 * when allowed (a call is counted once, before anything is sent).  Refused:
 * 53400 over the limit (retry_at: when the oldest call counted leaves the
 * window), 55000 when a limit is set but the library was not preloaded.
 * Never raises nor audits.  Always allowed while the limit is 0.
 */
extern bool qc_ratelimit_admit(QcVerdict *verdict);

/* The role's calls in the last hour; -1 without the counters (queryclaw.my_budget). */
extern int64 qc_ratelimit_used(Oid role);

/* When the role's oldest call counted leaves the hour; needs the counters. */
extern TimestampTz qc_ratelimit_reopens(Oid role);

#endif							/* QC_RATELIMIT_H */
