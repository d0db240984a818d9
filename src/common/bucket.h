/*-------------------------------------------------------------------------
 *
 * bucket.h
 *	  A token bucket that may go into debt (bucket.c): the arithmetic of
 *	  queryclaw.host_rate_limit, kept apart from the shared memory that
 *	  holds the buckets (hostrate.c).
 *
 * Pure C (no PostgreSQL headers), so that test/unit/test_hostrate.c can
 * try it with any clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_BUCKET_H
#define QC_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct QcBucket
{
	double		tokens;			/* below 0: tokens already promised */
	int64_t		at_us;			/* when tokens was last brought up to date */
} QcBucket;

/* A new bucket at now_us: full. */
extern void qc_bucket_init(QcBucket *b, double rate, int64_t now_us);

/*
 * Take a token at now_us from a bucket refilled at rate tokens a second,
 * holding at most one second's tokens (and at least one).  True when one
 * was there.  Otherwise the next token is promised to the caller: the
 * bucket goes into debt, and *wait_us says how long until that token is
 * there; the caller goes then without taking another.  Each promise comes
 * 1/rate seconds after the one before, so a queue drains at the rate.
 */
extern bool qc_bucket_take(QcBucket *b, double rate, int64_t now_us,
						   int64_t *wait_us);

/* Is the bucket full at now_us (nothing taken lately, nothing promised)? */
extern bool qc_bucket_idle(const QcBucket *b, double rate, int64_t now_us);

#endif							/* QC_BUCKET_H */
