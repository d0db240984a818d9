/*-------------------------------------------------------------------------
 *
 * hostname.h
 *	  The one mapping of a URL's host to the ASCII form that every policy
 *	  decision and libcurl see (hostname.c).
 *
 * Pure C (libidn2, no PostgreSQL headers), so that the unit tests, the
 * list settings' check hooks and the fuzzers use the very same code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HOSTNAME_H
#define QC_HOSTNAME_H

#include "netaddr.h"

#define QC_HOST_MAX 255

/* A host as the policy and libcurl see it. */
typedef struct QcHostName
{
	/*
	 * A host name: its A-label form (IDNA, UTS #46 non-transitional), lower
	 * case, no final dot.  An IPv4 address: dotted quad.  An IPv6 address:
	 * its canonical text, without brackets.
	 */
	char		name[QC_HOST_MAX + 1];
	bool		is_ip;
	QcInetAddr	addr;			/* valid when is_ip */
} QcHostName;

/*
 * Map a host, as a URL spells it (IPv6 in brackets or not), to its
 * QcHostName.  Full-width and other compatibility forms, Unicode full
 * stops, case and one final dot are mapped away as browsers do; a host
 * that ends in a number must be an IPv4 address in one of the forms
 * browsers and libcurl accept (WHATWG URL standard: decimal, octal,
 * hexadecimal, one to four parts).  Returns false, with a sentence in err,
 * when the host is not valid.  Allocates nothing that outlives the call.
 */
extern bool qc_host_to_ascii(const char *host, QcHostName *out,
							 char *err, size_t errlen);

#endif							/* QC_HOSTNAME_H */
