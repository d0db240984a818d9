/*-------------------------------------------------------------------------
 *
 * redact.c
 *	  Remove secrets from URLs, headers and free text before they are
 *	  stored or shown.
 *
 * The audit log, error messages and the server log are read by people
 * other than the caller (the DBA, log shippers), so nothing that looks
 * like a credential may reach them.  Three kinds of evidence are used, and
 * the rules err on the side of hiding:
 *
 * - names: a header, JSON key or parameter named like a credential
 *   (qc_name_is_secret) has its value replaced, wherever the name occurs:
 *   in a URL's query or ";" parameters, in a form or JSON body quoted in a
 *   statement, in "Name: value" text;
 * - shapes: a URL path segment or parameter value that looks like a token
 *   (a run of 20 or more letters and digits mixing both), and anywhere in
 *   text a well-known token prefix ("sk-…", "ghp_…", "xoxb-…",
 *   "bot123…:…", "Bearer …");
 * - the API keys the DBA configured (queryclaw.llm_api_key,
 *   queryclaw.search_api_key), wherever they occur;
 * - the secrets a call sends (qc_call_secrets: what the rules above hide in
 *   its URLs, its secret headers' values; and its user mapping's values in
 *   every form a server may echo them, qc_mapping_secrets in
 *   redactforms.c), wherever a server echoed them or a statement built
 *   them, for the texts stored about that call.  There JSON escapes and
 *   HTML numeric character references are decoded first
 *   (qc_redact_secrets).
 *
 * Text is first decoded from the JSON escapes of plain ASCII characters
 * ("\u0073k-…", "http:\/\/…"), so that what a server echoes back escaped is
 * recognised too.  Every function here is linear in its input (each
 * character is looked at a bounded number of times) and idempotent: what
 * it makes of its own output is that output.  The same name predicate
 * decides which request headers are dropped when a redirect leaves the
 * origin the caller addressed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/base64.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/memutils.h"

#include "compat.h"
#include "guc.h"
#include "header.h"
#include "redact.h"

/* Configured API keys shorter than this are not searched for: too many false hits. */
#define MIN_KEY_LENGTH 8
/* Nor the secrets of a call (qc_redact_echo) shorter than this */
#define MIN_ECHO_LENGTH 6
/* Longest name whose value is looked at in free text */
#define MAX_NAME_LENGTH 64
/* A run of letters and digits this long, mixing both, is a token. */
#define MIN_TOKEN_RUN 20
/* What must follow a token prefix: this many characters, a digit among them */
#define MIN_TOKEN_TAIL 8

#define REDACTED "REDACTED"

/*
 * What ends a bare value ("password=…") in free text: also everything
 * that ends a URL there, so that a URL redacted inside a value (its
 * fragment dropped) cannot make the value longer when redacted again
 */
#define BARE_VALUE_END " \t\r\n\f\v\"'`\\&;#,?()[]{}<>"

/* Characters of a name or a token in free text */
#define IS_NAME_CHAR(c) \
	(isalnum((unsigned char) (c)) || (c) == '_' || (c) == '-' || (c) == '.' || (c) == '%')

/* Header names (and quoted JSON keys) holding one of these are secret. */
static const char *const header_words[] = {
	"key", "token", "secret", "passw", "pwd", "auth", "session", "sessid",
	"signature", "credential", "cookie", "jwt", "hmac", "bearer", "assertion",
	NULL
};

/* Well-known secret headers that hold none of the words above */
static const char *const header_names[] = {
	"x-jfrog-art-api", "x-vercel-protection-bypass", "x-ms-client-principal",
	"x-amzn-oidc-data", "x-github-otp", "npm-otp", NULL
};

/*
 * Parameter names are secret when their last word ends with one of these
 * ("api_key", "accessToken", "X-Amz-Signature", "jsessionid"), so that
 * "keyword" and "token_count" are not.
 */
static const char *const param_words[] = {
	"key", "keys", "token", "tokens", "secret", "secrets", "password",
	"passwords", "passwd", "pwd", "pass", "passphrase", "signature", "sig",
	"credential", "credentials", "auth", "authorization", "session",
	"sessionid", "sessid", "cookie", "jwt", "hmac", "otp", "assertion", NULL
};

/* Prefixes of well-known tokens (case matters), at the start of a word */
static const char *const token_prefixes[] = {
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "gho_",
	"ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxa-", "xoxb-",
	"xoxe-", "xoxo-", "xoxp-", "xoxr-", "xoxs-", "xapp-", "AKIA", "ASIA",
	"AIza", "ya29.", "eyJ", "hf_", "npm_", "pypi-", "shpat_", "shpss_",
	"glc_", "dop_v1_", NULL
};

/* Does s end with suffix? */
static bool
ends_with(const char *s, size_t slen, const char *suffix)
{
	size_t		xlen = strlen(suffix);

	return slen >= xlen && memcmp(s + slen - xlen, suffix, xlen) == 0;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = pg_ascii_tolower(c);
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

char *
qc_percent_decode(const char *s, size_t len)
{
	char	   *out = palloc(len + 1);
	char	   *o = out;

	for (size_t i = 0; i < len; i++)
	{
		int			hi,
					lo;

		if (s[i] == '%' && i + 2 < len && (hi = hex_value(s[i + 1])) >= 0 &&
			(lo = hex_value(s[i + 2])) >= 0)
		{
			if (hi * 16 + lo != 0)
				*o++ = (char) (hi * 16 + lo);
			i += 2;
		}
		else
			*o++ = s[i];
	}
	*o = '\0';
	return out;
}

/* Does one word of a parameter name end with a secret word? */
static bool
param_word_is_secret(const char *word, size_t len)
{
	char	   *lower = asc_tolower(word, len);
	bool		secret = false;

	for (int i = 0; param_words[i] && !secret; i++)
		secret = ends_with(lower, len, param_words[i]);
	pfree(lower);
	return secret;
}

/*
 * The words of a name are its runs of letters and digits, split also where
 * a lower case letter is followed by an upper case one ("accessToken").
 * The name is secret when its last word ends with a secret word, or is a
 * mere "id" or "value" after one ("session_id"): "token_count" is not.
 */
static bool
param_name_is_secret(const char *name)
{
	const char *word = NULL;
	const char *last = NULL;
	size_t		last_len = 0;
	bool		previous_secret = false;

	for (const char *p = name;; p++)
	{
		bool		inside = isalnum((unsigned char) *p) &&
			!(word != NULL && isupper((unsigned char) *p) &&
			  islower((unsigned char) p[-1]));

		if (inside && word == NULL)
			word = p;
		else if (!inside && word != NULL)
		{
			if (last != NULL)
				previous_secret = param_word_is_secret(last, last_len);
			last = word;
			last_len = p - word;
			word = isalnum((unsigned char) *p) ? p : NULL;
		}
		if (*p == '\0')
			break;
	}
	if (last == NULL)
		return false;
	if (param_word_is_secret(last, last_len))
		return true;
	return previous_secret &&
		((last_len == 2 && pg_strncasecmp(last, "id", 2) == 0) ||
		 (last_len == 5 && pg_strncasecmp(last, "value", 5) == 0));
}

static bool
header_name_is_secret(const char *name)
{
	char	   *lower = asc_tolower(name, strlen(name));
	bool		secret = false;

	for (int i = 0; header_words[i] && !secret; i++)
		secret = strstr(lower, header_words[i]) != NULL;
	for (int i = 0; header_names[i] && !secret; i++)
		secret = strcmp(lower, header_names[i]) == 0;
	pfree(lower);
	return secret;
}

bool
qc_name_is_secret(const char *name, bool is_header)
{
	char	   *decoded = qc_percent_decode(name, strlen(name));
	bool		secret = is_header ? header_name_is_secret(decoded) :
		param_name_is_secret(decoded);

	pfree(decoded);
	return secret;
}

/* ---- token shapes ---- */

/* The token prefix s starts with, or NULL. */
static const char *
token_prefix(const char *s, size_t len)
{
	for (int i = 0; token_prefixes[i]; i++)
	{
		size_t		plen = strlen(token_prefixes[i]);

		if (len >= plen && memcmp(s, token_prefixes[i], plen) == 0)
			return token_prefixes[i];
	}
	return NULL;
}

/*
 * A Telegram bot token at s ("bot" or not, then 5 or more digits, ':' and
 * 20 or more token characters): its length, else 0.
 */
static size_t
bot_token_length(const char *s, const char *end)
{
	const char *p = s;
	const char *tail;

	if (end - p >= 3 && memcmp(p, "bot", 3) == 0)
		p += 3;
	tail = p;
	while (p < end && isdigit((unsigned char) *p))
		p++;
	if (p - tail < 5 || p >= end || *p != ':')
		return 0;
	tail = ++p;
	while (p < end && IS_NAME_CHAR(*p))
		p++;
	return p - tail >= MIN_TOKEN_RUN ? (size_t) (p - s) : 0;
}

/*
 * Where a token starts in the run of name characters [run, end): at the
 * start of a word in it, a well-known prefix followed by enough of the
 * run, with a digit (last_digit is the run's last digit, or NULL).  Each
 * word start is looked at once, against a fixed list: linear.
 */
static const char *
token_in_run(const char *run, const char *end, const char *last_digit)
{
	for (const char *p = run; p < end; p++)
	{
		const char *prefix;

		if (p > run && isalnum((unsigned char) p[-1]))
			continue;
		if ((prefix = token_prefix(p, end - p)) != NULL &&
			end - (p + strlen(prefix)) >= MIN_TOKEN_TAIL &&
			last_digit != NULL && last_digit >= p + strlen(prefix))
			return p;
	}
	return NULL;
}

/*
 * Does [text, end) hold a run of letters and digits long enough and mixing
 * both, or a bot token?
 */
static bool
has_token_run(const char *text, const char *end)
{
	int			run = 0;
	bool		letters = false;
	bool		digits = false;

	for (const char *p = text; p < end; p++)
	{
		if ((p == text || !isalnum((unsigned char) p[-1])) && bot_token_length(p, end) > 0)
			return true;
		if (!isalnum((unsigned char) *p))
		{
			run = 0;
			letters = digits = false;
			continue;
		}
		run++;
		letters |= isalpha((unsigned char) *p) != 0;
		digits |= isdigit((unsigned char) *p) != 0;
		if (run >= MIN_TOKEN_RUN && letters && digits)
			return true;
	}
	return false;
}

/* Does [text, end) hold a token with a well-known prefix, run by run? */
static bool
has_token_prefix(const char *text, const char *end)
{
	for (const char *p = text; p < end;)
	{
		const char *q = p;
		const char *last_digit = NULL;

		while (q < end && IS_NAME_CHAR(*q))
		{
			if (isdigit((unsigned char) *q))
				last_digit = q;
			q++;
		}
		if (q > p && token_in_run(p, q, last_digit) != NULL)
			return true;
		p = q < end ? q + 1 : q;
	}
	return false;
}

/* Does s[0..len), percent-decoded, look like a token (for URLs)? */
static bool
looks_like_token(const char *s, size_t len)
{
	char	   *text = qc_percent_decode(s, len);
	const char *end = text + strlen(text);
	bool		token = has_token_run(text, end) || has_token_prefix(text, end);

	pfree(text);
	return token;
}

/* ---- URLs ---- */

/*
 * Does text (decoded) hold a query or a URL of its own with a secret in
 * it: a "name=value" part with a secret name, or userinfo?
 */
static bool
nested_secret(const char *text)
{
	const char *scheme = strstr(text, "://");

	if (scheme != NULL && strchr(scheme, '@') != NULL)
		return true;
	for (const char *p = text; *p != '\0';)
	{
		size_t		len = strcspn(p, "?&;#/ ");
		const char *eq = memchr(p, '=', len);

		if (eq != NULL)
		{
			char	   *name = pnstrdup(p, eq - p);
			bool		secret = qc_name_is_secret(name, false);

			pfree(name);
			if (secret)
				return true;
		}
		p += len;
		if (*p != '\0')
			p++;
	}
	return false;
}

/*
 * Does a parameter value hide a secret: a token shape, or, its %XX
 * escapes decoded, a nested query or URL with one ("next=%2Fa%3Ftoken%3D…")?
 */
static bool
value_hides_secret(const char *s, size_t len)
{
	char	   *text;
	bool		secret;

	if (looks_like_token(s, len))
		return true;
	if (memchr(s, '=', len) == NULL && memchr(s, '%', len) == NULL &&
		memchr(s, '@', len) == NULL)
		return false;
	text = qc_percent_decode(s, len);
	secret = nested_secret(text);
	pfree(text);
	return secret;
}

/* Note text in *hidden, unless it is too short to search for. */
static void
note_text(char *text, List **hidden)
{
	if (strlen(text) >= MIN_ECHO_LENGTH)
		*hidden = lappend(*hidden, text);
}

/*
 * Note the secret s[0..len) in *hidden (if not NULL), as written and
 * %XX-decoded, for qc_call_secrets().
 */
static void
note_hidden(const char *s, size_t len, List **hidden)
{
	if (hidden != NULL && len > 0)
	{
		note_text(pnstrdup(s, len), hidden);
		note_text(qc_percent_decode(s, len), hidden);
	}
}

/*
 * Note userinfo[0..len) as libcurl sends it, in an Authorization header,
 * base64-encoded: a server that echoes that header echoes the password.
 */
static void
note_basic_credentials(const char *userinfo, size_t len, List **hidden)
{
	char	   *decoded = qc_percent_decode(userinfo, len);
	int			enclen = pg_b64_enc_len(strlen(decoded));
	char	   *encoded = palloc(enclen + 1);
	int			n = qc_b64_encode(decoded, strlen(decoded), encoded, enclen);

	encoded[Max(n, 0)] = '\0';
	note_text(encoded, hidden);
}

/* Append REDACTED in place of the secret s[0..len), noting it. */
static void
hide(StringInfo out, const char *s, size_t len, List **hidden)
{
	appendStringInfoString(out, REDACTED);
	note_hidden(s, len, hidden);
}

/*
 * Append one "name=value" parameter of a query or path: the value hidden
 * when the name is secret or the value looks like a token.
 */
static void
append_param(StringInfo out, const char *param, size_t len, List **hidden)
{
	const char *eq = memchr(param, '=', len);
	const char *value = eq ? eq + 1 : param;
	size_t		value_len = param + len - value;

	if (eq == NULL ? (len > 0 && looks_like_token(param, len)) :
		(qc_name_is_secret(pnstrdup(param, eq - param), false) ||
		 value_hides_secret(value, value_len)))
	{
		appendBinaryStringInfo(out, param, value - param);
		hide(out, value, value_len, hidden);
	}
	else
		appendBinaryStringInfo(out, param, len);
}

/* Append [p, end) split at any of seps, each part through append_param. */
static void
append_params(StringInfo out, const char *p, const char *end, const char *seps,
			  List **hidden)
{
	while (p < end)
	{
		size_t		len = strcspn(p, seps);

		len = Min(len, (size_t) (end - p));
		append_param(out, p, len, hidden);
		p += len;
		if (p < end)
			appendStringInfoChar(out, *p++);
	}
}

/*
 * Append a path: each segment that looks like a token replaced, and the
 * ";name=value" parameters of each segment treated as query parameters.
 */
static void
append_path(StringInfo out, const char *p, const char *end, List **hidden)
{
	while (p < end)
	{
		size_t		len = Min(strcspn(p, "/"), (size_t) (end - p));
		size_t		seg = Min(strcspn(p, ";/"), len);

		if (seg > 0 && looks_like_token(p, seg))
			hide(out, p, seg, hidden);
		else
			appendBinaryStringInfo(out, p, seg);
		if (seg < len)
			append_params(out, p + seg, p + len, ";", hidden);
		p += len;
		if (p < end)
			appendStringInfoChar(out, *p++);
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

/*
 * The host part after any userinfo: the last '@' before the path ends the
 * userinfo.  When nothing is left of the authority, libcurl reads the path
 * that follows as one ("http://u:p@/h/" is "http://h/"): its userinfo goes
 * too, and so on, each step moving forward.
 */
static const char *
skip_userinfo(const char *authority)
{
	for (;;)
	{
		const char *path = authority + strcspn(authority, "/?#");
		const char *at;

		for (at = path; at > authority && at[-1] != '@'; at--)
			;
		if (at == authority)
			return authority;
		if (at < path || *path != '/')
			return at;
		authority = path;
		while (*authority == '/')
			authority++;
	}
}

/* qc_redact_url(), noting in *hidden (if not NULL) what it hid */
static char *
redact_url_uncached(const char *url, List **hidden)
{
	StringInfoData out;
	const char *authority = authority_start(url);
	const char *host = skip_userinfo(authority);
	const char *end = url + strcspn(url, "#");
	const char *path = host + strcspn(host, "/?#");
	const char *query;

	/*
	 * Text with no scheme is all path (it may be a part of a URL), once its
	 * userinfo is gone; if what is left reads as a URL, it is one.
	 */
	if (authority == url && host != url && authority_start(host) != host)
		return redact_url_uncached(host, hidden);
	if (authority == url)
		path = host;
	initStringInfo(&out);
	/* userinfo: the password, and the user name ("https://TOKEN@host/") */
	for (const char *u = authority; u < host;)
	{
		size_t		len = strcspn(u, ":@");

		note_hidden(u, Min(len, (size_t) (host - u)), hidden);
		u += len + 1;
	}
	if (hidden != NULL && host > authority + 1)
		note_basic_credentials(authority, host - 1 - authority, hidden);
	appendBinaryStringInfo(&out, url, authority - url);
	appendBinaryStringInfo(&out, host, path - host);
	query = memchr(path, '?', end - path);
	append_path(&out, path, query ? query : end, hidden);
	if (query != NULL)
	{
		appendStringInfoChar(&out, '?');
		append_params(&out, query + 1, end, "&;", hidden);
	}
	return escape_controls(out.data);
}

/*
 * The last URL redacted, what it became and what it hid, in
 * TopMemoryContext: a queued request's URL is redacted for its row and
 * again for the secrets of its statement's text (qc_call_secrets), and a
 * statement queues thousands.
 */
static struct
{
	char	   *url;
	char	   *redacted;
	int			nhidden;
	char	  **hidden;
}			last_url;

/* Forget the last URL: an error while remembering the next leaves none. */
static void
forget_last_url(void)
{
	if (last_url.url == NULL)
		return;
	pfree(last_url.url);
	last_url.url = NULL;
	pfree(last_url.redacted);
	for (int i = 0; i < last_url.nhidden; i++)
		pfree(last_url.hidden[i]);
	if (last_url.hidden != NULL)
		pfree(last_url.hidden);
}

static char *
redact_url(const char *url, List **hidden)
{
	if (last_url.url == NULL || strcmp(last_url.url, url) != 0)
	{
		List	   *found = NIL;
		char	   *redacted = redact_url_uncached(url, &found);
		MemoryContext old;
		ListCell   *lc;

		forget_last_url();
		last_url.nhidden = 0;
		last_url.hidden = NULL;
		old = MemoryContextSwitchTo(TopMemoryContext);
		last_url.redacted = pstrdup(redacted);
		if (found != NIL)
			last_url.hidden = palloc(list_length(found) * sizeof(char *));
		foreach(lc, found)
			last_url.hidden[last_url.nhidden++] = pstrdup(lfirst(lc));
		last_url.url = pstrdup(url);
		MemoryContextSwitchTo(old);
	}
	for (int i = 0; hidden != NULL && i < last_url.nhidden; i++)
		*hidden = lappend(*hidden, pstrdup(last_url.hidden[i]));
	return pstrdup(last_url.redacted);
}

static const char *replace_remembered(const char *text);

char *
qc_redact_url(const char *url)
{
	return (char *) replace_remembered(redact_url(url, NULL));
}

/* ---- configured keys ---- */

/*
 * Does out end in the start of a "\u" escape ("\u", "\u0", "\u00",
 * "\u004"), the backslash not itself escaped?  A hex digit decoded there
 * would complete it, and decoding again would change the text.
 */
static bool
ends_in_partial_escape(StringInfo out)
{
	int			i = out->len;
	int			backslashes = 0;

	while (i > 0 && out->len - i < 3 && hex_value(out->data[i - 1]) >= 0)
		i--;
	if (i < 2 || out->data[i - 1] != 'u')
		return false;
	for (i -= 2; i >= 0 && out->data[i] == '\\'; i--)
		backslashes++;
	return backslashes % 2 == 1;
}

/* The ASCII character a JSON escape at p stands for, or -1. */
static int
escaped_char(const char *p)
{
	if (p[1] == '/')
		return '/';
	if (p[1] == 'u' && hex_value(p[2]) == 0 && hex_value(p[3]) >= 0 &&
		hex_value(p[4]) >= 0 && hex_value(p[5]) >= 0)
		return hex_value(p[3]) * 256 + hex_value(p[4]) * 16 + hex_value(p[5]);
	return -1;
}

/*
 * A copy of text with the JSON escapes of printable ASCII characters
 * decoded ("\u0073" is "s", "\/" is "/"); text itself when it has none.
 * Quotes, backslashes and control characters stay escaped, so JSON stays
 * JSON and means the same.
 */
static const char *
decode_json_escapes(const char *text)
{
	StringInfoData out;
	const char *p = text;
	const char *copied = text;

	if (strchr(text, '\\') == NULL)
		return text;
	initStringInfo(&out);
	while ((p = strchr(p, '\\')) != NULL)
	{
		int			c = escaped_char(p);

		if (c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '\'')
		{
			appendBinaryStringInfo(&out, copied, p - copied);
			copied = p;
			if (hex_value((char) c) < 0 || !ends_in_partial_escape(&out))
			{
				appendStringInfoChar(&out, (char) c);
				copied = p + (p[1] == '/' ? 2 : 6);
			}
			p += (p[1] == '/' ? 2 : 6);
		}
		else
			p += (p[1] != '\0') ? 2 : 1;	/* "\\" is one escape */
	}
	if (out.len == 0 && copied == text)
	{
		pfree(out.data);
		return text;
	}
	appendStringInfoString(&out, copied);
	return out.data;
}

/*
 * The ASCII character an HTML numeric character reference at p stands for
 * ("&#47;", "&#x2F;": '/'), and its length in *len; else -1.
 */
static int
referenced_char(const char *p, size_t *len)
{
	const char *q = p + 2;
	bool		hex = (*q == 'x' || *q == 'X');
	int			c = 0;
	int			digits = 0;

	if (hex)
		q++;
	/* four digits at most: enough for ASCII, and no overflow */
	for (; digits < 4; q++, digits++)
	{
		int			d = hex ? hex_value(*q) : (isdigit((unsigned char) *q) ? *q - '0' : -1);

		if (d < 0)
			break;
		c = c * (hex ? 16 : 10) + d;
	}
	if (digits == 0 || *q != ';' || c < 0x20 || c >= 0x7f)
		return -1;
	*len = q + 1 - p;
	return c;
}

/*
 * Would c, appended to out, complete an escape that was not there: a
 * numeric reference ("&#4" then "7;"), a JSON escape ("\u004" then "1";
 * a backslash then anything)?  Decoded there, it would change the text
 * when decoded again.
 */
static bool
completes_escape(StringInfo out, int c)
{
	int			i = out->len;

	if (i > 0 && out->data[i - 1] == '\\')
		return true;
	if (c == '#')
		return i > 0 && out->data[i - 1] == '&';
	if (hex_value((char) c) < 0 && c != 'x' && c != 'X' && c != ';')
		return false;
	if (hex_value((char) c) >= 0 && ends_in_partial_escape(out))
		return true;
	while (i > 0 && out->len - i < 4 && hex_value(out->data[i - 1]) >= 0)
		i--;
	if (i > 0 && (out->data[i - 1] == 'x' || out->data[i - 1] == 'X'))
		i--;
	return i >= 2 && out->data[i - 1] == '#' && out->data[i - 2] == '&';
}

/*
 * A copy of text with the HTML numeric character references of printable
 * ASCII characters decoded ("&#43;", "&#x2F;"), but for those of markup
 * (& < > " ') and the backslash (which would start a JSON escape), so that
 * HTML stays HTML and means the same; text itself when it holds no "&#".  An
 * error page may write a secret so.
 */
static const char *
decode_char_refs(const char *text)
{
	const char *first = strstr(text, "&#");
	StringInfoData out;

	if (first == NULL)
		return text;
	initStringInfo(&out);
	appendBinaryStringInfo(&out, text, first - text);
	for (const char *p = first; *p != '\0';)
	{
		size_t		len;
		int			c = (p[0] == '&' && p[1] == '#') ? referenced_char(p, &len) : -1;

		if (c >= 0 && strchr("&<>\"'\\", c) == NULL && !completes_escape(&out, c))
		{
			appendStringInfoChar(&out, (char) c);
			p += len;
		}
		else
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}

/*
 * Replace every occurrence of key in text, unless key is shorter than
 * min_len; text itself when there is none.
 */
static const char *
replace_key(const char *text, const char *key, size_t min_len)
{
	StringInfoData out;
	const char *p = text;
	const char *hit;
	size_t		keylen = strlen(key);

	if (keylen < min_len || strstr(text, key) == NULL)
		return text;
	initStringInfo(&out);
	while ((hit = strstr(p, key)) != NULL)
	{
		appendBinaryStringInfo(&out, p, hit - p);
		appendStringInfoString(&out, REDACTED);
		p = hit + keylen;
	}
	appendStringInfoString(&out, p);
	return out.data;
}

/*
 * The values user mappings sent from this backend (qc_redact_remember), in
 * TopMemoryContext, the oldest first; and a count of the values ever
 * remembered, which the statement cache compares.
 */
#define MAX_REMEMBERED 256
static List *remembered = NIL;
static uint64 remembered_count = 0;

void
qc_redact_remember(const char *secret)
{
	MemoryContext old;
	ListCell   *lc;

	if (strlen(secret) < MIN_KEY_LENGTH)
		return;
	foreach(lc, remembered)
		if (strcmp(lfirst(lc), secret) == 0)
			return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (list_length(remembered) >= MAX_REMEMBERED)
	{
		pfree(linitial(remembered));
		remembered = list_delete_first(remembered);
	}
	remembered = lappend(remembered, pstrdup(secret));
	MemoryContextSwitchTo(old);
	remembered_count++;
}

/* text with every remembered value replaced (text itself when none occurs) */
static const char *
replace_remembered(const char *text)
{
	ListCell   *lc;

	foreach(lc, remembered)
		text = replace_key(text, lfirst(lc), MIN_KEY_LENGTH);
	return text;
}

const char *
qc_redact_keys(const char *text)
{
	const char *decoded = decode_json_escapes(text);

	return replace_remembered(replace_key(replace_key(replace_key(decoded, qc_llm_api_key, MIN_KEY_LENGTH),
													  qc_search_api_key, MIN_KEY_LENGTH),
										  qc_embed_api_key, MIN_KEY_LENGTH));
}

/*
 * Are the keys qc_redact_keys() uses now (keys: the three configured, and
 * the remembered values by their count) those saved with something it
 * redacted (saved, "" for none, and saved_count)?
 */
static bool
keys_unchanged(char *const *saved, char *const *keys, uint64 saved_count)
{
	if (saved_count != remembered_count)
		return false;
	for (int i = 0; i < 3; i++)
		if (strcmp(saved[i], keys[i] ? keys[i] : "") != 0)
			return false;
	return true;
}

/*
 * Note a secret header's value in *hidden: whole, and word by word, but
 * for the scheme of "Bearer …", which is no secret.
 */
static void
note_header_value(const char *value, List **hidden)
{
	note_hidden(value, strlen(value), hidden);
	for (const char *p = value; *p != '\0';)
	{
		size_t		len = strcspn(p, " \t;,=");

		if (p != value || p[len] != ' ')
			note_hidden(p, len, hidden);
		p += len;
		if (*p != '\0')
			p++;
	}
}

List *
qc_call_secrets(const char *url, const char *final_url, List *headers)
{
	List	   *secrets = NIL;
	ListCell   *lc;

	if (url != NULL)
		(void) redact_url(url, &secrets);
	if (final_url != NULL && (url == NULL || strcmp(final_url, url) != 0))
		(void) redact_url(final_url, &secrets);
	foreach(lc, headers)
	{
		QcHeader   *h = lfirst(lc);

		/* an idempotency key names the request; the queue stores it as is */
		if (qc_name_is_secret(h->name, true) &&
			pg_strcasecmp(h->name, "Idempotency-Key") != 0)
			note_header_value(h->value, &secrets);
	}
	foreach(lc, remembered)
		secrets = lappend(secrets, pstrdup(lfirst(lc)));
	return secrets;
}

/*
 * text, if it ends with the start of secret (MIN_ECHO_LENGTH characters of
 * it or more: a response cut at max_chars, the quote of its start), with
 * that start replaced; else text itself.
 */
static const char *
replace_cut_key(const char *text, const char *secret)
{
	size_t		text_len = strlen(text);
	size_t		len = strlen(secret);
	const char *end = text + text_len;

	if (len <= MIN_ECHO_LENGTH)
		return text;
	/* from the longest start shorter than the secret: whole ones are gone */
	for (const char *p = end - Min(text_len, len - 1); p + MIN_ECHO_LENGTH <= end; p++)
	{
		if (*p == *secret && memcmp(p, secret, end - p) == 0)
			return psprintf("%.*s" REDACTED, (int) (p - text), text);
	}
	return text;
}

const char *
qc_redact_secrets(const char *text, List *secrets)
{
	const char *decoded;
	const char *t;
	ListCell   *lc;

	if (secrets == NIL)
		return text;
	t = decoded = decode_char_refs(decode_json_escapes(text));
	foreach(lc, secrets)
		t = replace_key(t, lfirst(lc), MIN_ECHO_LENGTH);
	foreach(lc, secrets)
		t = replace_cut_key(t, lfirst(lc));
	return t == decoded ? text : t;
}

/*
 * Header values redacted lately (qc_redact_header), with the keys they
 * were redacted with, which the result depends on: the responses of a
 * server repeat most of their headers (Server, Content-Type, Connection),
 * and an async worker redacts those of thousands of responses a second.
 * A direct-mapped cache: a name and value's hash picks the one slot that
 * may hold them, and a new pair takes that slot.  In TopMemoryContext,
 * emptied when the keys change; a long value is not kept.
 */
#define HEADER_MEMO_SLOTS 256
#define HEADER_MEMO_VALUE_MAX 256

typedef struct HeaderMemo
{
	char	   *pair;			/* name, '\0', value; NULL: empty */
	size_t		len;
	char	   *shown;
} HeaderMemo;

static struct
{
	HeaderMemo	slots[HEADER_MEMO_SLOTS];
	char	   *keys[3];		/* NULL until first used */
	uint64		remembered_count;
}			header_memo;

/* Empty the memo, for the keys configured now. */
static void
header_memo_reset(char *const *keys)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	for (int i = 0; i < HEADER_MEMO_SLOTS; i++)
	{
		HeaderMemo *m = &header_memo.slots[i];

		if (m->pair != NULL)
		{
			pfree(m->pair);
			pfree(m->shown);
			m->pair = NULL;
		}
	}
	for (int i = 0; i < lengthof(header_memo.keys); i++)
	{
		if (header_memo.keys[i] != NULL)
			pfree(header_memo.keys[i]);
		header_memo.keys[i] = pstrdup(keys[i] ? keys[i] : "");
	}
	header_memo.remembered_count = remembered_count;
	MemoryContextSwitchTo(old);
}

/* The FNV-1a hash of the len bytes at p. */
static uint32
fnv1a(const char *p, size_t len)
{
	uint32		h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) p[i]) * 16777619u;
	return h;
}

const char *
qc_redact_header(const char *name, const char *value)
{
	char	   *const keys[] = {qc_llm_api_key, qc_search_api_key, qc_embed_api_key};
	size_t		name_len = strlen(name);
	size_t		len = name_len + 1 + strlen(value);
	char	   *pair;
	HeaderMemo *m;
	const char *shown;
	MemoryContext old;

	StaticAssertStmt(lengthof(keys) == lengthof(header_memo.keys),
					 "header_memo.keys must hold every key qc_redact_keys() uses");
	if (len - name_len - 1 > HEADER_MEMO_VALUE_MAX)
		return qc_name_is_secret(name, true) ? REDACTED : qc_redact_text(value);
	if (header_memo.keys[0] == NULL ||
		!keys_unchanged(header_memo.keys, keys, header_memo.remembered_count))
		header_memo_reset(keys);
	pair = palloc(len);
	memcpy(pair, name, name_len + 1);
	memcpy(pair + name_len + 1, value, len - name_len - 1);
	m = &header_memo.slots[fnv1a(pair, len) % HEADER_MEMO_SLOTS];
	if (m->pair != NULL && m->len == len && memcmp(m->pair, pair, len) == 0)
	{
		pfree(pair);
		return pstrdup(m->shown);
	}
	shown = qc_name_is_secret(name, true) ? REDACTED : qc_redact_text(value);
	/* the slot emptied first: an error while copying leaves it empty */
	if (m->pair != NULL)
	{
		pfree(m->pair);
		pfree(m->shown);
		m->pair = NULL;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	m->shown = pstrdup(shown);
	m->pair = palloc(len);
	MemoryContextSwitchTo(old);
	memcpy(m->pair, pair, len);
	m->len = len;
	pfree(pair);
	return shown;
}

char *
qc_redact_echo(const char *text, List *secrets)
{
	return qc_redact_text(qc_redact_secrets(text, secrets));
}

/* ---- free text ---- */

/*
 * The length of the URL at p in text: "http://" or "https://", up to what
 * ends a URL in SQL or JSON (space, a quote, a bracket) and without the
 * punctuation that ends a sentence; 0 if none.
 */
static size_t
url_length(const char *p)
{
	size_t		len;

	if (pg_strncasecmp(p, "http://", 7) != 0 && pg_strncasecmp(p, "https://", 8) != 0)
		return 0;
	len = strcspn(p, " \t\r\n\f\v'\"`<>()[]{}\\");
	/* punctuation after a URL in a sentence ("Requests go to …: check") */
	while (len > 0 && strchr(".,:;!?", p[len - 1]) != NULL)
		len--;
	return len;
}

/* The quote at p: ", ' or \" (JSON inside a JSON string); 0 if none. */
static int
quote_length(const char *p)
{
	if (*p == '"' || *p == '\'')
		return 1;
	return (p[0] == '\\' && p[1] == '"') ? 2 : 0;
}

/*
 * The length of a quoted value up to its closing quote (quote, qlen), over
 * the escapes that keep a quote inside it: a backslash in JSON ("a\"b"), a
 * doubled quote in an SQL literal ('a''b').
 */
static size_t
quoted_length(const char *value, const char *quote, int qlen)
{
	const char *p = value;

	while (*p != '\0')
	{
		if (qlen == 2 && p[0] == '\\' && p[1] == '\\')
			p += 2;
		else if (qlen == 2 && p[0] == '\\' && p[1] == '"')
			break;
		else if (*quote == '"' && qlen == 1 && *p == '\\' && p[1] != '\0')
			p += 2;
		else if (*quote == '\'' && *p == '\'' && p[1] == '\'')
			p += 2;
		else if (qlen == 1 && *p == *quote)
			break;
		else
			p++;
	}
	return p - value;
}

/* The length of a JSON array or object at p, brackets matched; to the end if unmatched. */
static size_t
bracketed_length(const char *p)
{
	const char *s = p;
	int			depth = 0;
	bool		in_string = false;

	for (; *s != '\0'; s++)
	{
		if (in_string)
		{
			if (*s == '\\' && s[1] != '\0')
				s++;
			else if (*s == '"')
				in_string = false;
		}
		else if (*s == '"')
			in_string = true;
		else if (*s == '[' || *s == '{')
			depth++;
		else if ((*s == ']' || *s == '}') && --depth == 0)
			return s + 1 - p;
	}
	return s - p;
}

/*
 * Append the redacted form of the value at p and return its length: a
 * quoted value keeps its quotes; after a quoted name (wrap is its quote),
 * an array or object or a bare value becomes wrap REDACTED wrap.  to_eol:
 * a bare value runs to the end of the line ("Authorization: Bearer …"),
 * else to a delimiter.
 */
static size_t
redact_value(StringInfo out, const char *p, const char *wrap, bool to_eol)
{
	int			qlen = quote_length(p);
	size_t		len;

	if (qlen > 0)
	{
		len = quoted_length(p + qlen, p, qlen);
		appendBinaryStringInfo(out, p, qlen);
		appendStringInfoString(out, REDACTED);
		if (p[qlen + len] != '\0')
		{
			appendBinaryStringInfo(out, p + qlen + len, qlen);
			len += qlen;
		}
		return qlen + len;
	}
	if (wrap[0] != '\0' && (*p == '[' || *p == '{'))
	{
		len = bracketed_length(p);
		/* 'REDACTED' then a quote would read as one literal ('a''b') */
		while (wrap[0] == '\'' && p[len] == '\'')
			len++;
	}
	else if (to_eol)
		len = strcspn(p, "\r\n\"'\\");
	else
	{
		/* after a quoted name, a quote is part of the value: '…', x'…' */
		len = strcspn(p, BARE_VALUE_END);
		while (wrap[0] != '\0' && (qlen = quote_length(p + len)) > 0)
		{
			len += qlen + quoted_length(p + len + qlen, p + len, qlen);
			if (p[len] != '\0')
				len += qlen;
			len += strcspn(p + len, BARE_VALUE_END);
		}
	}
	appendStringInfo(out, "%s" REDACTED "%s", wrap, wrap);
	return len;
}

/*
 * The length of a bare value at p: to what ends one, or, when the value is
 * a URL, to the end of the URL.  A URL is kept or hidden whole: judged only
 * up to a '&' in its userinfo ("x=https://u:p&q@h/…"), it would be kept,
 * and its redaction, dropping that userinfo, would leave a longer bare
 * value to judge when the redacted text is redacted again.
 */
static size_t
bare_value_length(const char *p)
{
	return Max(strcspn(p, BARE_VALUE_END), url_length(p));
}

static size_t
skip_blanks(const char *p)
{
	return strspn(p, " \t");
}

/*
 * At a quoted name that looks secret ("token", 'X-Api-Key', \"key\"),
 * followed by ':', ',', '=' or '=>' and a value: append the name and the
 * redacted value and return the length consumed; else 0.
 */
static size_t
redact_quoted_pair(StringInfo out, const char *p)
{
	int			qlen = quote_length(p);
	const char *name = p + qlen;
	size_t		len = 0;
	const char *q;
	char	   *copy;
	bool		secret;
	char		wrap[3] = {0};

	while (len <= MAX_NAME_LENGTH && IS_NAME_CHAR(name[len]))
		len++;
	if (qlen == 0 || len == 0 || len > MAX_NAME_LENGTH ||
		strncmp(name + len, p, qlen) != 0)
		return 0;
	q = name + len + qlen;
	q += skip_blanks(q);
	if (*q == ':' || *q == ',' || (*q == '=' && q[1] != '>'))
		q++;
	else if (q[0] == '=' && q[1] == '>')
		q += 2;
	else
		return 0;
	q += strspn(q, " \t\r\n");
	if (*q == '\0' || strchr(",;)}]", *q) != NULL)
		return 0;
	copy = pnstrdup(name, len);
	secret = qc_name_is_secret(copy, true);
	pfree(copy);
	if (!secret)
		return 0;
	appendBinaryStringInfo(out, p, q - p);
	memcpy(wrap, p, qlen);
	return (q - p) + redact_value(out, q, wrap, false);
}

/*
 * After an unquoted name in text, already appended (as name, name_len: it
 * may be REDACTED itself), at end: "=value" (a form body, a cookie, part
 * of a query) with a parameter-like secret name or a value that hides a
 * secret, or ": value" with a header-like secret name.  Appends the rest
 * with the value redacted and returns the length consumed from end; else 0.
 */
static size_t
redact_pair_value(StringInfo out, const char *name, size_t name_len, const char *end)
{
	const char *q = end + skip_blanks(end);
	char	   *copy;
	bool		header;
	bool		secret;

	if (name_len > MAX_NAME_LENGTH)
		return 0;
	if (q[0] == '=' && q[1] != '=' && q[1] != '>' &&
		(q == end || quote_length(q + 1 + skip_blanks(q + 1)) > 0))
		header = false;
	else if (q == end && q[0] == ':' && q[1] != ':' && q[1] != '/')
		header = true;
	else
		return 0;
	copy = pnstrdup(name, name_len);
	secret = qc_name_is_secret(copy, header);
	pfree(copy);
	q++;
	if (!secret && !header && q == end + 1 && quote_length(q) == 0 &&
		value_hides_secret(q, bare_value_length(q)))
	{
		appendBinaryStringInfo(out, end, q - end);
		appendStringInfoString(out, REDACTED);
		return (q - end) + bare_value_length(q);
	}
	if (!secret)
		return 0;
	q += skip_blanks(q);
	if (*q == '\0' || (header && (*q == '\r' || *q == '\n')))
		return 0;
	appendBinaryStringInfo(out, end, q - end);
	return (q - end) + redact_value(out, q, "", header);
}

/* Append REDACTED for [p, end), and what follows as redact_pair_value does. */
static size_t
replace_run(StringInfo out, const char *p, const char *end)
{
	appendStringInfoString(out, REDACTED);
	return (end - p) + redact_pair_value(out, REDACTED, strlen(REDACTED), end);
}

/*
 * At the start of a run of name characters [p, end): a token in it, a
 * bot token, a path segment (in_path: after a '/') that looks like a token,
 * "Bearer <token>", or a secret pair; append what is kept and return the
 * length consumed.  Else append the run.
 */
static size_t
redact_run(StringInfo out, const char *p, const char *end, const char *text_end,
		   bool in_path)
{
	const char *last_digit = NULL;
	const char *token;
	size_t		len;

	for (const char *s = p; s < end; s++)
		if (isdigit((unsigned char) *s))
			last_digit = s;
	if (*end == ':' && (len = bot_token_length(p, text_end)) > 0)
		return replace_run(out, p, p + len);
	if (in_path && strchr("/?;#'\"", *end) != NULL && looks_like_token(p, end - p))
		return replace_run(out, p, end);
	if ((token = token_in_run(p, end, last_digit)) != NULL)
	{
		char	   *name = psprintf("%.*s" REDACTED, (int) (token - p), p);

		appendBinaryStringInfo(out, p, token - p);
		appendStringInfoString(out, REDACTED);
		return (end - p) + redact_pair_value(out, name, strlen(name), end);
	}
	if (end - p == 6 && pg_strncasecmp(p, "bearer", 6) == 0 && *end == ' ' &&
		end[1] != '\0' && !isspace((unsigned char) end[1]))
	{
		appendBinaryStringInfo(out, p, 7);
		return 7 + redact_value(out, end + 1, "", false);
	}
	appendBinaryStringInfo(out, p, end - p);
	return (end - p) + redact_pair_value(out, p, end - p, end);
}

char *
qc_redact_text(const char *text)
{
	const char *start = qc_redact_keys(text);
	const char *text_end = start + strlen(start);
	const char *p = start;
	StringInfoData out;

	initStringInfo(&out);
	while (*p != '\0')
	{
		bool		word_start = (p == start || !IS_NAME_CHAR(p[-1]));
		size_t		len;

		if (word_start && (len = url_length(p)) > 0)
		{
			char	   *url = pnstrdup(p, len);

			appendStringInfoString(&out, qc_redact_url(url));
			pfree(url);
			p += len;
		}
		else if ((len = redact_quoted_pair(&out, p)) > 0)
			p += len;
		else if (word_start && IS_NAME_CHAR(*p))
		{
			const char *end = p;

			while (IS_NAME_CHAR(*end))
				end++;
			p += redact_run(&out, p, end, text_end, p > start && p[-1] == '/');
		}
		else
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}

/*
 * The last statement redacted, with the keys it was redacted with (the
 * result depends on them), in TopMemoryContext.  One statement makes many
 * calls (a batch, a query over a table, 20,000 web_fetch calls in one
 * SELECT), and each audit row carries it: it is redacted once, not for
 * every row.
 */
static struct
{
	char	   *sql;
	char	   *keys[3];
	uint64		remembered_count;
	char	   *redacted;
}			statement_cache;

/* Is the cached statement sql, redacted with the keys configured now? */
static bool
statement_cached(const char *sql, char *const *keys)
{
	return statement_cache.sql != NULL && strcmp(statement_cache.sql, sql) == 0 &&
		keys_unchanged(statement_cache.keys, keys, statement_cache.remembered_count);
}

char *
qc_redact_statement(const char *sql)
{
	char	   *const keys[] = {qc_llm_api_key, qc_search_api_key, qc_embed_api_key};
	char	   *redacted;
	MemoryContext old;

	StaticAssertStmt(lengthof(keys) == lengthof(statement_cache.keys),
					 "statement_cache.keys must hold every key qc_redact_keys() uses");
	if (statement_cached(sql, keys))
		return pstrdup(statement_cache.redacted);
	redacted = qc_redact_text(sql);
	/* forget the last one first: an error while copying leaves no cache */
	if (statement_cache.sql != NULL)
	{
		pfree(statement_cache.sql);
		statement_cache.sql = NULL;
		pfree(statement_cache.redacted);
		for (int i = 0; i < lengthof(keys); i++)
			pfree(statement_cache.keys[i]);
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	for (int i = 0; i < lengthof(keys); i++)
		statement_cache.keys[i] = pstrdup(keys[i] ? keys[i] : "");
	statement_cache.redacted = pstrdup(redacted);
	statement_cache.remembered_count = remembered_count;
	statement_cache.sql = pstrdup(sql);
	MemoryContextSwitchTo(old);
	return redacted;
}
