/*-------------------------------------------------------------------------
 *
 * ratelimit.c
 *	  queryclaw.max_calls_per_hour: per-role call counters in shared memory.
 *
 * Each role with a limit has an entry in a fixed-size shared hash table
 * keyed by role OID: sixty one-minute buckets, so the window is a sliding
 * hour with one-minute steps (a call leaves the window between 59 and 60
 * minutes after it was made).  A call is counted once, whatever the number
 * of redirects it follows, when it passes the check, before any request is
 * sent; calls refused by the limit are not counted.  Roles are counted only
 * while a limit applies to them.
 *
 * When the table is full, entries with no call in the last hour are
 * dropped; if none can be, the call is refused (the limit fails closed).
 *
 * Locking: the "queryclaw_ratelimit" LWLock protects the hash table; a check
 * takes it exclusively for one lookup and at most one update, and nothing
 * that can fail is done while it is held (the eviction scan included).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "queryclaw.h"
#include "ratelimit.h"

#define QC_RATELIMIT_TRANCHE "queryclaw_ratelimit"
#define QC_RATE_ROLES	1024	/* roles counted at once */
#define QC_RATE_BUCKETS 60		/* one per minute */

typedef struct RateBucket
{
	int32		minute;			/* minutes since the PostgreSQL epoch */
	int32		calls;
} RateBucket;

typedef struct RateEntry
{
	Oid			role;			/* hash key */
	RateBucket	buckets[QC_RATE_BUCKETS];
} RateEntry;

static HTAB *rate_table = NULL;
static LWLock *rate_lock = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
ratelimit_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(QC_RATE_ROLES, sizeof(RateEntry)));
	RequestNamedLWLockTranche(QC_RATELIMIT_TRANCHE, 1);
}

static void
ratelimit_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(RateEntry);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	rate_lock = &(GetNamedLWLockTranche(QC_RATELIMIT_TRANCHE))->lock;
	rate_table = ShmemInitHash("queryclaw rate limits", QC_RATE_ROLES, QC_RATE_ROLES,
							   &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
}

void
qc_ratelimit_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ratelimit_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ratelimit_shmem_startup;
}

/* Calls in the hour up to and including minute now. */
static int64
calls_in_window(const RateEntry *e, int32 now)
{
	int64		calls = 0;

	for (int i = 0; i < QC_RATE_BUCKETS; i++)
		if (e->buckets[i].minute > now - QC_RATE_BUCKETS)
			calls += e->buckets[i].calls;
	return calls;
}

/* Make room by dropping the roles that made no call in the last hour. */
static void
evict_idle_roles(int32 now)
{
	HASH_SEQ_STATUS status;
	RateEntry  *e;

	hash_seq_init(&status, rate_table);
	while ((e = hash_seq_search(&status)) != NULL)
		if (calls_in_window(e, now) == 0)
			hash_search(rate_table, &e->role, HASH_REMOVE, NULL);
}

/* The role's entry, created empty if need be; NULL when the table is full. */
static RateEntry *
role_entry(Oid role, int32 now)
{
	bool		found;
	RateEntry  *e = hash_search(rate_table, &role, HASH_ENTER_NULL, &found);

	if (e == NULL)
	{
		evict_idle_roles(now);
		e = hash_search(rate_table, &role, HASH_ENTER_NULL, &found);
	}
	if (e != NULL && !found)
		memset(e->buckets, 0, sizeof(e->buckets));
	return e;
}

static void
count_call(RateEntry *e, int32 now)
{
	RateBucket *b = &e->buckets[now % QC_RATE_BUCKETS];

	if (b->minute != now)
	{
		b->minute = now;
		b->calls = 0;
	}
	b->calls++;
}

bool
qc_ratelimit_check(QcCall *call)
{
	int			limit = qc_max_calls_per_hour;
	Oid			role = GetUserId();
	int32		now = (int32) (GetCurrentTimestamp() / USECS_PER_MINUTE);
	RateEntry  *e;
	int64		used = 0;

	if (limit == 0)
		return true;
	if (rate_table == NULL)
	{
		qc_call_record(call, QC_OUTCOME_REFUSED, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
					   "rate limits need queryclaw_ext in shared_preload_libraries",
					   psprintf("queryclaw.max_calls_per_hour is %d for role %s, and the per-role counters live in shared memory.",
								limit, GetUserNameFromId(role, false)),
					   "Add queryclaw_ext to shared_preload_libraries and restart the server, or set queryclaw.max_calls_per_hour to 0.");
		return false;
	}

	LWLockAcquire(rate_lock, LW_EXCLUSIVE);
	e = role_entry(role, now);
	if (e != NULL)
	{
		used = calls_in_window(e, now);
		if (used < limit)
			count_call(e, now);
	}
	LWLockRelease(rate_lock);

	if (e == NULL)
	{
		qc_call_record(call, QC_OUTCOME_REFUSED, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
					   "too many roles are rate-limited at once",
					   psprintf("The per-role counters hold %d roles, and each of them made calls in the last hour.",
								QC_RATE_ROLES),
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

int64
qc_ratelimit_used(Oid role)
{
	RateEntry  *e;
	int64		used = 0;

	if (rate_table == NULL)
		return -1;
	LWLockAcquire(rate_lock, LW_EXCLUSIVE);
	e = hash_search(rate_table, &role, HASH_FIND, NULL);
	if (e != NULL)
		used = calls_in_window(e, (int32) (GetCurrentTimestamp() / USECS_PER_MINUTE));
	LWLockRelease(rate_lock);
	return used;
}
