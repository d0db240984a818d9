/*-------------------------------------------------------------------------
 *
 * rolecount.c
 *	  Per-role counts over a sliding window, in shared memory.
 *
 * A set of counters is a fixed-size shared hash table keyed by role OID;
 * each entry has one bucket per step of the window, so the window slides
 * in steps (a count leaves it between steps - 1 and steps step lengths
 * after it was made).  When the table is full, entries with nothing in
 * their window are dropped; if none can be, a new role cannot be counted
 * and qc_rolecounts_add() says so.
 *
 * Locking: each set has its own LWLock, which protects its table; every
 * operation takes it exclusively for one lookup and at most one update (or
 * the eviction scan), and nothing that can fail is done while it is held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "rolecount.h"

typedef struct RoleBucket
{
	int32		step;			/* steps since the PostgreSQL epoch */
	int64		count;
} RoleBucket;

typedef struct RoleEntry
{
	Oid			role;			/* hash key */
	RoleBucket	buckets[FLEXIBLE_ARRAY_MEMBER];
} RoleEntry;

static QcRoleCounts *registered = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
entry_size(const QcRoleCounts *c)
{
	return offsetof(RoleEntry, buckets) + c->steps * sizeof(RoleBucket);
}

static void
rolecounts_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (QcRoleCounts *c = registered; c != NULL; c = c->next)
	{
		RequestAddinShmemSpace(hash_estimate_size(QC_ROLECOUNT_ROLES, entry_size(c)));
		RequestNamedLWLockTranche(c->name, 1);
	}
}

static void
rolecounts_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (QcRoleCounts *c = registered; c != NULL; c = c->next)
	{
		HASHCTL		info;

		info.keysize = sizeof(Oid);
		info.entrysize = entry_size(c);
		c->lock = &(GetNamedLWLockTranche(c->name))->lock;
		c->table = ShmemInitHash(c->name, QC_ROLECOUNT_ROLES, QC_ROLECOUNT_ROLES,
								 &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
qc_rolecounts_register(QcRoleCounts *counts)
{
	if (registered == NULL)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = rolecounts_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = rolecounts_shmem_startup;
	}
	counts->next = registered;
	registered = counts;
}

static int32
current_step(const QcRoleCounts *c)
{
	return (int32) (GetCurrentTimestamp() / c->step_us);
}

static int64
in_window(const QcRoleCounts *c, const RoleEntry *e, int32 now)
{
	int64		sum = 0;

	for (int i = 0; i < c->steps; i++)
		if (e->buckets[i].step > now - c->steps)
			sum += e->buckets[i].count;
	return sum;
}

/* Make room by dropping the roles with nothing in their window. */
static void
evict_idle_roles(QcRoleCounts *c, int32 now)
{
	HASH_SEQ_STATUS status;
	RoleEntry  *e;

	hash_seq_init(&status, c->table);
	while ((e = hash_seq_search(&status)) != NULL)
		if (in_window(c, e, now) == 0)
			hash_search(c->table, &e->role, HASH_REMOVE, NULL);
}

bool
qc_rolecounts_add(QcRoleCounts *c, Oid role, int64 n, int64 below, int64 *used)
{
	int32		now = current_step(c);
	bool		found;
	RoleEntry  *e;

	*used = 0;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	e = hash_search(c->table, &role, HASH_ENTER_NULL, &found);
	if (e == NULL)
	{
		evict_idle_roles(c, now);
		e = hash_search(c->table, &role, HASH_ENTER_NULL, &found);
	}
	if (e != NULL)
	{
		RoleBucket *b = &e->buckets[now % c->steps];

		if (!found)
			memset(e->buckets, 0, c->steps * sizeof(RoleBucket));
		*used = in_window(c, e, now);
		if (below <= 0 || *used < below)
		{
			if (b->step != now)
			{
				b->step = now;
				b->count = 0;
			}
			b->count += n;
		}
	}
	LWLockRelease(c->lock);
	return e != NULL;
}

int64
qc_rolecounts_get(QcRoleCounts *c, Oid role)
{
	RoleEntry  *e;
	int64		sum = 0;

	if (c->table == NULL)
		return -1;
	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	e = hash_search(c->table, &role, HASH_FIND, NULL);
	if (e != NULL)
		sum = in_window(c, e, current_step(c));
	LWLockRelease(c->lock);
	return sum;
}

TimestampTz
qc_rolecounts_reopens(QcRoleCounts *c, Oid role)
{
	int32		now = current_step(c);
	int32		oldest = now;
	RoleEntry  *e;

	LWLockAcquire(c->lock, LW_EXCLUSIVE);
	e = hash_search(c->table, &role, HASH_FIND, NULL);
	if (e != NULL)
		for (int i = 0; i < c->steps; i++)
			if (e->buckets[i].step > now - c->steps && e->buckets[i].count > 0)
				oldest = Min(oldest, e->buckets[i].step);
	LWLockRelease(c->lock);
	/* a step leaves the window when the step `steps` later begins */
	return (TimestampTz) (oldest + c->steps) * c->step_us;
}

bool
qc_rolecounts_admit(QcRoleCounts *c, int64 n, int limit, QcVerdict *v)
{
	const QcRoleLimit *w = &c->words;
	Oid			role = GetUserId();
	const char *name;
	int64		used;

	if (limit == 0)
		return qc_verdict_allow(v);
	if (c->table == NULL)
		return qc_verdict_refuse(v, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
								 psprintf("%ss need queryclaw_ext in shared_preload_libraries", w->limit),
								 psprintf("%s is %d for role %s, and the per-role counters live in shared memory.",
										  w->setting, limit, GetUserNameFromId(role, false)),
								 psprintf("Add queryclaw_ext to shared_preload_libraries and restart the server, or set %s to 0.",
										  w->setting),
								 0);
	if (!qc_rolecounts_add(c, role, n, limit, &used))
		return qc_verdict_refuse(v, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
								 pstrdup(w->full),
								 psprintf("The per-role %s hold %d roles, and each of them %s %s.",
										  w->counters, QC_ROLECOUNT_ROLES, w->verb, w->counted),
								 psprintf("Set %s to 0 for roles that need no %s.", w->setting, w->noun),
								 /* idle roles are dropped: one may be, a step on */
								 GetCurrentTimestamp() + c->step_us);
	if (used < limit)
		return qc_verdict_allow(v);
	/* the name only for a refusal: an allowed call looks nothing up */
	name = GetUserNameFromId(role, false);
	return qc_verdict_refuse(v, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
							 psprintf("%s exceeded for role \"%s\"", w->limit, name),
							 psprintf("Role %s %s %lld %s; %s is %d.", name, w->verb,
									  (long long) used, w->counted, w->setting, limit),
							 psprintf("Wait until %s, or have a superuser raise the %s with ALTER ROLE %s SET %s.",
									  w->wait, w->noun, quote_identifier(name), w->setting),
							 qc_rolecounts_reopens(c, role));
}
