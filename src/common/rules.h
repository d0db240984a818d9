/*-------------------------------------------------------------------------
 *
 * rules.h
 *	  Parsing and matching of the list settings: queryclaw.local_allowlist
 *	  (addresses and CIDRs, optional port), queryclaw.allowed_hosts /
 *	  queryclaw.denied_hosts (host names, *.wildcards, optional port) and
 *	  queryclaw.host_rate_limit (a host, *.domain or *, then =N/s).
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

/* One host_rate_limit entry: requests a second to matching hosts. */
typedef struct QcRateRule
{
	QcHostRule	host;			/* port 0; name "" with wildcard for "*" */
	double		per_second;
} QcRateRule;

typedef struct QcRateList
{
	int			count;
	QcRateRule	rules[];
} QcRateList;

/*
 * Parse a list; on success return a malloc'd list (possibly empty), on
 * failure return NULL and write a sentence explaining the problem to err.
 */
extern QcAddrList *qc_addr_list_parse(const char *text, char *err, size_t errlen);
extern QcHostList *qc_host_list_parse(const char *text, char *err, size_t errlen);
extern QcRateList *qc_rate_list_parse(const char *text, char *err, size_t errlen);

/* Matching: port is the port actually used. */
extern const QcAddrRule *qc_addr_list_match(const QcAddrList *list,
											const QcInetAddr *addr, int port);
/* host is as qc_host_to_ascii() maps it. */
extern const QcHostRule *qc_host_list_match(const QcHostList *list,
											const char *host, int port);

/*
 * The rate for a host: its own entry, else the longest "*.domain" entry
 * that covers it, else "*"; NULL when none applies (no limit).
 */
extern const QcRateRule *qc_rate_list_match(const QcRateList *list,
											const char *host);

#endif							/* QC_RULES_H */
