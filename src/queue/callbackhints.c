/*-------------------------------------------------------------------------
 *
 * callbackhints.c
 *	  The requests handed to the callback workers, told them in shared
 *	  memory, so that they need not look for them in the table.
 *
 * A request whose callback is due says so in queryclaw.requests (queue.h),
 * and the table is the truth.  But reading it is dear where it matters
 * most: while a long transaction holds the oldest snapshot back (a wait()
 * on a batch of thousands, pg_dump), the index entries of the callbacks
 * already run cannot be removed, and every look at the table walks past
 * all of them again.  So an async worker, once the hand-offs it made are
 * committed, also notes their ids here; a callback worker takes its next
 * callbacks from these hints, and reads the table only when hints were
 * lost: more than QC_CALLBACK_HINTS at once, a cancel (its callbacks are
 * due at the canceller's commit), a worker's start, a hint taken by a
 * worker that failed, or now and then as a safety net (callbackworker.c).
 * A hint is only a hint: a callback worker locks the row and checks that
 * its callback is still due, so a stale or repeated one costs a look.
 *
 * A crash empties shared memory: the callback workers read the table when
 * they start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "callbackhints.h"

#define QC_CALLBACK_HINTS_TRANCHE "queryclaw callback hints"

typedef struct Hints
{
	LWLock	   *lock;			/* guards what follows */
	bool		lost;			/* a hint was not kept since the last look */
	int			n;
	QcCallbackHint hint[QC_CALLBACK_HINTS]; /* the oldest first */
} Hints;

static Hints *hints = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
hints_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(Hints)));
	RequestNamedLWLockTranche(QC_CALLBACK_HINTS_TRANCHE, 1);
}

static void
hints_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	hints = ShmemInitStruct("queryclaw callback hints", sizeof(Hints), &found);
	if (!found)
	{
		memset(hints, 0, sizeof(Hints));
		hints->lock = &(GetNamedLWLockTranche(QC_CALLBACK_HINTS_TRANCHE))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
qc_callback_hints_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = hints_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = hints_shmem_startup;
}

/* Keep n hints, after the others or (front) before them; what does not fit is lost. */
static void
put(const QcCallbackHint *add, int n, bool front)
{
	int			kept;

	if (n <= 0)
		return;
	LWLockAcquire(hints->lock, LW_EXCLUSIVE);
	kept = Min(n, QC_CALLBACK_HINTS - hints->n);
	if (front)
		memmove(hints->hint + kept, hints->hint, hints->n * sizeof(QcCallbackHint));
	memcpy(hints->hint + (front ? 0 : hints->n), add, kept * sizeof(QcCallbackHint));
	hints->n += kept;
	if (kept < n)
		hints->lost = true;
	LWLockRelease(hints->lock);
}

void
qc_callback_hints_add(const QcCallbackHint *add, int n)
{
	put(add, n, false);
}

void
qc_callback_hints_lose(void)
{
	LWLockAcquire(hints->lock, LW_EXCLUSIVE);
	hints->lost = true;
	LWLockRelease(hints->lock);
}

bool
qc_callback_hints_take_lost(void)
{
	bool		lost;

	LWLockAcquire(hints->lock, LW_EXCLUSIVE);
	lost = hints->lost;
	hints->lost = false;
	LWLockRelease(hints->lock);
	return lost;
}

/* A hint's place in the round-robin: the turn of its role, and its own. */
typedef struct Turn
{
	int			index;			/* in hints->hint */
	Oid			role;
	int			place;			/* 0 for its role's oldest, 1 for the next... */
	int			turn;			/* its role's position in order, -1: not in it */
} Turn;

static int
by_role(const void *a, const void *b)
{
	const Turn *ta = a;
	const Turn *tb = b;

	if (ta->role != tb->role)
		return ta->role < tb->role ? -1 : 1;
	return ta->index - tb->index;
}

static int
by_turn(const void *a, const void *b)
{
	const Turn *ta = a;
	const Turn *tb = b;

	if (ta->place != tb->place)
		return ta->place - tb->place;
	if (ta->turn != tb->turn)
		return ta->turn - tb->turn;
	return by_role(a, b);
}

/* The position of role in order, or -1. */
static int
turn_of(Oid role, const Oid *order, int norder)
{
	for (int i = 0; i < norder; i++)
		if (order[i] == role)
			return i;
	return -1;
}

/* The hints' turns, under the lock, into t, in the order they are to be taken. */
static void
turns(Turn *t, const Oid *order, int norder)
{
	for (int i = 0; i < hints->n; i++)
	{
		t[i].index = i;
		t[i].role = hints->hint[i].role;
	}
	qsort(t, hints->n, sizeof(Turn), by_role);
	for (int i = 0; i < hints->n; i++)
	{
		bool		same = i > 0 && t[i].role == t[i - 1].role;

		t[i].place = same ? t[i - 1].place + 1 : 0;
		t[i].turn = same ? t[i - 1].turn : turn_of(t[i].role, order, norder);
	}
	qsort(t, hints->n, sizeof(Turn), by_turn);
}

int
qc_callback_hints_take(QcCallbackHint *out, int max, const Oid *order, int norder)
{
	/* allocated before the lock is taken: nothing under it can fail */
	Turn	   *t = palloc(QC_CALLBACK_HINTS * sizeof(Turn));
	bool	   *taken = palloc0(QC_CALLBACK_HINTS * sizeof(bool));
	int			n;
	int			kept = 0;

	LWLockAcquire(hints->lock, LW_EXCLUSIVE);
	turns(t, order, norder);
	n = Min(max, hints->n);
	for (int i = 0; i < n; i++)
	{
		out[i] = hints->hint[t[i].index];
		taken[t[i].index] = true;
	}
	for (int i = 0; i < hints->n; i++)
		if (!taken[i])
			hints->hint[kept++] = hints->hint[i];
	hints->n = kept;
	LWLockRelease(hints->lock);
	pfree(t);
	pfree(taken);
	return n;
}

void
qc_callback_hints_return(const QcCallbackHint *back, int n)
{
	put(back, n, true);
}
