/*-------------------------------------------------------------------------
 *
 * redact.c
 *	  Remove secrets from URLs and headers before they are stored or shown.
 *
 * The audit log and error messages are read by people other than the
 * caller (the DBA, log shippers), so nothing that looks like a credential
 * may reach them: URL userinfo, Authorization/Cookie headers and anything
 * named like a key, token, secret, password or signature; and the LLM and
 * search API keys the DBA configured, wherever they occur in text.  The
 * calling statement, stored with each audit row, gets the same treatment:
 * the URLs in it are redacted as URLs, so are query parameters in a
 * literal that holds only part of a URL, and a quoted value that follows a
 * secret-looking quoted name ('{"Authorization": "Bearer …"}',
 * jsonb_build_object('X-Api-Key', '…')) is replaced.  The same
 * predicate decides which request headers are dropped when a redirect
 * leaves the origin the caller addressed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/formatting.h"

#include "queryclaw.h"
#include "redact.h"

/* API keys shorter than this are not searched for: too many false hits. */
#define MIN_KEY_LENGTH 8

/* Does s end with suffix? */
static bool
ends_with(const char *s, const char *suffix)
{
	size_t		slen = strlen(s);
	size_t		xlen = strlen(suffix);

	return slen >= xlen && strcmp(s + slen - xlen, suffix) == 0;
}

/*
 * Header names are secret when they contain a telling word ("X-Api-Key",
 * "X-Auth-Token", "Cookie"); query parameters only when they end with one,
 * so that "api_key" and "X-Amz-Signature" are hidden but "keyword" is not.
 */
bool
qc_name_is_secret(const char *name, bool is_header)
{
	static const char *const words[] = {
		"key", "token", "secret", "password", "passwd", "pwd", "signature",
		"sig", "credential", "credentials", "auth", "session", "sessionid",
		"cookie", NULL
	};
	char	   *lower = asc_tolower(name, strlen(name));
	bool		secret = false;

	for (int i = 0; words[i] && !secret; i++)
		secret = is_header ? strstr(lower, words[i]) != NULL : ends_with(lower, words[i]);
	pfree(lower);
	return secret;
}

/* Append one "name=value" query parameter, hiding a secret value. */
static void
append_param(StringInfo out, const char *param, size_t len)
{
	const char *eq = memchr(param, '=', len);
	char	   *name = pnstrdup(param, eq ? (size_t) (eq - param) : len);

	if (eq != NULL && qc_name_is_secret(name, false))
		appendStringInfo(out, "%s=REDACTED", name);
	else
		appendBinaryStringInfo(out, param, len);
	pfree(name);
}

/* Append the query string from '?' to end, hiding secret values. */
static void
append_query(StringInfo out, const char *query, const char *end)
{
	appendStringInfoChar(out, '?');
	for (const char *p = query + 1; p < end;)
	{
		size_t		len = strcspn(p, "&#");

		len = Min(len, (size_t) (end - p));
		append_param(out, p, len);
		p += len;
		if (p < end && *p == '&')
		{
			appendStringInfoChar(out, '&');
			p++;
		}
	}
}

/*
 * Where the authority of a URL starts: after "scheme:" and the slashes that
 * follow, however many (libcurl reads "http:/u:p@h/" and "http:///u:p@h/"
 * as "http://u:p@h/"), or at the start of text that has no scheme.  A
 * scheme is what libcurl takes for one, which may start with a digit.
 */
static const char *
authority_start(const char *url)
{
	const char *p = url;

	while (isalnum((unsigned char) *p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	if (p == url || *p != ':')
		return url;
	while (*++p == '/')
		;
	return p;
}

/*
 * Control characters written as %XX: a URL that holds them is refused, but
 * its audit row and error message still show it, and a raw CR, LF or ESC
 * there could forge lines in a log or drive a terminal.
 */
static char *
escape_controls(char *text)
{
	StringInfoData out;
	const unsigned char *first = (const unsigned char *) text;

	while (*first && *first >= 0x20 && *first != 0x7f)
		first++;
	if (*first == '\0')
		return text;
	initStringInfo(&out);
	for (const unsigned char *c = (const unsigned char *) text; *c; c++)
	{
		if (*c < 0x20 || *c == 0x7f)
			appendStringInfo(&out, "%%%02X", *c);
		else
			appendStringInfoChar(&out, (char) *c);
	}
	return out.data;
}

char *
qc_redact_url(const char *url)
{
	StringInfoData out;
	const char *authority = authority_start(url);
	const char *path;
	const char *at;
	const char *query;
	const char *end = url + strcspn(url, "#");
	bool		host_gone;

	initStringInfo(&out);
	path = authority + strcspn(authority, "/?#");
	/* drop userinfo: the last '@' before the path ends it */
	for (at = path; at > authority && at[-1] != '@'; at--)
		;
	appendBinaryStringInfo(&out, url, authority - url);
	/* nothing left of the authority: its path would be read as one */
	host_gone = at > authority && at == path && *path == '/';
	if (at > authority)
		authority = at;
	query = memchr(path, '?', end - path);
	appendBinaryStringInfo(&out, authority, (query ? query : end) - authority);
	if (query != NULL)
		append_query(&out, query, end);
	/* so redact what is now the authority too; each pass drops an '@' */
	return host_gone ? qc_redact_url(out.data) : escape_controls(out.data);
}

/* Replace every occurrence of key in text; text itself when there is none. */
static const char *
replace_key(const char *text, const char *key)
{
	StringInfoData out;
	const char *p = text;
	const char *hit;
	size_t		keylen = strlen(key);

	if (keylen < MIN_KEY_LENGTH || strstr(text, key) == NULL)
		return text;
	initStringInfo(&out);
	while ((hit = strstr(p, key)) != NULL)
	{
		appendBinaryStringInfo(&out, p, hit - p);
		appendStringInfoString(&out, "REDACTED");
		p = hit + keylen;
	}
	appendStringInfoString(&out, p);
	return out.data;
}

const char *
qc_redact_keys(const char *text)
{
	return replace_key(replace_key(replace_key(text, qc_llm_api_key), qc_search_api_key),
					   qc_embed_api_key);
}

/* Longest name whose value qc_redact_statement() looks at */
#define MAX_NAME_LENGTH 64
#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."

/* The length of the name at p, if it is one that looks secret; else 0. */
static size_t
secret_name_length(const char *p, bool is_header)
{
	size_t		len = strspn(p, NAME_CHARS);
	char	   *name;
	bool		secret;

	if (len == 0 || len > MAX_NAME_LENGTH)
		return 0;
	name = pnstrdup(p, len);
	secret = qc_name_is_secret(name, is_header);
	pfree(name);
	return secret ? len : 0;
}

/*
 * The length of the URL at p in statement text: "http://" or "https://",
 * up to what ends a URL in SQL (space, a quote, a bracket); 0 if none.
 */
static size_t
url_length(const char *text, const char *p)
{
	if (p > text && isalnum((unsigned char) p[-1]))
		return 0;
	if (pg_strncasecmp(p, "http://", 7) != 0 && pg_strncasecmp(p, "https://", 8) != 0)
		return 0;
	return strcspn(p, " \t\r\n\f\v'\"`<>()[]{}\\");
}

/*
 * The length of a quoted value up to its closing quote, over the escapes
 * that keep a quote inside it: a backslash in JSON ("a\"b"), a doubled
 * quote in an SQL literal ('a''b'), so that no part of a secret is left.
 */
static size_t
quoted_length(const char *value, char quote)
{
	const char *p = value;

	while (*p != '\0')
	{
		if (quote == '"' && *p == '\\' && p[1] != '\0')
			p += 2;
		else if (*p == quote && quote == '\'' && p[1] == '\'')
			p += 2;
		else if (*p == quote)
			break;
		else
			p++;
	}
	return p - value;
}

/*
 * If p opens a quoted name that looks secret ("token", 'X-Api-Key'),
 * followed by ':', ',' or '=>' and a quoted value, the offsets of the
 * value's first character and of its closing quote; else false.
 */
static bool
secret_value_at(const char *p, size_t *value, size_t *value_end)
{
	char		quote = *p;
	size_t		len;
	const char *q;

	if ((quote != '"' && quote != '\'') ||
		(len = secret_name_length(p + 1, true)) == 0 || p[1 + len] != quote)
		return false;
	q = p + 2 + len;
	q += strspn(q, " \t\r\n");
	if (*q == ':' || *q == ',')
		q++;
	else if (q[0] == '=' && q[1] == '>')
		q += 2;
	else
		return false;
	q += strspn(q, " \t\r\n");
	if (*q != '"' && *q != '\'')
		return false;
	*value = q + 1 - p;
	*value_end = *value + quoted_length(q + 1, *q);
	return true;
}

/*
 * If p is the '?' or '&' before a query parameter with a secret-looking
 * name ("&api_key=…", in a literal that holds only part of a URL), the
 * offsets of its value and of the end of the value; else false.
 */
static bool
secret_param_at(const char *p, size_t *value, size_t *value_end)
{
	size_t		len;

	if ((*p != '?' && *p != '&') ||
		(len = secret_name_length(p + 1, false)) == 0 || p[1 + len] != '=')
		return false;
	*value = len + 2;
	*value_end = *value + strcspn(p + *value, "&# \t\r\n'\"");
	return true;
}

char *
qc_redact_statement(const char *sql)
{
	const char *text = qc_redact_keys(sql);
	const char *p = text;
	StringInfoData out;

	initStringInfo(&out);
	while (*p != '\0')
	{
		size_t		len;
		size_t		value;

		if ((len = url_length(text, p)) > 0)
		{
			char	   *url = pnstrdup(p, len);

			appendStringInfoString(&out, qc_redact_url(url));
			pfree(url);
			p += len;
		}
		else if (secret_value_at(p, &value, &len) ||
				 secret_param_at(p, &value, &len))
		{
			appendBinaryStringInfo(&out, p, value);
			appendStringInfoString(&out, "REDACTED");
			p += len;
		}
		else
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}
