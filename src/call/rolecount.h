/*-------------------------------------------------------------------------
 *
 * rolecount.h
 *	  Per-role counts over a sliding window, in shared memory (rolecount.c):
 *	  what queryclaw.max_calls_per_hour (ratelimit.c) and
 *	  queryclaw.max_tokens_per_day (budget.c) count.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ROLECOUNT_H
#define QC_ROLECOUNT_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"

#include "verdict.h"

/* Roles counted at once in one set of counters. */
#define QC_ROLECOUNT_ROLES 1024

/*
 * The words of a limit kept in a set of counters, for its refusals: e.g.
 * "rate limits need queryclaw_ext in shared_preload_libraries", "rate limit
 * exceeded for role", "Role r made 10 calls in the last hour".
 */
typedef struct QcRoleLimit
{
	const char *setting;		/* "queryclaw.max_calls_per_hour" */
	const char *limit;			/* "rate limit": what is exceeded */
	const char *noun;			/* "limit": what a superuser may raise */
	const char *verb;			/* "made" */
	const char *counted;		/* "calls in the last hour" */
	const char *full;			/* the message when the counters are full */
	const char *counters;		/* "counters": what holds the roles */
	const char *wait;			/* "earlier calls leave the one-hour window" */
} QcRoleLimit;

/*
 * One set of counters: a static variable of its module, with the first
 * four members set; the rest is filled at server start.
 */
typedef struct QcRoleCounts
{
	const char *name;			/* the hash table's and LWLock tranche's name */
	int			steps;			/* the window, in steps */
	int64		step_us;		/* one step, in microseconds */
	QcRoleLimit words;			/* of its limit's refusals */
	HTAB	   *table;			/* NULL without shared_preload_libraries */
	LWLock	   *lock;
	struct QcRoleCounts *next;	/* the registered sets */
} QcRoleCounts;

/* _PG_init, while preloading: have the counters made at server start. */
extern void qc_rolecounts_register(QcRoleCounts *counts);

/*
 * Add n to the role's count when the count in the window is below `below`
 * (0: always); *used is the count before.  Returns false, counting
 * nothing, when the role has no entry and none can be made (every role
 * counted is active): the caller refuses, so that a full table fails
 * closed.  Needs the counters (counts->table not NULL).
 */
extern bool qc_rolecounts_add(QcRoleCounts *counts, Oid role, int64 n, int64 below,
							  int64 *used);

/*
 * The verdict of a limit on adding n to the calling role's count, added
 * when allowed.  Refused: 53400 when the count has reached the limit
 * (retry_at: when the role's oldest count leaves the window) or the
 * counters are full, 55000 without the counters (not preloaded).  A limit
 * of 0 allows everything and counts nothing.
 */
extern bool qc_rolecounts_admit(QcRoleCounts *counts, int64 n, int limit,
								QcVerdict *verdict);

/* The role's count in the window; -1 without the counters. */
extern int64 qc_rolecounts_get(QcRoleCounts *counts, Oid role);

/*
 * When the role's oldest count leaves the window (a window from now when
 * it has none).  Needs the counters.
 */
extern TimestampTz qc_rolecounts_reopens(QcRoleCounts *counts, Oid role);

#endif							/* QC_ROLECOUNT_H */
