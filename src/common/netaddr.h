/*-------------------------------------------------------------------------
 *
 * netaddr.h
 *	  Classification of IP addresses into public and non-public ranges.
 *
 * Pure C with no PostgreSQL dependency, so that it can be unit tested and
 * fuzzed outside a server.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_NETADDR_H
#define QC_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IPv4 or IPv6 address in network byte order. */
typedef struct QcInetAddr
{
	int			family;			/* AF_INET or AF_INET6 */
	uint8_t		bytes[16];		/* 4 used for AF_INET */
} QcInetAddr;

/*
 * Why an address is not public.  range is a short name such as "loopback";
 * embedded is set when the address is IPv6 carrying an IPv4 address that is
 * itself not public (mapped, compatible, NAT64, 6to4, Teredo).
 */
typedef struct QcAddrClass
{
	const char *range;			/* NULL when the address is public */
	const char *via;			/* embedding form, or NULL */
	QcInetAddr	embedded;		/* valid when via != NULL */
} QcAddrClass;

struct sockaddr;

/*
 * The address (and, when port is not NULL, the port) of an IPv4 or IPv6
 * socket address; false for any other family.
 */
extern bool qc_inet_from_sockaddr(const struct sockaddr *sa, QcInetAddr *out,
								  int *port);

/* Parse an IPv4 or IPv6 literal (no brackets, no port). */
extern bool qc_inet_parse(const char *text, QcInetAddr *out);

/* Format an address as text into buf (at least 64 bytes). */
extern void qc_inet_format(const QcInetAddr *addr, char *buf, size_t buflen);

/* Classify an address; returns true when it is public. */
extern bool qc_inet_classify(const QcInetAddr *addr, QcAddrClass *cls);

/* Does addr fall inside net/prefix?  Families must match. */
extern bool qc_inet_in_prefix(const QcInetAddr *addr, const QcInetAddr *net,
							  int prefix);

#endif							/* QC_NETADDR_H */
