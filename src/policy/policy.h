/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  URL parsing and the policy decisions made before and during a request.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_POLICY_H
#define QC_POLICY_H

#include "netaddr.h"
#include "rules.h"
#include "verdict.h"

/* A URL as libcurl's URL parser understands it. */
typedef struct QcUrl
{
	char	   *url;			/* normalised URL (host as below), no fragment */
	char	   *scheme;			/* lower case */
	char	   *host;			/* as qc_host_to_ascii() maps it; "" if none */
	int			port;			/* explicit or the scheme's default */
	bool		host_is_ip;
	QcInetAddr	addr;			/* valid when host_is_ip */
} QcUrl;


/*
 * The settings a call is judged and sent under, as they were when the call
 * was made: each call carries its own (QcCall.policy), because the async
 * worker has calls of several roles on the wire at once, each under its
 * role's settings, while the GUCs in force are the worker's.
 */
typedef struct QcPolicy
{
	bool		enabled;
	bool		block_local;
	bool		read_only;
	int			max_redirects;
	const QcHostList *allowed_hosts;
	const QcHostList *denied_hosts;
	const QcAddrList *local_allowlist;
	const char *user_agent;
	const char *proxy;			/* "" for none */
	const char *ca_file;		/* "" for the system's */
} QcPolicy;

/* The settings in force now, copied into the current memory context. */
extern const QcPolicy *qc_policy_capture(void);

/*
 * Parse an absolute URL and map its host (hostname.c).  Returns false with
 * *error set to a sentence when the text is not a URL, holds a control
 * character, or names a host that is not valid; any scheme parses
 * (refusing it is policy).
 */
extern bool qc_url_parse(const char *text, QcUrl *url, char **error);

/*
 * The addresses a URL names without any lookup: its literal address, or
 * 127.0.0.1 and ::1 for "localhost" and "*.localhost".  addrs has room for
 * two; returns how many.
 */
extern int	qc_url_literal_addresses(const QcUrl *url, QcInetAddr *addrs);

/*
 * Everything that can be decided from the URL and method alone: the master
 * switch, scheme,
 * denied and allowed hosts, literal addresses, read_only.  Returns false and
 * fills *refusal (a QcVerdict, never raised) when the request must not be
 * sent; *refusal is left alone when it may.
 */
extern bool qc_policy_check_url(const QcPolicy *policy, const QcUrl *url, const char *method,
								QcVerdict *refusal);

/*
 * The rules of qc_policy_check_url() that hold for the URL and method
 * whatever the moment and the addresses: the scheme, denied and allowed
 * hosts, read_only (not the master switch, not block_local).  What a
 * request is checked for when it is queued, to be sent later.
 */
extern bool qc_policy_check_url_rules(const QcPolicy *policy, const QcUrl *url, const char *method,
									  QcVerdict *refusal);

/*
 * The part of qc_policy_check_url() that applies even to a trusted endpoint
 * (the DBA's queryclaw.llm_url or search_url): the master switch and the
 * http/https rule.
 */
extern bool qc_policy_check_trusted_url(const QcPolicy *policy, const QcUrl *url, QcVerdict *refusal);

/*
 * The connect-time rule for one address: may the extension open a
 * connection to addr:port?  Allocates nothing and never raises an error, so
 * libcurl callbacks can call it; *cls says why not.
 */
extern bool qc_policy_address_permitted(const QcPolicy *policy, const QcInetAddr *addr, int port,
										QcAddrClass *cls);

/* Describe a refused address (outside any libcurl callback). */
extern void qc_policy_address_refusal(const QcInetAddr *addr, int port,
									  const QcAddrClass *cls,
									  QcVerdict *refusal);

#endif							/* QC_POLICY_H */
