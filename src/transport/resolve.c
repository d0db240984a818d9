/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  Name resolution, cancellable and bounded in time: for check_url(),
 *	  and for every request whose addresses are checked (http.c), which
 *	  needs all the addresses a name has, not only the one libcurl tries.
 *
 * getaddrinfo() blocks until the name server answers or gives up, which
 * may be ten seconds or more, and no query cancel can stop it.  So the
 * lookup runs in a thread of its own while the backend waits in short
 * slices, answering a cancel or statement_timeout between them, and stops
 * waiting at queryclaw.timeout.  The transport (http.c) starts lookups
 * without waiting and drives them from its own loop, woken by the thread.
 *
 * The thread touches nothing of PostgreSQL's: it calls getaddrinfo() on a
 * malloc'd lookup and marks it done, with every signal blocked, so that
 * the backend's signal handlers run in the backend's own thread.  When the
 * backend stops waiting first, it marks the lookup abandoned, and whichever
 * of the two comes last frees it; so a cancelled lookup holds its memory
 * only until the resolver gives up, and nothing is leaked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "guc.h"
#include "resolve.h"

/* How long one wait lasts before the lookup and a cancel are looked at */
#define WAIT_SLICE_MS 10

/*
 * Most lookup threads a backend keeps at once, abandoned ones included: a
 * session that cancels lookup after lookup of names that never resolve
 * would otherwise start threads faster than the resolver lets them end.
 */
#define MAX_LOOKUP_THREADS 16

static pthread_mutex_t threads_mutex = PTHREAD_MUTEX_INITIALIZER;
static int	threads_running = 0;

/* One lookup, shared by the backend and the thread that runs it */
struct QcLookup
{
	pthread_mutex_t mutex;
	bool		done;			/* the thread has its answer */
	bool		abandoned;		/* the backend stopped waiting */
	int			rc;				/* getaddrinfo()'s result */
	struct addrinfo *result;
	QcLookupWake wake;			/* called by the thread once done, or NULL */
	void	   *wake_arg;
	char		host[FLEXIBLE_ARRAY_MEMBER];
};

typedef struct QcLookup Lookup;

static void
lookup_free(Lookup *lookup)
{
	if (lookup->result != NULL)
		freeaddrinfo(lookup->result);
	pthread_mutex_destroy(&lookup->mutex);
	free(lookup);
}

/*
 * Mark the lookup done (by the thread) or abandoned (by the backend);
 * returns true when the other side had already let go of it, so that the
 * caller frees it.
 */
static bool
let_go(Lookup *lookup, bool thread)
{
	bool		last;

	pthread_mutex_lock(&lookup->mutex);
	if (thread)
		lookup->done = true;
	else
		lookup->abandoned = true;
	last = thread ? lookup->abandoned : lookup->done;
	pthread_mutex_unlock(&lookup->mutex);
	return last;
}

static bool
lookup_done(Lookup *lookup)
{
	bool		done;

	pthread_mutex_lock(&lookup->mutex);
	done = lookup->done;
	pthread_mutex_unlock(&lookup->mutex);
	return done;
}

static void *
lookup_thread(void *arg)
{
	Lookup	   *lookup = arg;
	struct addrinfo hints = {0};
	QcLookupWake wake = lookup->wake;
	void	   *wake_arg = lookup->wake_arg;

	hints.ai_socktype = SOCK_STREAM;
	lookup->rc = getaddrinfo(lookup->host, NULL, &hints, &lookup->result);
	/* once let go of, the lookup may be freed: its wake-up was copied */
	if (let_go(lookup, true))
		lookup_free(lookup);
	else if (wake != NULL)
		wake(wake_arg);
	pthread_mutex_lock(&threads_mutex);
	threads_running--;
	pthread_mutex_unlock(&threads_mutex);
	return NULL;
}

/*
 * Start the thread, with every signal blocked in it; false (and *error)
 * if it could not be started.
 */
static bool
start_lookup(Lookup *lookup, const char **error)
{
	pthread_attr_t attr;
	pthread_t	thread;
	sigset_t	all;
	sigset_t	saved;
	int			rc;

	pthread_mutex_lock(&threads_mutex);
	if (threads_running >= MAX_LOOKUP_THREADS)
	{
		pthread_mutex_unlock(&threads_mutex);
		*error = "Too many earlier name lookups of this session are still waiting for the name server.";
		return false;
	}
	threads_running++;
	pthread_mutex_unlock(&threads_mutex);

	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	rc = pthread_create(&thread, &attr, lookup_thread, lookup);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
	{
		pthread_mutex_lock(&threads_mutex);
		threads_running--;
		pthread_mutex_unlock(&threads_mutex);
		*error = "The name lookup could not be started.";
	}
	return rc == 0;
}

/* Copy the IPv4 and IPv6 addresses of a lookup's answer. */
static int
copy_addresses(const struct addrinfo *ai, QcInetAddr *addrs, int max)
{
	int			n = 0;

	for (; ai != NULL && n < max; ai = ai->ai_next)
	{
		if (qc_inet_from_sockaddr(ai->ai_addr, &addrs[n], NULL))
			n++;
	}
	return n;
}

/*
 * Wait until the lookup is done or queryclaw.timeout has passed; returns
 * whether it is done.  A cancel is raised from here.
 */
static bool
wait_for_lookup(Lookup *lookup)
{
	instr_time	start;
	instr_time	now;
	bool		done;

	INSTR_TIME_SET_CURRENT(start);
	while (!(done = lookup_done(lookup)))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 WAIT_SLICE_MS, qc_wait_event(QC_WAIT_DNS));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (INSTR_TIME_GET_MILLISEC(now) >= qc_timeout)
			break;
	}
	return done;
}

QcLookup *
qc_lookup_start(const char *host, QcLookupWake wake, void *wake_arg,
				const char **error)
{
	size_t		len = strlen(host);
	Lookup	   *lookup;

	lookup = calloc(1, offsetof(Lookup, host) + len + 1);
	if (lookup == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	pthread_mutex_init(&lookup->mutex, NULL);
	lookup->wake = wake;
	lookup->wake_arg = wake_arg;
	memcpy(lookup->host, host, len + 1);
	if (!start_lookup(lookup, error))
	{
		lookup_free(lookup);
		return NULL;
	}
	return lookup;
}

bool
qc_lookup_done(QcLookup *lookup)
{
	return lookup_done(lookup);
}

int
qc_lookup_finish(QcLookup *lookup, QcInetAddr *addrs, int max, const char **error)
{
	int			n;

	Assert(lookup_done(lookup));
	if (lookup->rc != 0)
	{
		*error = gai_strerror(lookup->rc);
		n = -1;
	}
	else
		n = copy_addresses(lookup->result, addrs, max);
	lookup_free(lookup);
	return n;
}

void
qc_lookup_abandon(QcLookup *lookup)
{
	if (let_go(lookup, false))
		lookup_free(lookup);
}

int
qc_resolve_host(const char *host, QcInetAddr *addrs, int max, const char **error)
{
	QcLookup   *lookup = qc_lookup_start(host, NULL, NULL, error);
	bool		done;

	if (lookup == NULL)
		return -1;
	PG_TRY();
	{
		done = wait_for_lookup(lookup);
	}
	PG_CATCH();
	{
		qc_lookup_abandon(lookup);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (!done)
	{
		qc_lookup_abandon(lookup);
		*error = "Name resolution timed out (queryclaw.timeout).";
		return -1;
	}
	return qc_lookup_finish(lookup, addrs, max, error);
}
