/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The queryclaw.* settings: the policy a DBA sets for every call.
 *
 * Every policy setting is PGC_SUSET: only a superuser (postgresql.conf,
 * ALTER SYSTEM, ALTER ROLE/DATABASE ... SET, or SET in a superuser session)
 * can change it, so an ordinary role cannot loosen its own policy.  The host
 * and address lists and the proxy are also GUC_SUPERUSER_ONLY: they describe
 * the network and may hold credentials, so other roles cannot read them.
 *
 * The secrets (the API keys, a proxy URL with credentials) are refused
 * for a role, a database or a function, where every role could read them
 * (see kept_readable); a check hook only runs where the library is loaded,
 * hence in every session only with shared_preload_libraries.
 *
 * The lists are parsed by their check hooks, and the parsed form is kept as
 * the setting's "extra" data: a typo is rejected when it is set, never
 * discovered at request time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>

#include "common/int.h"
#include "miscadmin.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "guc.h"
#include "redact.h"

bool		qc_enabled = false;
int			qc_timeout = 10000;
int			qc_max_chars = 50000;
int			qc_max_bytes = 1024;
bool		qc_block_local = true;
char	   *qc_local_allowlist = NULL;
char	   *qc_allowed_hosts = NULL;
char	   *qc_denied_hosts = NULL;
int			qc_max_redirects = 5;
bool		qc_read_only = false;
bool		qc_servers_only = false;
char	   *qc_user_agent = NULL;
char	   *qc_proxy = NULL;
char	   *qc_ca_file = NULL;
bool		qc_audit = true;
bool		qc_audit_query = true;
int			qc_max_concurrency = 16;
int			qc_max_host_concurrency = 8;
int			qc_on_error = QC_ON_ERROR_RAISE;

/* ---- the LLM tool loop and web search (llm.c, tools.c, search.c) ---- */
char	   *qc_llm_url = NULL;
char	   *qc_llm_server = NULL;
char	   *qc_llm_model = NULL;
char	   *qc_llm_api_key = NULL;
int			qc_llm_timeout = 120000;
int			qc_llm_max_rounds = 10;
int			qc_llm_max_tool_calls = 16;
int			qc_llm_max_tokens = 0;
int			qc_llm_tool_max_chars = 20000;
char	   *qc_search_url = NULL;
char	   *qc_search_server = NULL;
char	   *qc_search_api_key = NULL;
/* ---- end of the LLM and search settings ---- */

/* ---- retries and providers (retry.c, endpoint.c, chat.c) ---- */
int			qc_retry_max = 3;
int			qc_retry_base_delay = 1000;
int			qc_retry_max_delay = 300000;
int			qc_llm_token_param = QC_TOKEN_PARAM_MAX_TOKENS;
char	   *qc_llm_api_key_header = NULL;
/* ---- end of the retry and provider settings ---- */

/* ---- the durable audit and rate limits ---- */
int			qc_max_calls_per_hour = 0;
char	   *qc_database = NULL;
int			qc_audit_queue_size = 8192;
char	   *qc_audit_retention = NULL;
int64		qc_audit_retention_us = 0;
/* ---- end of the durable audit and rate limit settings ---- */

/* ---- the asynchronous queue (queue.c, enqueue.c, the async workers) ---- */
int			qc_async_workers = 0;
int			qc_async_concurrency = 64;
char	   *qc_async_retention = NULL;
int			qc_callback_timeout = 10000;
int64		qc_async_retention_us = 0;
int			qc_max_queued_per_role = 0;
/* ---- end of the asynchronous queue settings ---- */

/* ---- on a Citus cluster (cluster.c) ---- */
int			qc_cluster_nodes = 0;
/* ---- end of the settings on a Citus cluster ---- */

static const QcAddrList empty_addr_list = {0};
static const QcHostList empty_host_list = {0};

const QcAddrList *qc_local_allowlist_parsed = &empty_addr_list;
const QcHostList *qc_allowed_hosts_parsed = &empty_host_list;
const QcHostList *qc_denied_hosts_parsed = &empty_host_list;

#define LIST_FLAGS (GUC_SUPERUSER_ONLY | GUC_LIST_INPUT)

static const struct config_enum_entry on_error_options[] = {
	{"raise", QC_ON_ERROR_RAISE, false},
	{"return", QC_ON_ERROR_RETURN, false},
	{NULL, 0, false}
};

/* Parse a list setting into its extra data, or explain why it is wrong. */
static bool
check_list(char **newval, void **extra,
		   void *(*parse) (const char *text, char *err, size_t errlen))
{
	char		err[512];
	void	   *list = parse(*newval, err, sizeof(err));

	if (list == NULL)
	{
		GUC_check_errdetail("%s", err);
		return false;
	}
	*extra = list;
	return true;
}

static void *
parse_addr_list(const char *text, char *err, size_t errlen)
{
	QcAddrList *list = qc_addr_list_parse(text, err, errlen);

	return list == NULL ? NULL :
		qc_guc_extra(list, offsetof(QcAddrList, rules) + list->count * sizeof(QcAddrRule),
					 err, errlen);
}

static void *
parse_host_list(const char *text, char *err, size_t errlen)
{
	QcHostList *list = qc_host_list_parse(text, err, errlen);

	return list == NULL ? NULL :
		qc_guc_extra(list, offsetof(QcHostList, rules) + list->count * sizeof(QcHostRule),
					 err, errlen);
}

static bool
check_addr_list(char **newval, void **extra, GucSource source)
{
	return check_list(newval, extra, parse_addr_list);
}

static bool
check_host_list(char **newval, void **extra, GucSource source)
{
	return check_list(newval, extra, parse_host_list);
}

static void
assign_local_allowlist(const char *newval, void *extra)
{
	qc_local_allowlist_parsed = extra ? extra : &empty_addr_list;
}

static void
assign_allowed_hosts(const char *newval, void *extra)
{
	qc_allowed_hosts_parsed = extra ? extra : &empty_host_list;
}

static void
assign_denied_hosts(const char *newval, void *extra)
{
	qc_denied_hosts_parsed = extra ? extra : &empty_host_list;
}

/*
 * The proxy and the LLM and search endpoints are URLs the DBA trusts: only
 * http:// and https:// ones are accepted.
 */
static bool
check_http_url(char **newval, void **extra, GucSource source)
{
	if (**newval == '\0' ||
		strncmp(*newval, "http://", 7) == 0 || strncmp(*newval, "https://", 8) == 0)
		return true;
	GUC_check_errdetail("The value must be an http:// or https:// URL, or empty.");
	return false;
}

/*
 * Is the value being set one that is kept where every role can read it?
 * Values set for a role or a database (ALTER ROLE/DATABASE ... SET) are
 * kept in pg_db_role_setting, and those set for a function (CREATE
 * FUNCTION ... SET) in pg_proc; GUC_SUPERUSER_ONLY only hides SHOW.  Such
 * a value is checked with source PGC_S_TEST before it is stored, and
 * applied with the source of its role or database when a session starts
 * (one stored while the library was not loaded, see the README).
 */
static bool
kept_readable(GucSource source)
{
	return source == PGC_S_TEST ||
		(source >= PGC_S_GLOBAL && source <= PGC_S_DATABASE_USER);
}

/*
 * A secret is set in postgresql.conf or with ALTER SYSTEM (files only the
 * server's OS user reads), never where every role can read it.  An empty
 * value holds none (it may be set to send no key from one database).  The
 * message does not quote the value, as the default one would.
 */
static bool
check_secret_source(const char *name, const char *value, GucSource source)
{
	if (!kept_readable(source) || *value == '\0')
		return true;
	GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
	GUC_check_errmsg("%s cannot be set for a role, a database or a function", name);
	GUC_check_errdetail("Such values are kept in pg_db_role_setting or pg_proc, which every role can read.");
	GUC_check_errhint("Set it in postgresql.conf or with ALTER SYSTEM.");
	return false;
}

/*
 * The proxy is no secret, and may differ per role, unless its URL holds a
 * user name or password (user:password@ before the host).
 */
static bool
check_proxy(char **newval, void **extra, GucSource source)
{
	const char *authority = strstr(*newval, "://");
	size_t		len;

	if (!check_http_url(newval, extra, source))
		return false;
	if (authority == NULL)
		return true;
	authority += 3;
	len = strcspn(authority, "/?#");
	if (memchr(authority, '@', len) == NULL)
		return true;
	return check_secret_source("queryclaw.proxy with credentials", *newval, source);
}

/* ---- the LLM tool loop and web search (llm.c, tools.c, search.c) ---- */

/*
 * An endpoint's URL may hold credentials (userinfo, a key in the query or
 * the path): one that the redaction of URLs would change is a secret.
 */
static bool
check_endpoint_url(const char *name, char **newval, void **extra, GucSource source)
{
	if (!check_http_url(newval, extra, source))
		return false;
	if (strcmp(qc_redact_url(*newval), *newval) == 0)
		return true;
	return check_secret_source(name, *newval, source);
}

static bool
check_llm_url(char **newval, void **extra, GucSource source)
{
	return check_endpoint_url("queryclaw.llm_url with credentials", newval, extra, source);
}

static bool
check_search_url(char **newval, void **extra, GucSource source)
{
	return check_endpoint_url("queryclaw.search_url with credentials", newval, extra, source);
}

static bool
check_embed_url(char **newval, void **extra, GucSource source)
{
	return check_endpoint_url("queryclaw.embed_url with credentials", newval, extra, source);
}

/* The API keys: superuser-only, and left out of SHOW ALL and pg_settings. */
#define SECRET_FLAGS (GUC_SUPERUSER_ONLY | GUC_NO_SHOW_ALL)

static bool
check_llm_api_key(char **newval, void **extra, GucSource source)
{
	return check_secret_source("queryclaw.llm_api_key", *newval, source);
}

static bool
check_search_api_key(char **newval, void **extra, GucSource source)
{
	return check_secret_source("queryclaw.search_api_key", *newval, source);
}

static void
define_llm_settings(void)
{
	DefineCustomStringVariable("queryclaw.llm_url",
							   "Sets the base URL of the OpenAI-compatible LLM endpoint.",
							   "Requests go to this URL followed by /chat/completions.  The endpoint is trusted: queryclaw.block_local and the host lists do not apply to it.",
							   &qc_llm_url, "", PGC_SUSET, GUC_SUPERUSER_ONLY,
							   check_llm_url, NULL, NULL);
	DefineCustomStringVariable("queryclaw.llm_server",
							   "Names the foreign server of the LLM endpoint; its url replaces queryclaw.llm_url.",
							   "A server of the queryclaw foreign-data wrapper: the role's user mapping for it supplies the key.",
							   &qc_llm_server, "", PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.llm_model",
							   "Sets the model used when a call names none.",
							   NULL,
							   &qc_llm_model, "", PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.llm_api_key",
							   "Sets the API key sent to the LLM endpoint as a bearer token.",
							   "Empty means no Authorization header.",
							   &qc_llm_api_key, "", PGC_SUSET, SECRET_FLAGS,
							   check_llm_api_key, NULL, NULL);
	DefineCustomIntVariable("queryclaw.llm_timeout",
							"Sets the time limit for one request to the LLM endpoint.",
							NULL,
							&qc_llm_timeout, 120000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.llm_max_rounds",
							"Sets the maximum number of model requests in one llm_chat_tools call.",
							"A call's max_rounds argument can only lower it.",
							&qc_llm_max_rounds, 10, 1, 1000, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.llm_max_tool_calls",
							"Sets the maximum number of tool calls run from one model reply.",
							"The calls beyond it are not run; the model is told so in their results.",
							&qc_llm_max_tool_calls, 16, 1, 1000, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.llm_max_tokens",
							"Sets max_tokens for each model request; 0 leaves it to the provider.",
							NULL,
							&qc_llm_max_tokens, 0, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.llm_tool_max_chars",
							"Sets the maximum number of characters of one tool result, or one page to extract from, sent to the model.",
							"Longer results are cut, with a note saying so.",
							&qc_llm_tool_max_chars, 20000, 100, 100000000, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.search_url",
							   "Sets the URL of the SearXNG-compatible search API used by web_search.",
							   "Requests are GET {search_url}?q=...&format=json.  The endpoint is trusted, like queryclaw.llm_url.",
							   &qc_search_url, "", PGC_SUSET, GUC_SUPERUSER_ONLY,
							   check_search_url, NULL, NULL);
	DefineCustomStringVariable("queryclaw.search_server",
							   "Names the foreign server of the search API; its url replaces queryclaw.search_url.",
							   "A server of the queryclaw foreign-data wrapper: the role's user mapping for it supplies the key.",
							   &qc_search_server, "", PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.search_api_key",
							   "Sets the API key sent to the search API as a bearer token.",
							   "Empty means no Authorization header.",
							   &qc_search_api_key, "", PGC_SUSET, SECRET_FLAGS,
							   check_search_api_key, NULL, NULL);
}

/* ---- end of the LLM and search settings ---- */

/* ---- retries and providers (retry.c, endpoint.c, chat.c) ---- */

static const struct config_enum_entry token_param_options[] = {
	{"max_tokens", QC_TOKEN_PARAM_MAX_TOKENS, false},
	{"max_completion_tokens", QC_TOKEN_PARAM_MAX_COMPLETION_TOKENS, false},
	{NULL, 0, false}
};

/*
 * The header the LLM key goes in: a header name the audit log recognises
 * as secret (qc_name_is_secret), so that its value is never stored.
 */
static bool
check_key_header(char **newval, void **extra, GucSource source)
{
	for (const char *c = *newval; *c; c++)
		if (!(isalnum((unsigned char) *c) || strchr("!#$%&'*+-.^_`|~", *c)))
		{
			GUC_check_errdetail("A header name consists of letters, digits and !#$%%&'*+-.^_`|~ only.");
			return false;
		}
	if (**newval == '\0' || !qc_name_is_secret(*newval, true))
	{
		GUC_check_errdetail("The audit log must recognise the header as holding a secret: its name must contain \"auth\", \"key\" or \"token\".");
		return false;
	}
	return true;
}

static void
define_retry_settings(void)
{
	DefineCustomIntVariable("queryclaw.retry_max",
							"Sets how many times a failed request to the LLM, embedding or search endpoint is tried again.",
							"Connection failures, timeouts, 408, 425, 429, 500, 502, 503 and 504 (and 409 from the LLM endpoint) are retried.",
							&qc_retry_max, 3, 0, 100, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.retry_base_delay",
							"Sets the wait before the first retry; each further retry waits twice as long, with jitter.",
							NULL,
							&qc_retry_base_delay, 1000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.retry_max_delay",
							"Sets the longest wait between two attempts, Retry-After included.",
							"A longer Retry-After ends the retries at once.",
							&qc_retry_max_delay, 300000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("queryclaw.llm_token_param",
							 "Sets the request member that carries queryclaw.llm_max_tokens.",
							 "max_tokens (most servers) or max_completion_tokens (OpenAI's newer models).",
							 &qc_llm_token_param, QC_TOKEN_PARAM_MAX_TOKENS, token_param_options,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.llm_api_key_header",
							   "Sets the request header that carries queryclaw.llm_api_key.",
							   "Authorization sends \"Bearer <key>\"; any other header (such as api-key for Azure OpenAI) sends the key as it is.",
							   &qc_llm_api_key_header, "Authorization", PGC_SUSET, 0,
							   check_key_header, NULL, NULL);
}

/* ---- end of the retry and provider settings ---- */

/* ---- the durable audit and rate limits (audit.c, auditq.c, worker.c, ratelimit.c) ---- */

/*
 * An interval in PostgreSQL's syntax ('30 days', '12 hours', 'P1W'), as
 * microseconds (a month counts 30 days); empty or zero means forever.
 * Parsed without raising errors, as interval_in would.
 */
static bool
parse_retention(const char *text, int64 *usecs)
{
	char		workbuf[256];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	struct pg_itm_in itm;
	Interval	span;
	char	   *copy;
	bool		ok;
	int64		days;

	while (isspace((unsigned char) *text))
		text++;
	if (*text == '\0')
	{
		*usecs = 0;
		return true;
	}
	copy = pstrdup(text);
	ok = (ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &nf) == 0 &&
		  DecodeInterval(field, ftype, nf, INTERVAL_FULL_RANGE, &dtype, &itm) == 0) ||
		DecodeISO8601Interval(copy, &dtype, &itm) == 0;
	pfree(copy);
	if (!ok || dtype != DTK_DELTA || itmin2interval(&itm, &span) != 0)
		return false;
	days = (int64) span.month * DAYS_PER_MONTH + span.day;
	return !pg_mul_s64_overflow(days, USECS_PER_DAY, usecs) &&
		!pg_add_s64_overflow(*usecs, span.time, usecs) && *usecs >= 0;
}

static bool
check_retention(char **newval, void **extra, GucSource source)
{
	int64		usecs;
	int64	   *parsed;

	if (!parse_retention(*newval, &usecs))
	{
		GUC_check_errdetail("Use a positive interval such as '30 days' or '12 hours', or 0 to keep rows forever.");
		return false;
	}
	parsed = qc_guc_malloc(sizeof(int64));
	if (parsed == NULL)
		return false;
	*parsed = usecs;
	*extra = parsed;
	return true;
}

static void
assign_retention(const char *newval, void *extra)
{
	qc_audit_retention_us = extra ? *(int64 *) extra : 0;
}

/*
 * The durable audit and the rate limits.  What sizes shared memory or
 * names the worker's database is PGC_POSTMASTER, which PostgreSQL only
 * allows while preloading: without preload those settings do not exist.
 */
static void
define_audit_settings(void)
{
	DefineCustomIntVariable("queryclaw.max_calls_per_hour",
							"Sets the maximum number of calls a role may make in any hour; 0 means no limit.",
							"Counted per role in shared memory, in a sliding one-hour window; needs shared_preload_libraries.",
							&qc_max_calls_per_hour, 0, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.audit_retention",
							   "Sets how long audit rows are kept; 0 keeps them forever.",
							   "The audit worker deletes older rows in batches, at most once a minute.",
							   &qc_audit_retention, "0", PGC_SIGHUP, 0,
							   check_retention, assign_retention, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomStringVariable("queryclaw.database",
							   "Sets the database the audit worker writes audit rows into.",
							   "Calls from other databases are audited in the caller's transaction.",
							   &qc_database, "postgres", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.audit_queue_size",
							"Sets the size of the shared-memory queue of audit records.",
							"Calls wait for room while it is full.",
							&qc_audit_queue_size, 8192, 256, 1024 * 1024, PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* ---- end of the durable audit and rate limit settings ---- */

/* ---- the asynchronous worker's host rates (hostrate.c) ---- */
char	   *qc_host_rate_limit = NULL;
static const QcRateList empty_rate_list = {0};
const QcRateList *qc_host_rate_limit_parsed = &empty_rate_list;

static void *
parse_rate_list(const char *text, char *err, size_t errlen)
{
	QcRateList *list = qc_rate_list_parse(text, err, errlen);

	return list == NULL ? NULL :
		qc_guc_extra(list, offsetof(QcRateList, rules) + list->count * sizeof(QcRateRule),
					 err, errlen);
}

static bool
check_host_rate_limit(char **newval, void **extra, GucSource source)
{
	return check_list(newval, extra, parse_rate_list);
}

static void
assign_host_rate_limit(const char *newval, void *extra)
{
	qc_host_rate_limit_parsed = extra ? extra : &empty_rate_list;
}

/* ---- end of the asynchronous worker's host rates ---- */

/* ---- the database tools, embeddings and token budgets (sqltool.c, embed.c, budget.c) ---- */
int			qc_sql_timeout = 5000;
int			qc_sql_max_rows = 100;
char	   *qc_embed_url = NULL;
char	   *qc_embed_server = NULL;
char	   *qc_embed_model = NULL;
char	   *qc_embed_api_key = NULL;
int			qc_embed_batch_size = 64;
int			qc_max_tokens_per_day = 0;

static bool
check_embed_api_key(char **newval, void **extra, GucSource source)
{
	return check_secret_source("queryclaw.embed_api_key", *newval, source);
}

static void
define_agent_settings(void)
{
	DefineCustomIntVariable("queryclaw.sql_timeout",
							"Sets the time limit for one statement of sql_query and the database tools.",
							"The caller's statement_timeout still bounds the whole statement.",
							&qc_sql_timeout, 5000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.sql_max_rows",
							"Sets the maximum number of rows sql_query returns.",
							"The rest are left out, with a note saying so.",
							&qc_sql_max_rows, 100, 1, 1000000, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.embed_url",
							   "Sets the base URL of the OpenAI-compatible embeddings endpoint; empty means queryclaw.llm_url.",
							   "Requests go to this URL followed by /embeddings.  The endpoint is trusted, like queryclaw.llm_url.",
							   &qc_embed_url, "", PGC_SUSET, GUC_SUPERUSER_ONLY,
							   check_embed_url, NULL, NULL);
	DefineCustomStringVariable("queryclaw.embed_server",
							   "Names the foreign server of the embeddings endpoint; its url replaces queryclaw.embed_url.",
							   "A server of the queryclaw foreign-data wrapper: the role's user mapping for it supplies the key.",
							   &qc_embed_server, "", PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.embed_model",
							   "Sets the embedding model used when a call names none; empty means queryclaw.llm_model.",
							   NULL,
							   &qc_embed_model, "", PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.embed_api_key",
							   "Sets the API key sent to the embeddings endpoint as a bearer token.",
							   "Empty means queryclaw.llm_api_key when the endpoint is on the LLM endpoint's host, else no key.",
							   &qc_embed_api_key, "", PGC_SUSET, SECRET_FLAGS,
							   check_embed_api_key, NULL, NULL);
	DefineCustomIntVariable("queryclaw.embed_batch_size",
							"Sets the maximum number of inputs sent in one embeddings request.",
							NULL,
							&qc_embed_batch_size, 64, 1, 2048, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.max_tokens_per_day",
							"Sets the maximum number of LLM and embedding tokens a role may use in any 24 hours; 0 means no limit.",
							"Counted from the usage the providers report, in shared memory: needs shared_preload_libraries.",
							&qc_max_tokens_per_day, 0, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);
}

/* ---- end of the database tools, embeddings and token budgets ---- */

/* ---- the asynchronous queue (queue.c, enqueue.c, the async workers) ---- */

static void
assign_async_retention(const char *newval, void *extra)
{
	qc_async_retention_us = extra ? *(int64 *) extra : 0;
}

/*
 * The queue.  async_workers sizes shared memory and is PGC_POSTMASTER:
 * without preload it does not exist, and qc_async_workers stays 0.
 */
static void
define_async_settings(void)
{
	DefineCustomIntVariable("queryclaw.max_queued_per_role",
							"Sets the maximum number of unfinished asynchronous requests a role may have; 0 means no limit.",
							"An enqueue past it is refused with SQLSTATE 53400.",
							&qc_max_queued_per_role, 0, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.host_rate_limit",
							   "Sets how many asynchronous requests a second may go to each host.",
							   "Entries host=N/s, host a name, an address, *.domain or * (every other host); requests over it wait.",
							   &qc_host_rate_limit, "", PGC_SIGHUP, GUC_LIST_INPUT,
							   check_host_rate_limit, assign_host_rate_limit, NULL);
	DefineCustomIntVariable("queryclaw.async_concurrency",
							"Sets the maximum number of asynchronous requests each async worker runs at once.",
							NULL,
							&qc_async_concurrency, 64, 1, QC_MAX_CONCURRENCY_LIMIT, PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.callback_timeout",
							"Sets the time limit for one callback of an asynchronous request.",
							"Past it (or past the role's statement_timeout, if shorter) the callback is cancelled and the request fails with SQLSTATE 57014.",
							&qc_callback_timeout, 10000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.async_retention",
							   "Sets how long finished asynchronous requests are kept; 0 keeps them forever.",
							   "The async workers delete older done, failed and cancelled requests.",
							   &qc_async_retention, "1 day", PGC_SIGHUP, 0,
							   check_retention, assign_async_retention, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("queryclaw.async_workers",
							"Sets the number of background workers that run asynchronous requests; 0 turns them off.",
							"They connect to queryclaw.database, where the queue is.",
							&qc_async_workers, 1, 0, QC_ASYNC_MAX_WORKERS, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

/* ---- end of the asynchronous queue settings ---- */

/* ---- on a Citus cluster (cluster.c) ---- */

/*
 * The number of nodes the per-role and per-host limits are shared out
 * between, when it is not Citus's count: each node applies its share, so
 * that the nodes together hold the limits as configured (docs/citus.md).
 */
static void
define_cluster_settings(void)
{
	DefineCustomIntVariable("queryclaw.cluster_nodes",
							"Sets the number of nodes that share the per-role and per-host limits; 0 counts the nodes of the Citus cluster.",
							"Each node applies max_calls_per_hour, max_tokens_per_day, host_rate_limit and max_host_concurrency divided by the number of nodes (at least 1 call, token or request), so that the nodes together hold the limits as configured.  0, the default, takes the active primary nodes from Citus's metadata (1 without Citus), read again when nodes are added or removed.",
							&qc_cluster_nodes, 0, 0, 10000, PGC_SIGHUP, 0,
							NULL, NULL, NULL);
}

/* ---- end of the settings on a Citus cluster ---- */

void
qc_guc_init(void)
{
	DefineCustomBoolVariable("queryclaw.enabled",
							 "Allows queryclaw functions to make network requests.",
							 "When off, every call is refused.",
							 &qc_enabled, false, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.timeout",
							"Sets the time limit for a whole request, redirects included.",
							NULL,
							&qc_timeout, 10000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.max_chars",
							"Sets the maximum number of characters a call returns.",
							"Longer results are cut on a character boundary.",
							&qc_max_chars, 50000, 1, 100000000, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.max_bytes",
							"Sets the maximum number of bytes downloaded for one response, after decompression.",
							"The transfer is cut when it reaches this size.",
							&qc_max_bytes, 1024, 1, 512 * 1024, PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("queryclaw.block_local",
							 "Refuses connections to loopback, private, link-local and other non-public addresses.",
							 "The check applies to the address actually connected to, on every hop.",
							 &qc_block_local, true, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.local_allowlist",
							   "Lists addresses and CIDRs, with optional port, exempt from queryclaw.block_local.",
							   "Example: 127.0.0.1:8080, 10.1.0.0/16, [::1]:8080.",
							   &qc_local_allowlist, "", PGC_SUSET, LIST_FLAGS,
							   check_addr_list, assign_local_allowlist, NULL);
	DefineCustomStringVariable("queryclaw.allowed_hosts",
							   "Lists the only hosts that may be reached, when not empty.",
							   "Entries are host names, *.domain wildcards or IP addresses, with optional :port.",
							   &qc_allowed_hosts, "", PGC_SUSET, LIST_FLAGS,
							   check_host_list, assign_allowed_hosts, NULL);
	DefineCustomStringVariable("queryclaw.denied_hosts",
							   "Lists hosts that are always refused.",
							   "Entries are host names, *.domain wildcards or IP addresses, with optional :port.",
							   &qc_denied_hosts, "", PGC_SUSET, LIST_FLAGS,
							   check_host_list, assign_denied_hosts, NULL);
	DefineCustomIntVariable("queryclaw.max_redirects",
							"Sets the maximum number of redirects followed by one request.",
							"Each hop is checked against the whole policy.",
							&qc_max_redirects, 5, 0, 50, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("queryclaw.read_only",
							 "Allows only GET and HEAD requests.",
							 NULL,
							 &qc_read_only, false, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("queryclaw.servers_only",
							 "Allows only URLs under foreign servers the role has USAGE on.",
							 "Servers of the queryclaw foreign-data wrapper name the APIs a role may call: GRANT USAGE ON FOREIGN SERVER.",
							 &qc_servers_only, false, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.user_agent",
							   "Sets the User-Agent header sent with every request.",
							   NULL,
							   &qc_user_agent, "queryclaw_ext/" QC_VERSION, PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("queryclaw.proxy",
							   "Sets the HTTP proxy used for every request; empty means none.",
							   "Proxy environment variables are always ignored.",
							   &qc_proxy, "", PGC_SUSET, GUC_SUPERUSER_ONLY | GUC_NO_SHOW_ALL,
							   check_proxy, NULL, NULL);
	DefineCustomStringVariable("queryclaw.ca_file",
							   "Sets a file of PEM certificates trusted for HTTPS instead of the system's.",
							   "For servers whose certificates a private CA signed; empty means the system's trust store.",
							   &qc_ca_file, "", PGC_SUSET, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomBoolVariable("queryclaw.audit",
							 "Writes a row to queryclaw.audit_log for every call.",
							 NULL,
							 &qc_audit, true, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("queryclaw.audit_query",
							 "Includes the calling statement's text in audit rows.",
							 NULL,
							 &qc_audit_query, true, PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("queryclaw.max_concurrency",
							"Sets the maximum number of requests a batch function runs at once.",
							NULL,
							&qc_max_concurrency, 16, 1, QC_MAX_CONCURRENCY_LIMIT, PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("queryclaw.max_host_concurrency",
							"Sets the maximum number of requests a batch function runs at once to one host.",
							NULL,
							&qc_max_host_concurrency, 8, 1, QC_MAX_CONCURRENCY_LIMIT, PGC_SUSET, 0,
							NULL, NULL, NULL);
	/* the caller's choice, not a policy: any role may set it */
	DefineCustomEnumVariable("queryclaw.on_error",
							 "Sets what a failed call does: raise an error, or return it as its result.",
							 "With return, a refusal, a timeout or a failure of the far side gives NULL (api_call and the LLM functions an object saying the error) and the statement goes on, ending with one WARNING that counts the failures.",
							 &qc_on_error, QC_ON_ERROR_RAISE, on_error_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	define_llm_settings();
	define_retry_settings();
	define_audit_settings();
	define_agent_settings();
	define_async_settings();
	define_cluster_settings();

	MarkGUCPrefixReserved("queryclaw");
}
