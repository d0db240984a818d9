/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  queryclaw.max_tokens_per_day: the tokens each role used in the last
 *	  24 hours, counted in shared memory, and queryclaw.my_budget.
 *
 * The count is what the providers report in their replies' usage (the
 * total_tokens of chat completions and of embeddings), so it is known
 * only after a request: a request is refused, before anything is sent,
 * once the role's count has reached its budget, and the last request
 * admitted may go past it by its own size.  Like max_calls_per_hour
 * (ratelimit.c), the count is kept in shared memory (rolecount.c) and its
 * window slides, in 48 half-hour steps: tokens leave it between 23.5 and
 * 24 hours after they were used.  Tokens are counted whenever the counters
 * exist, budget or not, so that my_budget can show what a role used.
 *
 * When the counters are full, roles with no tokens in the window are
 * dropped; if none can be, a role with a budget is refused (it fails
 * closed), and one without goes uncounted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "budget.h"
#include "cluster.h"
#include "guc.h"
#include "ratelimit.h"
#include "rolecount.h"

PG_FUNCTION_INFO_V1(budget_status);

/* 48 half-hour steps: a sliding day */
static QcRoleCounts tokens = {
	.name = "queryclaw_budget", .steps = 48, .step_us = 30 * USECS_PER_MINUTE,
	.words = {"queryclaw.max_tokens_per_day", "token budget", "budget", "used",
		"tokens in the last 24 hours", "too many roles use tokens at once",
		"token counters",
	"earlier requests leave the 24-hour window (queryclaw.my_budget shows the count)"}
};

void
qc_budget_init(void)
{
	qc_rolecounts_register(&tokens);
}

bool
qc_budget_admit(QcVerdict *v)
{
	/* counting nothing: a reply's tokens are counted (qc_budget_count) */
	return qc_rolecounts_admit(&tokens, 0, qc_cluster_share(qc_max_tokens_per_day), v);
}

void
qc_budget_count(int64 n)
{
	int64		used;

	if (tokens.table != NULL && n > 0)
		(void) qc_rolecounts_add(&tokens, GetUserId(), n, 0, &used);
}

/* A limit (0: none), what was used (-1: not counted) and what is left. */
static void
set_limit(Datum *values, bool *nulls, int limit, int64 used)
{
	values[0] = Int32GetDatum(limit);
	nulls[0] = limit == 0;
	values[1] = Int64GetDatum(used);
	nulls[1] = used < 0;
	values[2] = Int64GetDatum(Max(0, limit - used));
	nulls[2] = nulls[0] || nulls[1];
}

/*
 * budget_status() returns (role, calls_per_hour, calls_used, calls_left,
 * tokens_per_day, tokens_used, tokens_left) for the calling role: what
 * queryclaw.my_budget shows.  A limit of 0 shows as NULL (none), and so
 * does a count that is not kept (no preload; calls are counted only while
 * a limit applies).
 */
Datum
budget_status(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[7];
	bool		nulls[7] = {0};
	Oid			role = GetUserId();
	int64		calls = qc_max_calls_per_hour > 0 ? qc_ratelimit_used(role) : -1;
	int64		used_tokens = qc_rolecounts_get(&tokens, role);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(GetUserNameFromId(role, false));
	/* on a Citus cluster, this node's shares: what it may spend (cluster.c) */
	set_limit(values + 1, nulls + 1, qc_cluster_share(qc_max_calls_per_hour), calls);
	set_limit(values + 4, nulls + 4, qc_cluster_share(qc_max_tokens_per_day), used_tokens);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
