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
 * (ratelimit.c), the window slides: 48 half-hour buckets per role, so
 * tokens leave the window between 23.5 and 24 hours after they were used.
 * Tokens are counted whenever the counters exist, budget or not, so that
 * my_budget can show what a role used.
 *
 * When the table is full, roles with no tokens in the window are dropped;
 * if none can be, the new role's tokens go uncounted and a budget refuses
 * its requests (it fails closed).
 *
 * Locking: the "queryclaw_budget" LWLock protects the hash table; each
 * check or count takes it exclusively for one lookup and one update, and
 * nothing that can fail is done while it is held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "budget.h"
#include "queryclaw.h"
#include "ratelimit.h"

PG_FUNCTION_INFO_V1(budget_status);

#define QC_BUDGET_TRANCHE	"queryclaw_budget"
#define QC_BUDGET_ROLES		1024
#define QC_BUDGET_BUCKETS	48	/* half-hours in a day */
#define QC_BUDGET_STEP		(30 * USECS_PER_MINUTE)

typedef struct TokenBucket
{
	int32		slot;			/* half-hours since the PostgreSQL epoch */
	int64		tokens;
} TokenBucket;

typedef struct BudgetEntry
{
	Oid			role;			/* hash key */
	TokenBucket buckets[QC_BUDGET_BUCKETS];
} BudgetEntry;

static HTAB *budget_table = NULL;
static LWLock *budget_lock = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
budget_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(QC_BUDGET_ROLES, sizeof(BudgetEntry)));
	RequestNamedLWLockTranche(QC_BUDGET_TRANCHE, 1);
}

static void
budget_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(BudgetEntry);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	budget_lock = &(GetNamedLWLockTranche(QC_BUDGET_TRANCHE))->lock;
	budget_table = ShmemInitHash("queryclaw token budgets", QC_BUDGET_ROLES, QC_BUDGET_ROLES,
								 &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
}

void
qc_budget_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = budget_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = budget_shmem_startup;
}

static int32
current_slot(void)
{
	return (int32) (GetCurrentTimestamp() / QC_BUDGET_STEP);
}

static int64
tokens_in_window(const BudgetEntry *e, int32 now)
{
	int64		tokens = 0;

	for (int i = 0; i < QC_BUDGET_BUCKETS; i++)
		if (e->buckets[i].slot > now - QC_BUDGET_BUCKETS)
			tokens += e->buckets[i].tokens;
	return tokens;
}

/* The role's tokens in the window; -1 when they are not counted. */
static int64
tokens_used(Oid role)
{
	BudgetEntry *e;
	int64		used = 0;

	if (budget_table == NULL)
		return -1;
	LWLockAcquire(budget_lock, LW_EXCLUSIVE);
	e = hash_search(budget_table, &role, HASH_FIND, NULL);
	if (e != NULL)
		used = tokens_in_window(e, current_slot());
	else if (hash_get_num_entries(budget_table) >= QC_BUDGET_ROLES)
		used = -1;				/* no room: it could not be counted */
	LWLockRelease(budget_lock);
	return used;
}

void
qc_budget_admit(QcCall *call)
{
	int			budget = qc_max_tokens_per_day;
	Oid			role = GetUserId();
	const char *name;
	int64		used;

	if (budget == 0)
		return;
	name = GetUserNameFromId(role, false);
	if (budget_table == NULL)
		qc_call_fail(call, QC_OUTCOME_REFUSED, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					 "token budgets need queryclaw_ext in shared_preload_libraries",
					 psprintf("queryclaw.max_tokens_per_day is %d for role %s, and the per-role counters live in shared memory.",
							  budget, name),
					 "Add queryclaw_ext to shared_preload_libraries and restart the server, or set queryclaw.max_tokens_per_day to 0.");
	used = tokens_used(role);
	if (used < 0)
		qc_call_fail(call, QC_OUTCOME_REFUSED, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
					 "too many roles use tokens at once",
					 psprintf("The per-role token counters hold %d roles, and each of them used tokens in the last 24 hours.",
							  QC_BUDGET_ROLES),
					 "Set queryclaw.max_tokens_per_day to 0 for roles that need no budget.");
	if (used >= budget)
		qc_call_fail(call, QC_OUTCOME_REFUSED, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
					 psprintf("token budget exceeded for role \"%s\"", name),
					 psprintf("Role %s used %lld tokens in the last 24 hours; queryclaw.max_tokens_per_day is %d.",
							  name, (long long) used, budget),
					 psprintf("Wait until earlier requests leave the 24-hour window (queryclaw.my_budget shows the count), or have a superuser raise the budget with ALTER ROLE %s SET queryclaw.max_tokens_per_day.",
							  quote_identifier(name)));
}

/* Drop the roles that used no tokens in the window. */
static void
evict_idle_roles(int32 now)
{
	HASH_SEQ_STATUS status;
	BudgetEntry *e;

	hash_seq_init(&status, budget_table);
	while ((e = hash_seq_search(&status)) != NULL)
		if (tokens_in_window(e, now) == 0)
			hash_search(budget_table, &e->role, HASH_REMOVE, NULL);
}

void
qc_budget_count(int64 tokens)
{
	Oid			role = GetUserId();
	int32		now = current_slot();
	BudgetEntry *e;
	bool		found;

	if (budget_table == NULL || tokens <= 0)
		return;
	LWLockAcquire(budget_lock, LW_EXCLUSIVE);
	e = hash_search(budget_table, &role, HASH_ENTER_NULL, &found);
	if (e == NULL)
	{
		evict_idle_roles(now);
		e = hash_search(budget_table, &role, HASH_ENTER_NULL, &found);
	}
	if (e != NULL)
	{
		TokenBucket *b = &e->buckets[now % QC_BUDGET_BUCKETS];

		if (!found)
			memset(e->buckets, 0, sizeof(e->buckets));
		if (b->slot != now)
		{
			b->slot = now;
			b->tokens = 0;
		}
		b->tokens += tokens;
	}
	LWLockRelease(budget_lock);
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
	int64		tokens = tokens_used(role);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(GetUserNameFromId(role, false));
	set_limit(values + 1, nulls + 1, qc_max_calls_per_hour, calls);
	set_limit(values + 4, nulls + 4, qc_max_tokens_per_day, tokens);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
