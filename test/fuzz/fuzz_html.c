/*-------------------------------------------------------------------------
 *
 * fuzz_html.c
 *	  Fuzz target: HTML to text and page metadata (src/content/html.c, src/content/text.c,
 *	  src/content/metadata.c, with src/common/charset.c deciding and converting the
 *	  character set).
 *
 * Input: one byte choosing the Content-Type charset (none, or one of a few
 * labels, an unknown one included), then the body.  Properties checked
 * besides memory safety and the absence of any ERROR: the text is valid
 * UTF-8 (the database encoding) without NUL bytes, does not end in blanks
 * (only <pre> keeps the blanks it starts with), and cutting it to any
 * number of characters gives valid text; the metadata from the same parse
 * is a JSON document PostgreSQL's parser accepts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"

#include "content.h"
#include "shim.h"
#include "fuzz_content.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text;
	char	   *metadata = NULL;
	size_t		len;

	if (size < 1)
		return 0;
	text = qc_html_convert((const char *) data + 1, size - 1,
						   qc_fuzz_charset(data[0]), QC_HTML_TEXT, NULL, &metadata);
	qc_fuzz_check_text(text, data[0]);
	len = strlen(text);
	FUZZ_CHECK(len == 0 || (text[len - 1] != ' ' && text[len - 1] != '\n'),
			   "the text ends in blanks");

	FUZZ_CHECK(metadata != NULL, "no metadata");
	qc_fuzz_check_text(metadata, data[0]);
	FUZZ_CHECK(pg_parse_json(makeJsonLexContextCstringLen(metadata, strlen(metadata), PG_UTF8, true),
							 &nullSemAction) == JSON_SUCCESS,
			   "the metadata is not JSON");
	qc_fuzz_reset();
	return 0;
}
