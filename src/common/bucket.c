/*-------------------------------------------------------------------------
 *
 * bucket.c
 *	  The token bucket of queryclaw.host_rate_limit.
 *
 * A bucket holds at most one second of tokens (DESIGN: a burst after a
 * quiet spell is at most one second's worth), and at least one token, so
 * that a rate below 1/s still lets a request through.  When it is empty a
 * request is not refused: it is promised the next token that comes, and
 * the bucket goes below zero by one, so that the next request is promised
 * the token after.  The asynchronous worker puts such a request back in
 * the queue until its token is there, rather than asking again and again.
 *
 *-------------------------------------------------------------------------
 */
#include "bucket.h"

#define USECS_PER_S 1000000.0

static double
capacity(double rate)
{
	return rate < 1.0 ? 1.0 : rate;
}

void
qc_bucket_init(QcBucket *b, double rate, int64_t now_us)
{
	b->tokens = capacity(rate);
	b->at_us = now_us;
}

/* Bring the bucket up to now_us (a clock that went back adds nothing). */
static void
refill(QcBucket *b, double rate, int64_t now_us)
{
	if (now_us > b->at_us)
	{
		b->tokens += (double) (now_us - b->at_us) / USECS_PER_S * rate;
		b->at_us = now_us;
	}
	if (b->tokens > capacity(rate))
		b->tokens = capacity(rate);
}

bool
qc_bucket_take(QcBucket *b, double rate, int64_t now_us, int64_t *wait_us)
{
	refill(b, rate, now_us);
	b->tokens -= 1.0;
	if (b->tokens >= 0.0)
		return true;
	/* rounded up: at that moment the promised token is whole */
	*wait_us = (int64_t) (-b->tokens / rate * USECS_PER_S) + 1;
	return false;
}

bool
qc_bucket_idle(const QcBucket *b, double rate, int64_t now_us)
{
	QcBucket	now = *b;

	refill(&now, rate, now_us);
	return now.tokens >= capacity(rate);
}
