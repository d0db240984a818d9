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

/*
 * Resolve host into at most max IPv4/IPv6 addresses, waiting no longer
 * than queryclaw.timeout; a query cancel is raised while waiting.  Returns
 * the number of addresses, or -1 with *error set to a sentence saying why.
 */
extern int	qc_resolve_host(const char *host, QcInetAddr *addrs, int max,
							const char **error);

#endif							/* QC_RESOLVE_H */
