/*-------------------------------------------------------------------------
 *
 * fuzz_charset.c
 *	  Fuzz target: content types, charset labels and the conversion of
 *	  bodies into text (src/common/charset.c).
 *
 * Input: one byte choosing a charset, then the body.  The body is also
 * read, up to its first NUL, as a Content-Type value.  Properties checked
 * besides memory safety and the absence of any ERROR: the converted text
 * is valid UTF-8 with no NUL byte and the length reported; a charset found
 * in a Content-Type is in lower case; cutting the text is safe; the last
 * guard, qc_valid_text(), leaves valid text alone and makes the rest valid.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "content.h"
#include "shim.h"
#include "fuzz_content.h"

static void
check_content_type(const char *value)
{
	char	   *charset = qc_content_type_charset(value);

	if (charset != NULL)
	{
		FUZZ_CHECK(charset[0] != '\0', "an empty charset found");
		for (const char *c = charset; *c; c++)
			FUZZ_CHECK(!(*c >= 'A' && *c <= 'Z'), "a charset not in lower case");
		(void) qc_charset_lookup(charset);
	}
	(void) qc_content_type_is_html(value);
	(void) qc_content_type_is_json(value);
	(void) qc_content_type_is_text(value);
}

/*
 * The last guard, on the body read as text up to its first NUL: valid,
 * unchanged when it was valid, and qc_is_utf8() agrees with the verifier.
 */
static void
check_valid_text(const char *s, const char *body, size_t len)
{
	char	   *valid = qc_valid_text(s);
	int			slen = strlen(s);
	bool		was_valid = pg_encoding_verifymbstr(PG_UTF8, s, slen) == slen;

	FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, valid, strlen(valid)) == strlen(valid),
			   "qc_valid_text() returned invalid text");
	FUZZ_CHECK(!was_valid || valid == s, "qc_valid_text() changed valid text");
	FUZZ_CHECK(qc_is_utf8(body, len) ==
			   (pg_encoding_verifymbstr(PG_UTF8, body, len) == len),
			   "qc_is_utf8() disagrees with the verifier");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body;
	size_t		len;
	size_t		utf8len;
	char	   *utf8;
	char	   *text;

	if (size < 1)
		return 0;
	body = (const char *) data + 1;
	len = size - 1;
	check_content_type(qc_fuzz_cstring(data + 1, len));

	utf8 = qc_to_utf8(body, len, qc_fuzz_charset(data[0]), &utf8len);
	FUZZ_CHECK(utf8[utf8len] == '\0' && strlen(utf8) == utf8len,
			   "decoded text holds a NUL byte or has the wrong length");
	FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, utf8, utf8len) == utf8len,
			   "decoded text is not valid UTF-8");

	text = qc_to_server_text(body, len, qc_fuzz_charset(data[0]));
	FUZZ_CHECK(strcmp(text, utf8) == 0, "server text differs from the decoded text");
	qc_fuzz_check_text(text, data[0]);
	check_valid_text(qc_fuzz_cstring(data + 1, len), body, len);
	qc_fuzz_reset();
	return 0;
}
