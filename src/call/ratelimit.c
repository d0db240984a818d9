/*-------------------------------------------------------------------------
 *
 * ratelimit.c
 *	  queryclaw.max_calls_per_hour: per-role call counters in shared memory.
 *
 * Each role with a limit is counted in shared memory (rolecount.c) in
 * sixty one-minute steps, so the window is a sliding hour with one-minute
 * steps (a call leaves the window between 59 and 60 minutes after it was
 * made).  A call is counted once, whatever the number
 * of redirects it follows, when it passes the check, before any request is
 * sent; calls refused by the limit are not counted.  Roles are counted only
 * while a limit applies to them.
 *
 * When the counters are full, roles with no call in the last hour are
 * dropped; if none can be, the call is refused (the limit fails closed).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "cluster.h"
#include "guc.h"
#include "ratelimit.h"
#include "rolecount.h"

/* 60 one-minute steps: a sliding hour */
static QcRoleCounts calls = {
	.name = "queryclaw_ratelimit", .steps = 60, .step_us = USECS_PER_MINUTE,
	.words = {"queryclaw.max_calls_per_hour", "rate limit", "limit", "made",
		"calls in the last hour", "too many roles are rate-limited at once",
	"counters", "earlier calls leave the one-hour window"}
};

void
qc_ratelimit_init(void)
{
	qc_rolecounts_register(&calls);
}

int64
qc_ratelimit_used(Oid role)
{
	return qc_rolecounts_get(&calls, role);
}

TimestampTz
qc_ratelimit_reopens(Oid role)
{
	return qc_rolecounts_reopens(&calls, role);
}

bool
qc_ratelimit_admit(QcVerdict *v)
{
	return qc_rolecounts_admit(&calls, 1, qc_cluster_share(qc_max_calls_per_hour), v);
}
