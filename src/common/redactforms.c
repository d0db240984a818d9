/*-------------------------------------------------------------------------
 *
 * redactforms.c
 *	  The forms in which a server may echo back a value a user mapping
 *	  sends (redact.h: qc_mapping_secrets).
 *
 * A role with USAGE on a server may send its PUBLIC mapping's key without
 * being able to read it (pg_user_mappings shows it NULL).  What the server
 * sends back is scrubbed of the key before that role sees it
 * (qc_redact_secrets), but a server rarely echoes a value exactly as it
 * was sent: an error page quotes the token after "Bearer " alone, a log
 * line joins words with two spaces, a framework decodes the query string
 * and writes it again with "+" for a space or lower-case escapes.  So the
 * secrets of a mapping are not its values alone but every form listed
 * here, built once when the mapping is read (servers.c keeps them with
 * it), so that a call pays nothing more than the search for them, and a
 * call under no mapping nothing at all:
 *
 * - a header value whole, each of its words (split at white space, commas,
 *   semicolons and quotes), and the value of a word that is a
 *   "name=value" pair (Digest, AWS signatures); Basic credentials also
 *   decoded, as user:password and each alone;
 * - a query value as written, %XX-decoded, and decoded again with "+" for
 *   a space;
 * - each of these percent-encoded as libraries write it (upper or lower
 *   case escapes, "+" for a space, or what a path may hold left as it is),
 *   and JSON-escaped.
 *
 * A form shorter than 8 characters is no secret worth searching for: it
 * would hide common words of every response ("Bearer", "Basic", "en-US",
 * "v=2").  What a server transforms otherwise (changes the case, hashes,
 * encodes in base64, writes as HTML character references in a body
 * returned raw, splits across lines) is not recognised: see
 * docs/security.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/base64.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "compat.h"
#include "header.h"
#include "redact.h"

/* The shortest form searched for */
#define MIN_FORM_LENGTH 8

/* How a value may be percent-encoded */
typedef enum PercentStyle
{
	PCT_UPPER,					/* all but RFC 3986's unreserved as %XX */
	PCT_LOWER,					/* the same as %xx */
	PCT_FORM,					/* the same, a space as "+" (HTML forms) */
	PCT_PATH					/* what a URL's path may hold left as it is */
} PercentStyle;

static bool
is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

static char *
percent_encode(const char *value, PercentStyle style)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const unsigned char *c = (const unsigned char *) value; *c != '\0'; c++)
	{
		if (is_unreserved(*c) ||
			(style == PCT_PATH && strchr("/:@!$&'()*+,;=", *c) != NULL))
			appendStringInfoChar(&out, (char) *c);
		else if (style == PCT_FORM && *c == ' ')
			appendStringInfoChar(&out, '+');
		else
			appendStringInfo(&out, style == PCT_LOWER ? "%%%02x" : "%%%02X", *c);
	}
	return out.data;
}

/* value as it stands inside a JSON string: quotes and backslashes escaped */
static char *
json_escaped(const char *value)
{
	StringInfoData out;

	initStringInfo(&out);
	escape_json(&out, value);
	out.data[out.len - 1] = '\0';
	return out.data + 1;
}

/* Add form to forms unless it is too short or there already. */
static List *
add_form(List *forms, const char *form)
{
	ListCell   *lc;

	if (strlen(form) < MIN_FORM_LENGTH)
		return forms;
	foreach(lc, forms)
		if (strcmp(lfirst(lc), form) == 0)
			return forms;
	return lappend(forms, pstrdup(form));
}

/* Add value, and the ways a server may write it: percent-encoded, in JSON. */
static List *
add_written(List *forms, const char *value)
{
	forms = add_form(forms, value);
	for (int style = PCT_UPPER; style <= PCT_PATH; style++)
		forms = add_form(forms, percent_encode(value, (PercentStyle) style));
	return add_form(forms, json_escaped(value));
}

/*
 * Basic credentials ("Basic dXNlcjpwYXNz"), decoded: user:password, and
 * the user and the password alone.
 */
static List *
add_basic(List *forms, const char *value)
{
	const char *encoded;
	size_t		len;
	char	   *decoded;
	int			n;
	char	   *colon;

	if (pg_strncasecmp(value, "basic", 5) != 0 || (value[5] != ' ' && value[5] != '\t'))
		return forms;
	encoded = value + 5 + strspn(value + 5, " \t");
	len = strcspn(encoded, " \t");
	decoded = palloc(pg_b64_dec_len(len) + 1);
	n = qc_b64_decode(encoded, len, decoded, pg_b64_dec_len(len));
	if (n <= 0 || memchr(decoded, '\0', n) != NULL)
		return forms;
	decoded[n] = '\0';
	forms = add_written(forms, decoded);
	if ((colon = strchr(decoded, ':')) != NULL)
	{
		forms = add_written(forms, colon + 1);
		*colon = '\0';
		forms = add_written(forms, decoded);
	}
	return forms;
}

/*
 * A header's value: whole, each word (the token after "Bearer "), the
 * value of a word that is "name=value" (a quoted value is a word of its
 * own), and Basic credentials decoded.
 */
static List *
add_header_value(List *forms, const char *value)
{
	forms = add_written(forms, value);
	for (const char *p = value; *p != '\0';)
	{
		size_t		len = strcspn(p, " \t,;\"'");
		char	   *word = pnstrdup(p, len);
		char	   *eq = strchr(word, '=');

		forms = add_written(forms, word);
		if (eq != NULL && eq > word)
			forms = add_written(forms, eq + 1);
		p += len;
		if (*p != '\0')
			p++;
	}
	return add_basic(forms, value);
}

/*
 * The values of query parameters (name=value&..., or a value alone): as
 * written, %XX-decoded, and decoded with "+" for a space too.
 */
static List *
add_query_values(List *forms, const char *query)
{
	for (const char *p = query; *p != '\0';)
	{
		size_t		len = strcspn(p, "&;");
		const char *eq = memchr(p, '=', len);
		const char *value = eq ? eq + 1 : p;
		size_t		value_len = p + len - value;
		char	   *plus = pnstrdup(value, value_len);

		forms = add_form(forms, plus);
		forms = add_written(forms, qc_percent_decode(value, value_len));
		for (char *c = plus; *c != '\0'; c++)
			if (*c == '+')
				*c = ' ';
		forms = add_written(forms, qc_percent_decode(plus, value_len));
		p += len;
		if (*p != '\0')
			p++;
	}
	return forms;
}

/* Longest first: a secret that holds another is replaced whole. */
static int
longest_first(const ListCell *a, const ListCell *b)
{
	size_t		alen = strlen(lfirst(a));
	size_t		blen = strlen(lfirst(b));

	return alen > blen ? -1 : alen < blen ? 1 : strcmp(lfirst(a), lfirst(b));
}

List *
qc_mapping_secrets(List *headers, const char *query)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext work = AllocSetContextCreate(caller, "queryclaw secret forms",
											   ALLOCSET_DEFAULT_SIZES);
	List	   *forms = NIL;
	List	   *kept = NIL;
	ListCell   *lc;

	MemoryContextSwitchTo(work);
	foreach(lc, headers)
		forms = add_header_value(forms, ((const QcHeader *) lfirst(lc))->value);
	if (query != NULL)
		forms = add_query_values(forms, query);
	list_sort(forms, longest_first);
	MemoryContextSwitchTo(caller);
	foreach(lc, forms)
		kept = lappend(kept, pstrdup(lfirst(lc)));
	MemoryContextDelete(work);
	return kept;
}
