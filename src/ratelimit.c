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

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "ratelimit.h"
#include "rolecount.h"

/* 60 one-minute steps: a sliding hour */
static QcRoleCounts calls = {
	.name = "queryclaw_ratelimit", .steps = 60, .step_us = USECS_PER_MINUTE
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

bool
qc_ratelimit_check(QcCall *call)
{
	int			limit = qc_max_calls_per_hour;
	Oid			role = GetUserId();
	int64		used = 0;

	if (limit == 0)
		return true;
	if (calls.table == NULL)
	{
		qc_call_record(call, QC_OUTCOME_REFUSED, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					   "rate limits need queryclaw_ext in shared_preload_libraries",
					   psprintf("queryclaw.max_calls_per_hour is %d for role %s, and the per-role counters live in shared memory.",
								limit, GetUserNameFromId(role, false)),
					   "Add queryclaw_ext to shared_preload_libraries and restart the server, or set queryclaw.max_calls_per_hour to 0.");
		return false;
	}
	if (!qc_rolecounts_add(&calls, role, 1, limit, &used))
	{
		qc_call_record(call, QC_OUTCOME_REFUSED, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
					   "too many roles are rate-limited at once",
					   psprintf("The per-role counters hold %d roles, and each of them made calls in the last hour.",
								QC_ROLECOUNT_ROLES),
					   "Set queryclaw.max_calls_per_hour to 0 for roles that need no limit.");
		return false;
	}
	if (used >= limit)
	{
		const char *name = GetUserNameFromId(role, false);

		qc_call_record(call, QC_OUTCOME_REFUSED, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
					   psprintf("rate limit exceeded for role \"%s\"", name),
					   psprintf("Role %s made %lld calls in the last hour; queryclaw.max_calls_per_hour is %d.",
								name, (long long) used, limit),
					   psprintf("Wait until earlier calls leave the one-hour window, or have a superuser raise the limit with ALTER ROLE %s SET queryclaw.max_calls_per_hour.",
								quote_identifier(name)));
		return false;
	}
	return true;
}

