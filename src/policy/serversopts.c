/*-------------------------------------------------------------------------
 *
 * serversopts.c
 *	  The options of the queryclaw wrapper's servers and user mappings,
 *	  parsed (servers.h): by the validator (serversfdw.c), and again when
 *	  a call is made under a server (servers.c).
 *
 * No error quotes a user mapping's value: it is a key.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include <cJSON.h>

#include "commands/defrem.h"
#include "mb/pg_wchar.h"
#include "utils/guc.h"

#include "servers.h"

/* Most retries a server may set (as queryclaw.retry_max). */
#define QC_SERVER_MAX_RETRIES 100

static void
bad_option(const char *option, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for option \"%s\"", option),
			 errdetail("%s", detail)));
}

/* A server's url option: an http or https base URL, nothing else. */
static void
check_base_url(const char *value)
{
	QcUrl		url;
	char	   *error;
	const char *authority = strstr(value, "://");

	if (!qc_url_parse(value, &url, &error))
		bad_option("url", error);
	if (strcmp(url.scheme, "http") != 0 && strcmp(url.scheme, "https") != 0)
		bad_option("url", "A server's url is an http or https URL.");
	if (authority && memchr(authority + 3, '@', strcspn(authority + 3, "/?#")))
		bad_option("url", "A server's url holds no user name or password: credentials belong in the user mapping.");
	if (strpbrk(value, "?#") != NULL)
		bad_option("url", "A server's url has no query string or fragment: parameters belong in the user mapping's query option.");
}

/* "N/s" or "N/min", N a whole number from 1: tokens a second. */
static double
parse_rate(const char *value)
{
	char	   *end;
	long		n;

	errno = 0;
	n = strtol(value, &end, 10);
	if (errno == 0 && n > 0 && n <= 1000000 && end != value && isdigit((unsigned char) *value))
	{
		if (strcmp(end, "/s") == 0)
			return n;
		if (strcmp(end, "/min") == 0)
			return n / 60.0;
	}
	bad_option("rate_limit", "A rate is a whole number of requests a second or a minute, such as '10/s' or '30/min'.");
	return 0;					/* keep the compiler quiet */
}

static int
parse_count(const char *option, const char *value, int min, int max)
{
	char	   *end;
	long		n;

	errno = 0;
	n = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || n < min || n > max)
		bad_option(option, psprintf("The value is a whole number from %d to %d.", min, max));
	return (int) n;
}

/* A duration (milliseconds without a unit) of at least min ms. */
static int
parse_ms(const char *option, const char *value, int min, const char *detail)
{
	int			ms;
	const char *hint;

	if (!parse_int(value, &ms, GUC_UNIT_MS, &hint) || ms < min)
		bad_option(option, detail);
	return ms;
}

static bool
parse_protocol(const char *value)
{
	if (strcmp(value, "mcp") == 0)
		return true;
	if (strcmp(value, "http") != 0)
		bad_option("protocol", "A server's protocol is 'http' (an API called with api_call) or 'mcp' (an MCP server over Streamable HTTP).");
	return false;
}

/* A tool name as MCP allows one: 1 to 128 of A-Z a-z 0-9 _ - . */
static bool
tool_name_char(char c)
{
	return isalnum((unsigned char) c) || c == '_' || c == '-' || c == '.';
}

/* "name, prefix*, ...": each item a tool name, or a prefix and a '*'. */
static const char *
check_tools(const char *value)
{
	const char *p = value;

	for (;;)
	{
		int			len = 0;

		while (*p == ' ')
			p++;
		while (tool_name_char(p[len]))
			len++;
		if (p[len] == '*')
			len++;
		if (len == 0 || len > 128)
			bad_option("tools", "The value is a list of tool names or prefixes ending in '*', separated by commas, such as 'search_issues, get_*'.");
		p += len;
		while (*p == ' ')
			p++;
		if (*p == '\0')
			return value;
		if (*p++ != ',')
			bad_option("tools", "The value is a list of tool names or prefixes ending in '*', separated by commas, such as 'search_issues, get_*'.");
	}
}

bool
qc_server_offers_tool(const char *tools, const char *name)
{
	const char *p = tools;

	if (tools == NULL)
		return true;
	while (*p)
	{
		size_t		len;

		while (*p == ' ' || *p == ',')
			p++;
		len = strcspn(p, ", ");
		if (len == 0)
			break;
		if (p[len - 1] == '*' ? strncmp(p, name, len - 1) == 0 :
			strlen(name) == len && strncmp(p, name, len) == 0)
			return true;
		p += len;
	}
	return false;
}

/* tools and tools_ttl are an MCP server's. */
static void
check_mcp_only(const QcServerOptions *opts, bool tools_given, bool ttl_given)
{
	if (opts->mcp)
		return;
	if (tools_given)
		bad_option("tools", "Only a server with protocol 'mcp' offers tools.");
	if (ttl_given)
		bad_option("tools_ttl", "Only a server with protocol 'mcp' keeps a tool list.");
}

void
qc_server_options_parse(List *options, QcServerOptions *opts)
{
	ListCell   *lc;

	bool		ttl_given = false;

	memset(opts, 0, sizeof(*opts));
	opts->retry_max = -1;
	opts->tools_ttl_ms = QC_MCP_TOOLS_TTL_MS;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);
		char	   *value = defGetString(def);

		if (strcmp(def->defname, "url") == 0)
		{
			check_base_url(value);
			opts->url = value;
		}
		else if (strcmp(def->defname, "rate_limit") == 0)
		{
			opts->rate = parse_rate(value);
			opts->rate_text = value;
		}
		else if (strcmp(def->defname, "max_concurrency") == 0)
			opts->max_concurrency = parse_count(def->defname, value, 1, QC_MAX_CONCURRENCY_LIMIT);
		else if (strcmp(def->defname, "timeout") == 0)
			opts->timeout_ms = parse_ms(def->defname, value, 1,
										"A timeout is a positive duration such as '20s' or '500ms' (milliseconds without a unit).");
		else if (strcmp(def->defname, "retry_max") == 0)
			opts->retry_max = parse_count(def->defname, value, 0, QC_SERVER_MAX_RETRIES);
		else if (strcmp(def->defname, "protocol") == 0)
			opts->mcp = parse_protocol(value);
		else if (strcmp(def->defname, "tools") == 0)
			opts->tools = check_tools(value);
		else if (strcmp(def->defname, "tools_ttl") == 0)
		{
			opts->tools_ttl_ms = parse_ms(def->defname, value, 0,
										  "A duration such as '5min' or '30s' (milliseconds without a unit); 0 reads the tool list at every call.");
			ttl_given = true;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid option \"%s\" for a queryclaw server", def->defname),
					 errhint("Valid options are url, rate_limit, max_concurrency, timeout, retry_max, protocol, tools and tools_ttl.")));
	}
	check_mcp_only(opts, opts->tools != NULL, ttl_given);
	if (opts->url == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a queryclaw server needs the option \"url\""),
				 errhint("Give the API's base URL, e.g. OPTIONS (url 'https://api.example.com/v1/').")));
}

List *
qc_server_headers_parse(const char *json)
{
	cJSON	   *tree = cJSON_Parse(json);
	cJSON	   *item;
	List	   *headers = NIL;
	ListCell   *lc;

	if (tree == NULL || !cJSON_IsObject(tree))
	{
		cJSON_Delete(tree);
		bad_option("headers", "The value is a JSON object of header names and string values, such as '{\"Authorization\": \"Bearer …\"}'.");
	}
	cJSON_ArrayForEach(item, tree)
	{
		QcHeader   *h;

		if (!cJSON_IsString(item))
		{
			cJSON_Delete(tree);
			bad_option("headers", "Every header's value is a JSON string.");
		}
		h = palloc(sizeof(QcHeader));
		h->name = pstrdup(item->string);
		h->value = pstrdup(item->valuestring);
		headers = lappend(headers, h);
	}
	cJSON_Delete(tree);
	foreach(lc, headers)
	{
		QcHeader   *h = lfirst(lc);

		h->value = pg_server_to_any(h->value, strlen(h->value), PG_UTF8);
	}
	return headers;
}

void
qc_server_query_check(const char *query)
{
	if (query[0] == '\0' || query[0] == '?' || query[0] == '&' || query[0] == '=')
		bad_option("query", "The value is URL query parameters without the '?', such as 'key=…&units=metric'.");
	for (const char *c = query; *c; c++)
		if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f || *c == '#')
			bad_option("query", "Parameters are written as they go in a URL: printable ASCII, no spaces and no '#' (percent-encode anything else).");
}
