/*-------------------------------------------------------------------------
 *
 * rules.h
 *	  Parsing and matching of the list settings: queryclaw.local_allowlist
 *	  (addresses and CIDRs, optional port) and queryclaw.allowed_hosts /
 *	  queryclaw.denied_hosts (host names, *.wildcards, optional port).
 *
 * Pure C (malloc, no PostgreSQL headers): the GUC check hooks keep the
 * parsed lists as their "extra" data, through qc_guc_extra() (compat.h:
 * PostgreSQL 16 and newer free extra data with guc_free(), not free()).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RULES_H
#define QC_RULES_H

#include "hostname.h"

/* One local_allowlist entry. */
typedef struct QcAddrRule
{
	QcInetAddr	net;
	int			bits;			/* prefix length */
	int			port;			/* 0 = any port */
} QcAddrRule;

typedef struct QcAddrList
{
	int			count;
	QcAddrRule	rules[];
} QcAddrList;

/* One allowed_hosts / denied_hosts entry. */
typedef struct QcHostRule
{
	int			wildcard;		/* "*.example.com": subdomains only */
	int			port;			/* 0 = any port */
	char		name[QC_HOST_MAX + 1];	/* as qc_host_to_ascii() maps it */
} QcHostRule;

typedef struct QcHostList
{
	int			count;
	QcHostRule	rules[];
} QcHostList;

/*
 * Parse a list; on success return a malloc'd list (possibly empty), on
 * failure return NULL and write a sentence explaining the problem to err.
 */
extern QcAddrList *qc_addr_list_parse(const char *text, char *err, size_t errlen);
extern QcHostList *qc_host_list_parse(const char *text, char *err, size_t errlen);

/* Matching: port is the port actually used. */
extern const QcAddrRule *qc_addr_list_match(const QcAddrList *list,
											const QcInetAddr *addr, int port);
/* host is as qc_host_to_ascii() maps it. */
extern const QcHostRule *qc_host_list_match(const QcHostList *list,
											const char *host, int port);

#endif							/* QC_RULES_H */
