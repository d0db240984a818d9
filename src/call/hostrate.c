/*-------------------------------------------------------------------------
 *
 * hostrate.c
 *	  queryclaw.host_rate_limit: a token bucket per host, in shared memory,
 *	  so that every worker (and every restart of one) shares one rate.
 *
 * The setting ('api.example.com=5/s, *.example.org=2/s, *=50/s') is parsed
 * by its check hook (rules.c); the rate of a host is its own entry's, else
 * the longest *.domain entry's, else *'s.  Each host has a bucket of its
 * own, even under a *.domain or * entry: the limit is per host.  The
 * arithmetic, including the promise of a future token to a request that
 * found the bucket empty, is bucket.c's.
 *
 * The table holds QC_HOSTRATE_HOSTS hosts.  When it is full, the buckets
 * that are full again (no request lately, no token promised) are dropped;
 * when none can be, the request goes unlimited rather than waiting for
 * ever, and a WARNING says so: the limit protects a remote server's
 * quota, and failing open keeps the queue moving.
 *
 * Locking: the "queryclaw_hostrate" LWLock protects the whole table; it is
 * taken exclusively for one lookup and one update (or the eviction scan),
 * and nothing that can fail is done while it is held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "bucket.h"
#include "cluster.h"
#include "guc.h"
#include "hostname.h"
#include "hostrate.h"
#include "rules.h"

#define QC_HOSTRATE_NAME "queryclaw_hostrate"
#define QC_HOSTRATE_HOSTS 1024

typedef struct HostBucket
{
	char		host[QC_HOST_MAX + 1];	/* hash key: a host, or a server */
	double		rate;			/* tokens a second, as last taken */
	QcBucket	bucket;
} HostBucket;

static HTAB *buckets = NULL;
static LWLock *lock = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
hostrate_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(QC_HOSTRATE_HOSTS, sizeof(HostBucket)));
	RequestNamedLWLockTranche(QC_HOSTRATE_NAME, 1);
}

static void
hostrate_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	info.keysize = QC_HOST_MAX + 1;
	info.entrysize = sizeof(HostBucket);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	lock = &(GetNamedLWLockTranche(QC_HOSTRATE_NAME))->lock;
	buckets = ShmemInitHash(QC_HOSTRATE_NAME, QC_HOSTRATE_HOSTS, QC_HOSTRATE_HOSTS,
							&info, HASH_ELEM | HASH_STRINGS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
}

void
qc_hostrate_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = hostrate_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = hostrate_shmem_startup;
}

/* Drop the buckets that are full again. */
static void
evict_idle_hosts(int64 now)
{
	HASH_SEQ_STATUS status;
	HostBucket *e;

	hash_seq_init(&status, buckets);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		if (qc_bucket_idle(&e->bucket, e->rate, now))
			hash_search(buckets, e->host, HASH_REMOVE, NULL);
	}
}

bool
qc_hostrate_take(const char *name, double rate, TimestampTz now,
				 TimestampTz *go_at)
{
	char		key[QC_HOST_MAX + 1] = {0};
	HostBucket *e;
	bool		found;
	bool		go = true;
	int64		wait_us = 0;

	*go_at = now;
	if (buckets == NULL || name[0] == '\0')
		return true;
	/* on a cluster, this node's share of the rate (cluster.c) */
	rate = qc_cluster_share_rate(rate);
	strlcpy(key, name, sizeof(key));
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = hash_search(buckets, key, HASH_ENTER_NULL, &found);
	if (e == NULL)
	{
		evict_idle_hosts(now);
		e = hash_search(buckets, key, HASH_ENTER_NULL, &found);
	}
	if (e != NULL)
	{
		if (!found)
			qc_bucket_init(&e->bucket, rate, now);
		e->rate = rate;
		go = qc_bucket_take(&e->bucket, rate, now, &wait_us);
	}
	LWLockRelease(lock);
	if (e == NULL)
		ereport(WARNING,
				(errmsg("the rate limit of \"%s\" is not applied", name),
				 errdetail("The rates of %d hosts and servers are being counted, and none of them is idle.",
						   QC_HOSTRATE_HOSTS)));
	*go_at = now + wait_us;
	return go;
}

bool
qc_hostrate_admit(const char *host, TimestampTz now, TimestampTz *go_at)
{
	const QcRateRule *rule = qc_rate_list_match(qc_host_rate_limit_parsed, host);

	*go_at = now;
	return rule == NULL || qc_hostrate_take(host, rule->per_second, now, go_at);
}

/*
 * A rate as host_rate_limit is written: "N/s" for a whole number a second,
 * else "N/min" for a whole number a minute (as "30/min" was given).
 */
static char *
rate_text(double per_second)
{
	double		per_minute = per_second * 60;

	if (per_second == rint(per_second))
		return psprintf("%.0f/s", per_second);
	if (fabs(per_minute - rint(per_minute)) < 1e-6)
		return psprintf("%.0f/min", rint(per_minute));
	return psprintf("%g/s", per_second);
}

char *
qc_hostrate_limit_text(const char *host)
{
	const QcRateRule *rule = qc_rate_list_match(qc_host_rate_limit_parsed, host);

	return rule ? rate_text(qc_cluster_share_rate(rule->per_second)) : NULL;
}
