/*-------------------------------------------------------------------------
 *
 * servers.c
 *	  Which queryclaw foreign server a URL is under, and what the calling
 *	  role's user mapping for it sends (servers.h).
 *
 * A URL is under a server when scheme, host and port are the same and its
 * path starts with the server's path at a segment boundary ("/v1" covers
 * "/v1" and "/v1/...", not "/v10").  Hosts are compared as policy.c's URL
 * parse maps them (lower case, IDNA); paths as the server that gets them
 * reads them (urlpath.h): "/v1/%2e%2e/admin" is "/admin", under no "/v1".
 *
 * A server governs only the calls of roles with USAGE on it: of the
 * servers a URL is under, the one with the longest path that the calling
 * role may use (ties: the oldest) sends its mapping and sets its limits.
 * A server another role made, whose url is a longer prefix, changes
 * nothing for a role that cannot use it.
 *
 * The servers of the wrapper, and the mappings of the roles that used
 * them, parsed, are kept per backend and dropped when pg_foreign_server,
 * pg_foreign_data_wrapper or pg_user_mapping changes, so a call under no
 * server costs a walk of that short list.  USAGE is checked for every call,
 * as the role the call is made for (the current user: in the asynchronous
 * worker, the enqueuing role as it builds the request's call): a REVOKE, a
 * dropped mapping or a new key applies to the next call built.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "guc.h"
#include "redact.h"
#include "servers.h"

/*
 * The wrapper's servers, and the roles' mappings read so far, parsed, in
 * cache_context; valid until a change.
 */
static MemoryContext cache_context = NULL;
static List *cached_servers = NIL;	/* of QcServerUse *, no mapping */
static List *cached_mappings = NIL; /* of CachedMapping * */
static bool cache_valid = false;
static uint64 invalidations = 0;

static void
invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	cache_valid = false;
	invalidations++;
}

/*
 * The path of a URL as qc_url_parse() gave it, in each reading
 * (urlpath.h), into paths.
 */
static void
url_paths(const QcUrl *url, char *paths[QC_PATH_READINGS])
{
	size_t		len;
	const char *p = qc_url_path_span(url->url, &len);

	for (int r = 0; r < QC_PATH_READINGS; r++)
	{
		paths[r] = palloc(len + 2);
		qc_url_path_normal(p, len, (QcPathReading) r, paths[r]);
	}
}

/* The scope of a server whose url parsed as base. */
static void
make_scope(const QcUrl *base, QcServerScope *scope)
{
	char	   *paths[QC_PATH_READINGS];

	url_paths(base, paths);
	scope->scheme = base->scheme;
	scope->host = base->host;
	scope->port = base->port;
	for (int r = 0; r < QC_PATH_READINGS; r++)
		scope->path[r] = paths[r];
}

/*
 * Is url under the scope?  paths are url's (url_paths), read on the first
 * call that needs them: {NULL} until then, so that a URL of another host
 * costs no normalization.
 */
static bool
scope_covers(const QcServerScope *scope, const QcUrl *url, char *paths[QC_PATH_READINGS])
{
	if (strcmp(url->scheme, scope->scheme) != 0 ||
		strcmp(url->host, scope->host) != 0 || url->port != scope->port)
		return false;
	if (paths[0] == NULL)
		url_paths(url, paths);
	/* under it however the server reads the path */
	for (int r = 0; r < QC_PATH_READINGS; r++)
		if (!qc_url_path_under(paths[r], scope->path[r]))
			return false;
	return true;
}

static QcServerScope *
copy_scope(const QcServerScope *from)
{
	QcServerScope *scope = palloc(sizeof(QcServerScope));

	scope->scheme = pstrdup(from->scheme);
	scope->host = pstrdup(from->host);
	scope->port = from->port;
	for (int r = 0; r < QC_PATH_READINGS; r++)
		scope->path[r] = pstrdup(from->path[r]);
	return scope;
}

static QcServerUse *
cached_server(HeapTuple tuple)
{
	Form_pg_foreign_server form = (Form_pg_foreign_server) GETSTRUCT(tuple);
	ForeignServer *server = GetForeignServer(form->oid);
	QcServerUse *s = palloc0(sizeof(QcServerUse));
	QcUrl		base;
	char	   *error;

	s->serverid = form->oid;
	s->name = server->servername;
	s->owner = server->owner;
	qc_server_options_parse(server->options, &s->opts);
	if (!qc_url_parse(s->opts.url, &base, &error))
		elog(ERROR, "server \"%s\" has an invalid url", s->name);
	make_scope(&base, &s->scope);
	return s;
}

static void
load_servers(void)
{
	static bool registered = false;
	ForeignDataWrapper *fdw;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	MemoryContext old;
	uint64		seen;

	if (!registered)
	{
		CacheRegisterSyscacheCallback(FOREIGNSERVEROID, invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(FOREIGNDATAWRAPPEROID, invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(USERMAPPINGOID, invalidate, (Datum) 0);
		cache_context = AllocSetContextCreate(CacheMemoryContext, "queryclaw servers",
											  ALLOCSET_SMALL_SIZES);
		registered = true;
	}
	MemoryContextReset(cache_context);
	cached_servers = NIL;
	cached_mappings = NIL;
	seen = invalidations;
	fdw = GetForeignDataWrapperByName(QC_FDW_NAME, true);
	old = MemoryContextSwitchTo(cache_context);
	rel = table_open(ForeignServerRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (fdw != NULL && HeapTupleIsValid(tuple = systable_getnext(scan)))
		if (((Form_pg_foreign_server) GETSTRUCT(tuple))->srvfdw == fdw->fdwid)
			cached_servers = lappend(cached_servers, cached_server(tuple));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	MemoryContextSwitchTo(old);
	/* a change while it was read: read it again next time */
	cache_valid = (seen == invalidations);
}

bool
qc_server_covers(const QcServerUse *use, const QcUrl *url)
{
	char	   *paths[QC_PATH_READINGS] = {NULL};

	return scope_covers(&use->scope, url, paths);
}

/* The role's mapping for the server (its own, else PUBLIC's), or NIL. */
static List *
mapping_options(Oid userid, Oid serverid)
{
	HeapTuple	tuple;
	List	   *options = NIL;

	tuple = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(userid),
							ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tuple))
		tuple = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(InvalidOid),
								ObjectIdGetDatum(serverid));
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tuple,
											Anum_pg_user_mapping_umoptions, &isnull);

		if (!isnull)
			options = untransformRelOptions(datum);
		ReleaseSysCache(tuple);
	}
	return options;
}

/*
 * A role's mapping for a server, parsed (its own, else PUBLIC's), kept in
 * cache_context with the servers and dropped with them: pg_user_mapping
 * changes invalidate the whole cache.
 */
typedef struct CachedMapping
{
	Oid			serverid;
	Oid			userid;
	List	   *headers;		/* QcHeader *, values in UTF-8 */
	char	   *query;			/* or NULL */
	List	   *secrets;		/* what they send, in every form it may be
								 * echoed (redact.h) */
} CachedMapping;

static CachedMapping *
parse_mapping(Oid userid, Oid serverid)
{
	CachedMapping *m = palloc0(sizeof(CachedMapping));
	ListCell   *lc;

	m->serverid = serverid;
	m->userid = userid;
	foreach(lc, mapping_options(userid, serverid))
	{
		DefElem    *def = lfirst(lc);
		char	   *value = defGetString(def);

		if (strcmp(def->defname, "headers") == 0)
			m->headers = qc_server_headers_parse(value);
		else if (strcmp(def->defname, "query") == 0)
		{
			qc_server_query_check(value);
			m->query = value;
		}
	}
	m->secrets = qc_mapping_secrets(m->headers, m->query);
	return m;
}

static const CachedMapping *
mapping_for(Oid userid, Oid serverid)
{
	CachedMapping *m;
	MemoryContext old;
	ListCell   *lc;

	foreach(lc, cached_mappings)
	{
		m = lfirst(lc);
		if (m->userid == userid && m->serverid == serverid)
			return m;
	}
	old = MemoryContextSwitchTo(cache_context);
	m = parse_mapping(userid, serverid);
	cached_mappings = lappend(cached_mappings, m);
	MemoryContextSwitchTo(old);
	return m;
}

/*
 * Put the role's mapping on use, copied (the cache may be dropped while
 * the call lives), and remember what it sends as secrets (redact.h).
 */
static void
read_mapping(QcServerUse *use)
{
	const CachedMapping *m = mapping_for(GetUserId(), use->serverid);
	ListCell   *lc;

	foreach(lc, m->headers)
	{
		const QcHeader *from = lfirst(lc);
		QcHeader   *h = palloc(sizeof(QcHeader));

		h->name = pstrdup(from->name);
		h->value = pstrdup(from->value);
		use->headers = lappend(use->headers, h);
	}
	use->query = m->query ? pstrdup(m->query) : NULL;
	foreach(lc, m->secrets)
	{
		qc_redact_remember(lfirst(lc));
		use->secrets = lappend(use->secrets, pstrdup(lfirst(lc)));
	}
}

/* May the current role use the server? */
static bool
may_use(const QcServerUse *s)
{
	return qc_foreign_server_aclcheck(s->serverid, GetUserId(), ACL_USAGE) == ACLCHECK_OK;
}

/* queryclaw.servers_only's refusal of url, under server (or NULL) */
static QcVerdict *
servers_only_refusal(const char *url, const QcServerUse *server)
{
	QcVerdict  *v = palloc(sizeof(QcVerdict));
	char	   *role = GetUserNameFromId(GetUserId(), false);
	const char *shown = qc_redact_url(url);

	if (server == NULL)
		qc_verdict_refuse(v, ERRCODE_INSUFFICIENT_PRIVILEGE,
						  psprintf("URL %s is under no queryclaw server", shown),
						  pstrdup("queryclaw.servers_only allows only URLs under foreign servers the role has USAGE on."),
						  pstrdup("Create a server for the API (CREATE SERVER ... FOREIGN DATA WRAPPER queryclaw OPTIONS (url '...')) and GRANT USAGE ON FOREIGN SERVER to the role."),
						  0);
	else
		qc_verdict_refuse(v, ERRCODE_INSUFFICIENT_PRIVILEGE,
						  psprintf("permission denied for foreign server %s", server->name),
						  psprintf("queryclaw.servers_only allows only URLs under foreign servers the role has USAGE on, and %s is under server %s.",
								   shown, server->name),
						  psprintf("GRANT USAGE ON FOREIGN SERVER %s TO %s;",
								   quote_identifier(server->name), quote_identifier(role)),
						  0);
	return v;
}

/* The cached server of that name, or NULL. */
static const QcServerUse *
server_named(const char *name)
{
	ListCell   *lc;

	if (!cache_valid)
		load_servers();
	foreach(lc, cached_servers)
	{
		const QcServerUse *s = lfirst(lc);

		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

/*
 * A call's use of a cached server, copied (the cache may be reset while
 * the call lives), with the role's mapping; and what servers_only asks of
 * its redirects.
 */
static QcServerUse *
use_of(const QcServerUse *s)
{
	QcServerUse *use = palloc(sizeof(QcServerUse));

	*use = *s;
	use->name = pstrdup(s->name);
	use->scope = *copy_scope(&s->scope);
	use->opts.url = pstrdup(s->opts.url);
	use->opts.rate_text = s->opts.rate_text ? pstrdup(s->opts.rate_text) : NULL;
	use->opts.tools = s->opts.tools ? pstrdup(s->opts.tools) : NULL;
	read_mapping(use);
	return use;
}

/*
 * With queryclaw.servers_only on for the role: the servers it may use,
 * for the checks of the call's redirects (which may be made where no
 * catalog can be read).
 */
static void
note_servers_only(QcServerUse *use)
{
	ListCell   *lc;

	if (!qc_servers_only)
		return;
	use->servers_only = true;
	foreach(lc, cached_servers)
	{
		const QcServerUse *s = lfirst(lc);

		if (may_use(s))
			use->usable = lappend(use->usable, copy_scope(&s->scope));
	}
}

/*
 * The server a *_server setting names, when the role may use it: else
 * 42704 (no such queryclaw server) or 42501 (no USAGE).
 */
static const QcServerUse *
endpoint_server(const char *server, const char *setting)
{
	const QcServerUse *s = server_named(server);

	if (s == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("server \"%s\" named by %s is not a queryclaw server", server, setting),
				 errhint("Create it with CREATE SERVER %s FOREIGN DATA WRAPPER queryclaw OPTIONS (url '...'), or reset %s.",
						 quote_identifier(server), setting)));
	if (!may_use(s))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for foreign server %s", s->name),
				 errdetail("%s names server %s, and the role has no USAGE on it.", setting, s->name),
				 errhint("GRANT USAGE ON FOREIGN SERVER %s TO %s; or set %s to a server the role may use.",
						 quote_identifier(s->name),
						 quote_identifier(GetUserNameFromId(GetUserId(), false)), setting)));
	return s;
}

QcEndpointBase
qc_server_endpoint(const char *server, const char *setting, const char *url)
{
	QcEndpointBase base = {url, NULL, setting, true};
	const QcServerUse *s;

	if (server == NULL || server[0] == '\0')
		return base;
	s = endpoint_server(server, setting);
	base.url = pstrdup(s->opts.url);
	base.server = pstrdup(s->name);
	/* the DBA's server is the DBA's endpoint; another role's is any URL */
	base.trusted = superuser_arg(s->owner);
	return base;
}

void
qc_server_endpoint_call(QcCall *call, const QcEndpointBase *base)
{
	call->trusted = base->trusted;
	if (base->server == NULL)
		return;
	call->server = use_of(endpoint_server(base->server, base->setting));
	call->server->endpoint = true;
	note_servers_only(call->server);
}

QcServerUse *
qc_server_mcp(const char *name)
{
	const QcServerUse *s = server_named(name);
	QcServerUse *use;

	if (s == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("server \"%s\" is not a queryclaw server", name),
				 errhint("Create it with CREATE SERVER %s FOREIGN DATA WRAPPER queryclaw OPTIONS (url '...', protocol 'mcp').",
						 quote_identifier(name))));
	if (!s->opts.mcp)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("server \"%s\" is not an MCP server", name),
				 errdetail("Its protocol is 'http': it is an API for api_call."),
				 errhint("ALTER SERVER %s OPTIONS (ADD protocol 'mcp'), if its url is an MCP endpoint.",
						 quote_identifier(name))));
	if (!may_use(s))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for foreign server %s", s->name),
				 errdetail("An MCP server's tools are for the roles with USAGE on it."),
				 errhint("GRANT USAGE ON FOREIGN SERVER %s TO %s;",
						 quote_identifier(s->name),
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
	use = use_of(s);
	note_servers_only(use);
	return use;
}

void
qc_server_attempt(QcCall *call, const QcCall *proto)
{
	QcServerUse *use;

	if (proto->server == NULL || !proto->server->endpoint)
		return;
	/* the same server and mapping, none of the first attempt's state */
	use = palloc(sizeof(QcServerUse));
	*use = *proto->server;
	use->applied = false;
	use->in_flight = false;
	use->token_held = false;
	call->server = use;
}

/* The longer path first; of two the same, the older server. */
static int
longest_first(const ListCell *a, const ListCell *b)
{
	const QcServerUse *sa = lfirst(a);
	const QcServerUse *sb = lfirst(b);
	size_t		la = strlen(sa->scope.path[QC_PATH_RFC]);
	size_t		lb = strlen(sb->scope.path[QC_PATH_RFC]);

	if (la != lb)
		return la > lb ? -1 : 1;
	return sa->serverid < sb->serverid ? -1 : sa->serverid > sb->serverid ? 1 : 0;
}

QcServerUse *
qc_server_for_url(const char *url)
{
	QcUrl		parsed;
	char	   *error;
	char	   *paths[QC_PATH_READINGS] = {NULL};
	List	   *covering = NIL;
	const QcServerUse *best = NULL;
	const QcServerUse *unusable = NULL;
	QcServerUse *use;
	ListCell   *lc;

	if (url == NULL || !IsTransactionState())
		return NULL;
	if (!cache_valid)
		load_servers();
	if ((cached_servers == NIL && !qc_servers_only) || !qc_url_parse(url, &parsed, &error))
		return NULL;
	foreach(lc, cached_servers)
	{
		if (scope_covers(&((QcServerUse *) lfirst(lc))->scope, &parsed, paths))
			covering = lappend(covering, lfirst(lc));
	}
	/* the longest the role may use: another role's server changes nothing */
	list_sort(covering, longest_first);
	foreach(lc, covering)
	{
		if (may_use(lfirst(lc)))
		{
			best = lfirst(lc);
			break;
		}
		if (unusable == NULL)
			unusable = lfirst(lc);
	}
	list_free(covering);
	if (best == NULL && !qc_servers_only)
		return NULL;
	use = best ? use_of(best) : palloc0(sizeof(QcServerUse));
	note_servers_only(use);
	if (best == NULL)
		use->refusal = servers_only_refusal(url, unusable);
	return use;
}

List *
qc_server_hop_headers(const QcCall *call, const QcUrl *hop, List *headers)
{
	const QcServerUse *use = call->server;
	List	   *kept = NIL;
	ListCell   *lc;

	if (use == NULL || use->headers == NIL || qc_server_covers(use, hop))
		return headers;
	foreach(lc, headers)
	{
		if (!list_member_ptr(use->headers, lfirst(lc)))
			kept = lappend(kept, lfirst(lc));
	}
	return kept;
}

/*
 * Does url carry a value the mapping sends, in any form a server may echo
 * it (use->secrets: qc_mapping_secrets, the token after "Bearer", a query
 * value raw, decoded or encoded again...)?  url is searched as written and
 * decoded (with '+' as a space, as a query string is, and without).
 */
static bool
carries_mapping_value(const QcServerUse *use, const char *url)
{
	size_t		len = strlen(url);
	char	   *texts[3] = {(char *) url, palloc(len + 1), palloc(len + 1)};
	ListCell   *lc;

	qc_url_percent_decode(url, len, false, texts[1]);
	qc_url_percent_decode(url, len, true, texts[2]);
	foreach(lc, use->secrets)
	{
		for (int i = 0; i < lengthof(texts); i++)
			if (strstr(texts[i], lfirst(lc)) != NULL)
				return true;
	}
	return false;
}

/* Is hop under one of the servers? */
static bool
under_any(List *scopes, const QcUrl *hop)
{
	char	   *paths[QC_PATH_READINGS] = {NULL};
	ListCell   *lc;

	foreach(lc, scopes)
	{
		if (scope_covers(lfirst(lc), hop, paths))
			return true;
	}
	return false;
}

bool
qc_server_check_hop(const QcCall *call, const QcUrl *hop, QcVerdict *refusal)
{
	const QcServerUse *use = call->server;

	if (use == NULL)
		return true;
	/* the target is not shown: it holds the key */
	if (use->applied && carries_mapping_value(use, hop->url))
		return qc_verdict_refuse(refusal, ERRCODE_INSUFFICIENT_PRIVILEGE,
								 psprintf("redirect not followed: its target carries a value of the user mapping for server %s",
										  use->name),
								 pstrdup("The redirect's Location holds a value the user mapping sends (a header's or a query parameter's), which would reach the next URL and its logs."),
								 pstrdup("Call the URL the API redirects to directly, or ask its owner not to put request parameters in redirects."),
								 0);
	if (use->servers_only && !under_any(use->usable, hop))
		return qc_verdict_refuse(refusal, ERRCODE_INSUFFICIENT_PRIVILEGE,
								 psprintf("redirect to %s not followed: it is under no queryclaw server the role may use",
										  qc_redact_url(hop->url)),
								 pstrdup("queryclaw.servers_only allows only URLs under foreign servers the role has USAGE on, on every hop of a call."),
								 pstrdup("Call the URL it redirects to under a server the role has USAGE on (GRANT USAGE ON FOREIGN SERVER ...), or have the DBA create one for it."),
								 0);
	return true;
}

/*
 * The url of a server's row as servers are matched by it: scheme, host,
 * port and path in the RFC reading, or NULL when it has none that parses.
 */
static char *
url_key(HeapTuple tuple, TupleDesc desc)
{
	bool		isnull;
	Datum		datum = heap_getattr(tuple, Anum_pg_foreign_server_srvoptions, desc, &isnull);
	ListCell   *lc;

	if (isnull)
		return NULL;
	foreach(lc, untransformRelOptions(datum))
	{
		DefElem    *def = lfirst(lc);
		QcUrl		url;
		char	   *error;
		QcServerScope scope;

		if (strcmp(def->defname, "url") != 0 || !qc_url_parse(defGetString(def), &url, &error))
			continue;
		make_scope(&url, &scope);
		return psprintf("%s://%s:%d%s", scope.scheme, scope.host, scope.port,
						scope.path[QC_PATH_RFC]);
	}
	return NULL;
}

void
qc_server_check_unique(Oid serverid)
{
	ForeignDataWrapper *fdw = GetForeignDataWrapperByName(QC_FDW_NAME, true);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *mine = NULL;
	List	   *names = NIL;	/* the other servers' */
	List	   *keys = NIL;
	ListCell   *name;
	ListCell   *key;

	if (fdw == NULL)
		return;
	rel = table_open(ForeignServerRelationId, AccessShareLock);
	/* SnapshotSelf: the row the statement under way wrote, too */
	scan = systable_beginscan(rel, InvalidOid, false, SnapshotSelf, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_foreign_server form = (Form_pg_foreign_server) GETSTRUCT(tuple);
		char	   *k;

		if (form->srvfdw != fdw->fdwid || (k = url_key(tuple, RelationGetDescr(rel))) == NULL)
			continue;
		if (form->oid == serverid)
			mine = k;
		else
		{
			names = lappend(names, pstrdup(NameStr(form->srvname)));
			keys = lappend(keys, k);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	forboth(name, names, key, keys)
	{
		if (mine != NULL && strcmp(mine, lfirst(key)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("queryclaw server \"%s\" already has this url", (char *) lfirst(name)),
					 errdetail("Two servers with the same url would both claim the same calls."),
					 errhint("Use server \"%s\", or give this one another url.",
							 (char *) lfirst(name))));
	}
}
