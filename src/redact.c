/*-------------------------------------------------------------------------
 *
 * redact.c
 *	  Remove secrets from URLs and headers before they are stored or shown.
 *
 * The audit log and error messages are read by people other than the
 * caller (the DBA, log shippers), so nothing that looks like a credential
 * may reach them: URL userinfo, Authorization/Cookie headers and anything
 * named like a key, token, secret, password or signature; and the LLM and
 * search API keys the DBA configured, wherever they occur in text.  The same
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

char *
qc_redact_url(const char *url)
{
	StringInfoData out;
	const char *authority = authority_start(url);
	const char *path;
	const char *at;
	const char *query;
	const char *end = url + strcspn(url, "#");

	initStringInfo(&out);
	path = authority + strcspn(authority, "/?#");
	/* drop userinfo: the last '@' before the path ends it */
	for (at = path; at > authority && at[-1] != '@'; at--)
		;
	appendBinaryStringInfo(&out, url, authority - url);
	if (at > authority)
		authority = at;
	query = memchr(path, '?', end - path);
	appendBinaryStringInfo(&out, authority, (query ? query : end) - authority);
	if (query == NULL)
		return out.data;

	appendStringInfoChar(&out, '?');
	for (const char *p = query + 1; p < end;)
	{
		size_t		len = strcspn(p, "&#");

		len = Min(len, (size_t) (end - p));
		append_param(&out, p, len);
		p += len;
		if (p < end && *p == '&')
		{
			appendStringInfoChar(&out, '&');
			p++;
		}
	}
	return out.data;
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
	return replace_key(replace_key(text, qc_llm_api_key), qc_search_api_key);
}
