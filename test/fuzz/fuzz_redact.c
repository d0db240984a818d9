/*-------------------------------------------------------------------------
 *
 * fuzz_redact.c
 *	  Fuzz target: the redactor (src/common/redact.c) on free text, statements and
 *	  URLs.
 *
 * Input: one flags byte, then text.  The flags choose where a known secret
 * is planted in the text, and in which spelling: after a secret-looking
 * header name, JSON key or form field, in a query or ";" parameter, as a
 * path segment, with a token prefix, JSON-escaped, or as a configured API
 * key.  Properties checked besides memory safety and the absence of any
 * ERROR:
 * - the planted secret never survives qc_redact_text() (nor
 *   qc_redact_url() when planted in a URL's parameters or path), nor
 *   qc_redact_echo() when the call's URL or headers held it and the text
 *   holds it bare;
 * - a value a user mapping sends, echoed in any form a server writes it
 *   (a header's word alone or spaced, percent-encoded, a query value
 *   decoded or encoded again, JSON-escaped, as HTML character references),
 *   never survives qc_redact_secrets() with the mapping's secrets
 *   (qc_mapping_secrets, redactforms.c);
 * - redacting twice changes nothing: qc_redact_text(), qc_redact_url() and
 *   qc_redact_secrets() are idempotent;
 * - every call on text of any length finishes (libFuzzer's -timeout);
 *   the output is at most a few times longer than the input.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "guc.h"
#include "http.h"
#include "redact.h"
#include "shim.h"

/* The settings redact.c reads (guc.c is not linked) */
char	   *qc_llm_api_key = "cfgkey-7Hq2Lz9Wd";
char	   *qc_search_api_key = "srchkey-4Fv8Tn1Pc";
char	   *qc_embed_api_key = "mbdkey-2Rk6Yp3Qs";

/* The secret planted; its letters and digits appear in nothing else. */
#define SECRET "Zq7Xw3Vy9Ju2"

/*
 * Templates for the planted secret: %s is the text before, %s the
 * secret's spelling, %s the text after.  A template that plants in a URL
 * says so (it is also checked through qc_redact_url).
 */
static const struct
{
	const char *format;
	bool		url;
}			templates[] = {
	{"%s\n.\n{\"X-Api-Key\": \"%s\"} %s", false},
	{"%s\n.\n'Authorization', 'Bearer %s' %s", false},
	{"%s\n.\nAuthorization: Bearer %s\n%s", false},
	{"%s\n.\npassword=%s&user=x %s", false},
	{"%s\n.\n{\"a\":[{\"client_secret\":\"%s\"}]} %s", false},
	{"%s\n.\n{\"deep\": {\"Session-Id\": [\"%s\", 1]}} %s", false},
	{"%s\n.\nhttp://h.example/p?api%%5Fkey=%s&q=1 %s", true},
	{"%s\n.\nhttp://h.example/p?Access_Token=%s %s", true},
	{"%s\n.\nhttp://h.example/p;jsessionid=%s?q=1 %s", true},
	{"%s\n.\nhttp://u:%s@h.example/ %s", true},
	{"%s\n.\nhttp://h.example/a/sk-%s/b %s", true},
	{"%s\n.\nhttp://h.example/bot123456:AAH%sAAAAAAAAAAAAA/send %s", true},
	{"%s\n.\nhttp://h.example/%s%s/x %s", true},
	{"%s\n.\nghp_%s %s", false},
	{"%s\n.\nxoxb-%s %s", false},
	{"%s\n.\n\"token\": \"%s\" %s", false},
};

/* The spellings of the secret: plain, and JSON-escaped in two ways. */
static const char *
spelling(int which)
{
	switch (which)
	{
		case 1:
			/* "Z" as \u005a, and 'q' as \u0071 */
			return "\\u005a\\u00717Xw3Vy9Ju2";
		default:
			return SECRET;
	}
}

static void
check(const char *text, bool url)
{
	char	   *shown = qc_redact_text(text);

	FUZZ_CHECK(strstr(shown, SECRET) == NULL, "a planted secret survived qc_redact_text");
	FUZZ_CHECK(strstr(shown, qc_llm_api_key) == NULL &&
			   strstr(shown, qc_search_api_key) == NULL,
			   "an API key survived qc_redact_text");
	FUZZ_CHECK(strcmp(qc_redact_text(shown), shown) == 0,
			   "redacting redacted text changed it");
	FUZZ_CHECK(strlen(shown) <= 3 * strlen(text) + 16, "the redacted text grew too much");
	if (url)
	{
		const char *start = strstr(text, "http://");
		char	   *end = pstrdup(start);
		char	   *shown_url;

		end[strcspn(end, " \t\r\n")] = '\0';
		shown_url = qc_redact_url(end);
		FUZZ_CHECK(strstr(shown_url, SECRET) == NULL, "a planted secret survived qc_redact_url");
	}
}

/*
 * A secret a call carried (in its URL, in a header) and a server echoed
 * back bare, in text, never survives qc_redact_echo().
 */
static void
check_echo(const char *before, const char *secret, const char *after, int where)
{
	QcHeader	header = {"X-Api-Key", SECRET};
	const char *url = where == 0 ? "http://h.example/p?api_key=" SECRET :
		where == 1 ? "http://u:" SECRET "@h.example/" : "http://h.example/";
	char	   *shown = qc_redact_echo(psprintf("%s%s%s", before, secret, after),
									   qc_call_secrets(url, NULL,
													   where == 2 ? list_make1(&header) : NIL));

	FUZZ_CHECK(strstr(shown, SECRET) == NULL, "an echoed secret survived qc_redact_echo");
}

/*
 * A mapping: a header whose word is SECRET, and a query value that decodes
 * to "Qm4Nb/8Kd 2Tz=5" ("+" for the space).  The spellings of a server
 * echoing them: the word alone and spaced, the header encoded, the query
 * value as sent, decoded with and without "+" as a space, encoded again
 * (lower case, a path's way), JSON-escaped, as HTML references.
 */
#define MAPPING_HEADER "acct " SECRET " realm"
#define MAPPING_QUERY "v=2&k=Qm4Nb%2F8Kd+2Tz%3D5"
static const char *const mapping_echoes[] = {
	SECRET, "acct  " SECRET "  realm", "acct%20" SECRET "%20realm",
	"Qm4Nb%2F8Kd+2Tz%3D5", "Qm4Nb/8Kd 2Tz=5", "Qm4Nb/8Kd+2Tz=5",
	"Qm4Nb%2f8Kd%202Tz%3d5", "Qm4Nb/8Kd%202Tz=5", "Qm4Nb\\/8Kd 2Tz\\u003d5",
	"Qm4Nb&#47;8Kd&#x20;2Tz&#61;5",
	"&#81;&#x6D;&#52;&#x4E;&#98;&#x2F;&#56;&#x4B;&#100;&#x20;&#50;&#x54;&#122;&#x3D;&#53;",
};

static void
check_mapping_echo(const char *text, const char *before, const char *after, int which)
{
	QcHeader	header = {"X-Acct", MAPPING_HEADER};
	List	   *secrets = qc_mapping_secrets(list_make1(&header), MAPPING_QUERY);
	const char *shown = qc_redact_secrets(text, secrets);
	const char *echoed;

	FUZZ_CHECK(strcmp(qc_redact_secrets(shown, secrets), shown) == 0,
			   "clearing cleared text of a mapping's secrets changed it");
	if (before == NULL)
		return;
	echoed = qc_redact_secrets(psprintf("%s%s%s", before, mapping_echoes[which], after),
							   secrets);
	FUZZ_CHECK(strstr(echoed, SECRET) == NULL && strstr(echoed, "Qm4Nb") == NULL &&
			   strstr(echoed, "2Tz") == NULL,
			   "an echoed mapping value survived qc_redact_secrets");
	FUZZ_CHECK(strcmp(qc_redact_secrets(echoed, secrets), echoed) == 0,
			   "clearing cleared text of a mapping's secrets changed it");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text;
	int			flags;
	int			t;
	char	   *cut;
	const char *before;
	const char *after;
	char	   *planted;

	if (size < 1)
		return 0;
	flags = data[0];
	text = qc_fuzz_cstring(data + 1, size - 1);

	/* the text as it is: idempotence, no configured key left */
	{
		char	   *shown = qc_redact_text(text);
		char	   *shown_url = qc_redact_url(text);

		FUZZ_CHECK(strcmp(qc_redact_text(shown), shown) == 0,
				   "redacting redacted text changed it");
		FUZZ_CHECK(strcmp(qc_redact_url(shown_url), shown_url) == 0,
				   "redacting a redacted URL changed it");
		FUZZ_CHECK(strstr(shown, qc_llm_api_key) == NULL &&
				   strstr(shown, qc_search_api_key) == NULL,
				   "an API key survived qc_redact_text");
	}

	/*
	 * A secret planted in the text, which is split in two around it, after
	 * a line holding only "." (which ends any value the text before left
	 * open).  Text with a quote or a backslash before it could still change
	 * what the template means, and text that already holds the secret (or
	 * makes it from escapes) would leave it in plain view: neither is
	 * checked.
	 */
	t = (flags & 0x7f) % lengthof(templates);
	cut = text + strlen(text) / 2;
	before = pnstrdup(text, cut - text);
	after = cut;
	if (flags & 0x80)
		planted = psprintf("%s\n.\n%s %s", before, qc_llm_api_key, after);
	else if (strstr(templates[t].format, "%s%s") != NULL)
		planted = psprintf(templates[t].format, before, "a1b2c3d4e5f6g7h8", SECRET, after);
	else
		planted = psprintf(templates[t].format, before, spelling((flags >> 4) & 1), after);
	if (strchr(before, '\\') == NULL && strchr(before, '"') == NULL &&
		strchr(before, '\'') == NULL && strchr(after, '\\') == NULL &&
		strstr(text, "Xw3") == NULL)
	{
		check(planted, templates[t].url && !(flags & 0x80) &&
			  strstr(templates[t].format, "%s%s") == NULL &&
			  strchr(before, '#') == NULL && strchr(before, 'h') == NULL);
		check_echo(before, spelling((flags >> 4) & 1), after, t % 3);
	}
	/* text that holds none of the mapping's value, nor makes it from escapes */
	check_mapping_echo(text, NULL, NULL, 0);
	if (strchr(before, '\\') == NULL && strstr(text, "Xw3") == NULL &&
		strstr(text, "Qm4") == NULL && strstr(text, "2Tz") == NULL)
		check_mapping_echo(text, before, after, flags % lengthof(mapping_echoes));

	qc_fuzz_reset();
	return 0;
}
