/*-------------------------------------------------------------------------
 *
 * servers.h
 *	  Endpoints: APIs as SQL objects.  Foreign servers of the queryclaw
 *	  foreign-data wrapper carry an API's base URL and limits; user
 *	  mappings carry the headers and query parameters (the keys) sent to
 *	  it; USAGE on the server says who may send them.
 *
 *	 serversopts.c	the parsing of the options
 *	 serversfdw.c	the wrapper's validator, and the hook that refuses a
 *					second server with the same url (functions/serversfdw.h)
 *	 servers.c		which server a URL is under, and the role's mapping for
 *					it, read as the call is built; the DBA's endpoints as
 *					servers; what a redirect may do
 *
 * A call under a server as the transport starts it (servers_only, the
 * server's limits, the mapping applied) is the call's owner's business:
 * call/serversadmit.c, its header serversadmit.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SERVERS_H
#define QC_SERVERS_H

#include "nodes/pg_list.h"

#include "callrec.h"
#include "guc.h"
#include "policy.h"
#include "urlpath.h"

/* The name of the foreign-data wrapper the extension creates. */
#define QC_FDW_NAME "queryclaw"

/* A server's options, parsed (serversopts.c). */
typedef struct QcServerOptions
{
	const char *url;			/* the base URL, as written */
	double		rate;			/* tokens a second; 0: no rate_limit */
	const char *rate_text;		/* as written, or NULL */
	int			max_concurrency;	/* 0: no cap of its own */
	int			timeout_ms;		/* 0: queryclaw.timeout */
	int			retry_max;		/* -1: queryclaw.retry_max */
	bool		mcp;			/* protocol 'mcp': an MCP server (mcp.h) */
	const char *tools;			/* the tools offered, as written; NULL: all */
	int			tools_ttl_ms;	/* how long a backend keeps the tool list */
} QcServerOptions;

/* tools_ttl's default: five minutes. */
#define QC_MCP_TOOLS_TTL_MS (5 * 60 * 1000)

/*
 * Where a server's url reaches (servers.c): a URL is under it when its
 * scheme, host and port are the server's and its path, in each way a
 * server may read it (urlpath.h), is the server's path or below it.
 */
typedef struct QcServerScope
{
	const char *scheme;
	const char *host;
	int			port;
	const char *path[QC_PATH_READINGS];	/* normalized, no trailing '/' */
} QcServerScope;

/*
 * A call under a server (servers.c): the server, and what the calling
 * role's mapping adds.  Read when the call is built, as the role that
 * makes it; applied once, when the transport starts it (serversadmit.c).
 * The role has USAGE on the server: a server governs only the calls of
 * the roles that may use it.
 */
typedef struct QcServerUse
{
	Oid			serverid;		/* InvalidOid: only servers_only's refusal */
	const char *name;
	QcServerScope scope;
	Oid			owner;
	QcServerOptions opts;
	bool		endpoint;		/* named by queryclaw.llm_server and kin */
	List	   *headers;		/* the mapping's, QcHeader *, UTF-8 */
	const char *query;			/* the mapping's parameters, or NULL */
	List	   *secrets;		/* what they send, to hide, in every form a
								 * server may echo it (qc_mapping_secrets) */
	QcVerdict  *refusal;		/* queryclaw.servers_only's, or NULL */

	/*
	 * queryclaw.servers_only as the role has it, and then the servers the
	 * role may use (QcServerScope *), copied: every redirect's target is
	 * checked against them where no catalog can be read (the async worker
	 * has no transaction open while calls are on the wire).
	 */
	bool		servers_only;
	List	   *usable;
	bool		applied;		/* merged into the call (serversadmit.c) */
	bool		in_flight;		/* counted against max_concurrency */
	bool		token_held;		/* its rate_limit token taken or promised */
} QcServerUse;

/* serversopts.c */

/* Parse a server's options; raises 22023 naming a bad one. */
extern void qc_server_options_parse(List *options, QcServerOptions *opts);

/*
 * The mapping's headers option: a JSON object of header names and string
 * values, as a List of QcHeader (values in UTF-8); raises 22023.
 */
extern List *qc_server_headers_parse(const char *json);

/* Check the mapping's query option (name=value&...); raises 22023. */
extern void qc_server_query_check(const char *query);

/*
 * Does the server's tools option (names and prefix* patterns, separated
 * by commas; NULL: every tool) offer the tool of that name?
 */
extern bool qc_server_offers_tool(const char *tools, const char *name);

/* servers.c */

/*
 * The server url is under, with the current role's mapping when it has
 * USAGE on it; NULL when url is under no server (or does not parse).
 * Every value the mapping sends is remembered as a secret (redact.h).
 * With queryclaw.servers_only on, a URL under no server the role may use
 * gets a use with the refusal (and serverid InvalidOid when under none).
 */
extern QcServerUse *qc_server_for_url(const char *url);

/*
 * A DBA's endpoint (the model, the embeddings, the search API) as the
 * settings give it to the current role: the url of the server the
 * *_server setting names, else the *_url setting.
 */
typedef struct QcEndpointBase
{
	const char *url;			/* the base URL; "" when neither is set */
	const char *server;			/* the server named, or NULL */
	const char *setting;		/* the setting that names it */
	bool		trusted;		/* past block_local: see QcCall.trusted */
} QcEndpointBase;

/*
 * The endpoint; under a server, only one the role has USAGE on (else
 * 42501), and trusted only when a superuser owns it.  Raises 42704 when no
 * queryclaw server has the name.
 */
extern QcEndpointBase qc_server_endpoint(const char *server, const char *setting,
										 const char *url);

#define QC_LLM_ENDPOINT() \
	qc_server_endpoint(qc_llm_server, "queryclaw.llm_server", qc_llm_url)
#define QC_EMBED_ENDPOINT() \
	qc_server_endpoint(qc_embed_server, "queryclaw.embed_server", qc_embed_url)
#define QC_SEARCH_ENDPOINT() \
	qc_server_endpoint(qc_search_server, "queryclaw.search_server", qc_search_url)

/*
 * Make call (to base's URL) a call to the endpoint: trusted as base says
 * and, under a server, governed by that server (its mapping, its limits)
 * whichever server its URL is under.  The caller adds no global key to a
 * call under a server: the mapping is its key.
 */
extern void qc_server_endpoint_call(QcCall *call, const QcEndpointBase *base);

/*
 * The MCP server of that name, with the current role's mapping, for a
 * call to its url: 42704 when no queryclaw server has the name, 22023
 * when it has no protocol 'mcp', 42501 when the role has no USAGE on it.
 */
extern QcServerUse *qc_server_mcp(const char *name);

/* An attempt at proto's request is under the server proto is under. */
extern void qc_server_attempt(QcCall *call, const QcCall *proto);

/* Is url (parsed) under the server's url? */
extern bool qc_server_covers(const QcServerUse *use, const QcUrl *url);

/*
 * For the transport, at every redirect: may the call follow it to hop?
 * Not when the hop's URL carries a value of the mapping applied to the
 * call (a header's value or its token, a query value raw or decoded), nor,
 * with queryclaw.servers_only on for the role, when it is under no server
 * the role has USAGE on.  false with *refusal filled (42501).
 */
extern bool qc_server_check_hop(const QcCall *call, const QcUrl *hop, QcVerdict *refusal);

/*
 * For the transport, at every redirect: the headers for the next hop,
 * without the mapping's once the hop leaves the server's url.
 */
extern List *qc_server_hop_headers(const QcCall *call, const QcUrl *hop,
								   List *headers);

/*
 * The object access hook's check of a server of the wrapper just created
 * or altered: no other has the same url, normalized (42710).
 */
extern void qc_server_check_unique(Oid serverid);

#endif							/* QC_SERVERS_H */
