/*-------------------------------------------------------------------------
 *
 * servers.c
 *	  Which queryclaw foreign server a URL is under, and what the calling
 *	  role's user mapping for it sends (servers.h).
 *
 * A URL is under a server when scheme, host and port are the same and its
 * path starts with the server's path at a segment boundary ("/v1" covers
 * "/v1" and "/v1/...", not "/v10"); the longest such path wins.  Hosts are
 * compared as policy.c's URL parse maps them (lower case, IDNA), paths as
 * written.
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
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
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
static List *cached_servers = NIL;	/* of QcServerUse *, usage false */
static List *cached_mappings = NIL; /* of CachedMapping * */
static bool cache_valid = false;
static uint64 invalidations = 0;

static void
invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	cache_valid = false;
	invalidations++;
}

/* The path of a URL as qc_url_parse() gave it, without a trailing '/'. */
static char *
base_path(const QcUrl *url)
{
	const char *p = strstr(url->url, "://");
	size_t		len;

	p = p ? p + 3 : url->url;
	p += strcspn(p, "/?#");
	len = strcspn(p, "?#");
	while (len > 0 && p[len - 1] == '/')
		len--;
	return pnstrdup(p, len);
}

static QcServerUse *
cached_server(HeapTuple tuple)
{
	Form_pg_foreign_server form = (Form_pg_foreign_server) GETSTRUCT(tuple);
	ForeignServer *server = GetForeignServer(form->oid);
	QcServerUse *s = palloc0(sizeof(QcServerUse));
	char	   *error;

	s->serverid = form->oid;
	s->name = server->servername;
	qc_server_options_parse(server->options, &s->opts);
	if (!qc_url_parse(s->opts.url, &s->base, &error))
		elog(ERROR, "server \"%s\" has an invalid url", s->name);
	s->base_path = base_path(&s->base);
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
	const char *path = strstr(url->url, "://");
	size_t		len = strlen(use->base_path);

	if (strcmp(url->scheme, use->base.scheme) != 0 ||
		strcmp(url->host, use->base.host) != 0 || url->port != use->base.port)
		return false;
	path = path ? path + 3 : url->url;
	path += strcspn(path, "/?#");
	return strncmp(path, use->base_path, len) == 0 &&
		strchr("/?#", path[len]) != NULL;	/* the NUL too */
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
	List	   *secrets;		/* the values they send */
} CachedMapping;

/* A value the mapping sends is a secret, unless too short to search for. */
static void
keep_secret(CachedMapping *m, const char *value)
{
	if (strlen(value) >= QC_SECRET_MIN_LENGTH)
		m->secrets = lappend(m->secrets, pstrdup(value));
}

/* Keep every value the query parameters hold (the whole, if no names). */
static void
keep_query_secrets(CachedMapping *m, const char *query)
{
	if (strchr(query, '=') == NULL)
		keep_secret(m, query);
	for (const char *p = query; *p != '\0';)
	{
		size_t		len = strcspn(p, "&;");
		const char *eq = memchr(p, '=', len);

		if (eq != NULL)
			keep_secret(m, pnstrdup(eq + 1, len - (eq + 1 - p)));
		p += len;
		if (*p != '\0')
			p++;
	}
}

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
		{
			ListCell   *h;

			m->headers = qc_server_headers_parse(value);
			foreach(h, m->headers)
				keep_secret(m, ((QcHeader *) lfirst(h))->value);
		}
		else if (strcmp(def->defname, "query") == 0)
		{
			qc_server_query_check(value);
			m->query = value;
			keep_query_secrets(m, value);
		}
	}
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

const char *
qc_server_endpoint_url(const char *server, const char *setting, const char *url)
{
	ListCell   *lc;

	if (server == NULL || server[0] == '\0')
		return url;
	if (!cache_valid)
		load_servers();
	foreach(lc, cached_servers)
	{
		const QcServerUse *s = lfirst(lc);

		if (strcmp(s->name, server) == 0)
			return pstrdup(s->opts.url);
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("server \"%s\" named by %s is not a queryclaw server", server, setting),
			 errhint("Create it with CREATE SERVER %s FOREIGN DATA WRAPPER queryclaw OPTIONS (url '...'), or reset %s.",
					 quote_identifier(server), setting)));
	return NULL;				/* keep the compiler quiet */
}

QcServerUse *
qc_server_for_url(const char *url)
{
	QcUrl		parsed;
	char	   *error;
	const QcServerUse *best = NULL;
	QcServerUse *use;
	ListCell   *lc;

	if (url == NULL || !IsTransactionState())
		return NULL;
	if (!cache_valid)
		load_servers();
	if (cached_servers == NIL || !qc_url_parse(url, &parsed, &error))
		return NULL;
	foreach(lc, cached_servers)
	{
		const QcServerUse *s = lfirst(lc);

		if (qc_server_covers(s, &parsed) &&
			(best == NULL || strlen(s->base_path) > strlen(best->base_path)))
			best = s;
	}
	if (best == NULL)
	{
		if (!qc_servers_only)
			return NULL;
		use = palloc0(sizeof(QcServerUse));
		use->refusal = servers_only_refusal(url, NULL);
		return use;
	}
	/* a copy: the cache may be reset while the call lives */
	use = palloc(sizeof(QcServerUse));
	*use = *best;
	use->name = pstrdup(best->name);
	use->base_path = pstrdup(best->base_path);
	use->base.url = pstrdup(best->base.url);
	use->base.scheme = pstrdup(best->base.scheme);
	use->base.host = pstrdup(best->base.host);
	use->opts.url = pstrdup(best->opts.url);
	use->opts.rate_text = best->opts.rate_text ? pstrdup(best->opts.rate_text) : NULL;
	use->usage = qc_foreign_server_aclcheck(use->serverid, GetUserId(),
											ACL_USAGE) == ACLCHECK_OK;
	if (use->usage)
		read_mapping(use);
	else if (qc_servers_only)
		use->refusal = servers_only_refusal(url, use);
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
