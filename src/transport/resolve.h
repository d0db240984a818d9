/*-------------------------------------------------------------------------
 *
 * resolve.h
 *	  Cancellable name resolution (resolve.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RESOLVE_H
#define QC_RESOLVE_H

#include "netaddr.h"

/* A lookup in flight (resolve.c). */
typedef struct QcLookup QcLookup;

/* Called, from the lookup's own thread, once its answer is in. */
typedef void (*QcLookupWake) (void *arg);

/*
 * Start resolving host in a thread of its own; wake (may be NULL) is
 * called from that thread once the answer is in, and must be thread-safe.
 * Returns NULL with *error set when no thread could be started (a session
 * keeps at most a few at once).
 */
extern QcLookup *qc_lookup_start(const char *host, QcLookupWake wake,
								 void *wake_arg, const char **error);

/* Is the answer in? */
extern bool qc_lookup_done(QcLookup *lookup);

/*
 * The answer of a lookup that is done: at most max addresses, or -1 with
 * *error set.  The lookup is freed.
 */
extern int	qc_lookup_finish(QcLookup *lookup, QcInetAddr *addrs, int max,
							 const char **error);

/* Stop waiting for a lookup; it is freed now or when its thread ends. */
extern void qc_lookup_abandon(QcLookup *lookup);

/*
 * Resolve host into at most max IPv4/IPv6 addresses, waiting no longer
 * than queryclaw.timeout; a query cancel is raised while waiting.  Returns
 * the number of addresses, or -1 with *error set to a sentence saying why.
 */
extern int	qc_resolve_host(const char *host, QcInetAddr *addrs, int max,
							const char **error);

#endif							/* QC_RESOLVE_H */
