/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  Name resolution for check_url(), cancellable and bounded in time.
 *
 * getaddrinfo() blocks until the name server answers or gives up, which
 * may be ten seconds or more, and no query cancel can stop it.  So the
 * lookup runs in glibc's own helper thread (getaddrinfo_a) while the
 * backend waits in short slices, answering a cancel or statement_timeout
 * between them, and stops waiting at queryclaw.timeout.
 *
 * A lookup that is still running when the backend stops waiting cannot be
 * freed: glibc's thread will write its answer into it.  It is kept in a
 * list of abandoned lookups and freed by a later call once it has ended,
 * so what a cancelled lookup holds is bounded by the resolver's own
 * timeout, not kept for the life of the backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/wait_event.h"

#include "queryclaw.h"
#include "resolve.h"

/* How long one wait lasts before a cancel is looked at */
#define WAIT_SLICE_NS (50 * 1000 * 1000)

/* One lookup; malloc'd, because glibc may write to it after an ERROR */
typedef struct Lookup
{
	struct gaicb request;
	struct addrinfo hints;
	struct Lookup *next;		/* in the abandoned list */
	char		host[FLEXIBLE_ARRAY_MEMBER];
} Lookup;

static Lookup *abandoned = NULL;

static void
lookup_free(Lookup *lookup)
{
	if (lookup->request.ar_result != NULL)
		freeaddrinfo(lookup->request.ar_result);
	free(lookup);
}

/* Free the abandoned lookups that have ended since. */
static void
reap_abandoned(void)
{
	Lookup	  **link = &abandoned;

	while (*link != NULL)
	{
		Lookup	   *lookup = *link;

		if (gai_error(&lookup->request) == EAI_INPROGRESS)
			link = &lookup->next;
		else
		{
			*link = lookup->next;
			lookup_free(lookup);
		}
	}
}

/* Stop waiting for a lookup: cancel it, or leave it for reap_abandoned(). */
static void
abandon(Lookup *lookup)
{
	if (gai_cancel(&lookup->request) == EAI_CANCELED ||
		gai_error(&lookup->request) != EAI_INPROGRESS)
		lookup_free(lookup);
	else
	{
		lookup->next = abandoned;
		abandoned = lookup;
	}
}

/* Copy the IPv4 and IPv6 addresses of a lookup's answer. */
static int
copy_addresses(const struct addrinfo *ai, QcInetAddr *addrs, int max)
{
	int			n = 0;

	for (; ai != NULL && n < max; ai = ai->ai_next)
	{
		QcInetAddr *a = &addrs[n];

		memset(a, 0, sizeof(*a));
		a->family = ai->ai_family;
		if (ai->ai_family == AF_INET)
			memcpy(a->bytes, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, 4);
		else if (ai->ai_family == AF_INET6)
			memcpy(a->bytes, &((struct sockaddr_in6 *) ai->ai_addr)->sin6_addr, 16);
		else
			continue;
		n++;
	}
	return n;
}

/*
 * Wait for a started lookup until it ends or queryclaw.timeout passes;
 * returns its gai_error() code (EAI_INPROGRESS: timed out).  A cancel is
 * raised from here.
 */
static int
wait_for_lookup(Lookup *lookup)
{
	const struct gaicb *list[1] = {&lookup->request};
	instr_time	start;
	instr_time	now;
	int			rc;

	INSTR_TIME_SET_CURRENT(start);
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	while ((rc = gai_error(&lookup->request)) == EAI_INPROGRESS)
	{
		struct timespec slice = {0, WAIT_SLICE_NS};

		(void) gai_suspend(list, 1, &slice);
		CHECK_FOR_INTERRUPTS();
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (INSTR_TIME_GET_MILLISEC(now) >= qc_timeout)
			break;
	}
	pgstat_report_wait_end();
	return rc;
}

int
qc_resolve_host(const char *host, QcInetAddr *addrs, int max, const char **error)
{
	size_t		len = strlen(host);
	Lookup	   *lookup;
	struct gaicb *requests[1];
	int			rc;
	int			n = 0;

	reap_abandoned();
	lookup = calloc(1, offsetof(Lookup, host) + len + 1);
	if (lookup == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	memcpy(lookup->host, host, len + 1);
	lookup->hints.ai_socktype = SOCK_STREAM;
	lookup->request.ar_name = lookup->host;
	lookup->request.ar_request = &lookup->hints;
	requests[0] = &lookup->request;
	rc = getaddrinfo_a(GAI_NOWAIT, requests, 1, NULL);
	if (rc != 0)
	{
		free(lookup);
		*error = gai_strerror(rc);
		return -1;
	}

	PG_TRY();
	{
		rc = wait_for_lookup(lookup);
	}
	PG_CATCH();
	{
		abandon(lookup);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (rc == EAI_INPROGRESS)
	{
		abandon(lookup);
		*error = "Name resolution timed out (queryclaw.timeout).";
		return -1;
	}
	if (rc != 0)
		*error = gai_strerror(rc);
	else
		n = copy_addresses(lookup->request.ar_result, addrs, max);
	lookup_free(lookup);
	return rc == 0 ? n : -1;
}
