/*-------------------------------------------------------------------------
 *
 * fuzz_html.c
 *	  Fuzz target: HTML to text (src/html.c, with src/charset.c deciding
 *	  and converting the character set).
 *
 * Input: one byte choosing the Content-Type charset (none, or one of a few
 * labels, an unknown one included), then the body.  Properties checked
 * besides memory safety and the absence of any ERROR: the text is valid
 * UTF-8 (the database encoding) without NUL bytes, does not end in blanks
 * (only <pre> keeps the blanks it starts with), and cutting it to any
 * number of characters gives valid text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "content.h"
#include "shim.h"
#include "fuzz_charsets.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *charset;
	char	   *text;
	size_t		len;

	if (size < 1)
		return 0;
	charset = qc_fuzz_charset(data[0]);
	text = qc_html_to_text((const char *) data + 1, size - 1, charset);
	len = strlen(text);
	FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, text, len) == len,
			   "the text is not valid UTF-8");
	FUZZ_CHECK(len == 0 || (text[len - 1] != ' ' && text[len - 1] != '\n'),
			   "the text ends in blanks");
	qc_fuzz_check_clip(text, data[0]);
	qc_fuzz_reset();
	return 0;
}
