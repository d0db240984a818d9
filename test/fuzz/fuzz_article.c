/*-------------------------------------------------------------------------
 *
 * fuzz_article.c
 *	  Fuzz target: the main content of a page, as text or as Markdown
 *	  (src/content/article.c, src/content/markdown.c, on src/content/html.c's tree).
 *
 * Input: one byte, then the body.  The byte chooses the Content-Type
 * charset (as in fuzz_html.c), the format (article or markdown) and whether
 * relative links are resolved against a base URL.  Properties checked
 * besides memory safety and the absence of any ERROR: the result is valid
 * UTF-8 without NUL bytes, and cutting it to any number of characters
 * gives valid text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "content.h"
#include "shim.h"
#include "fuzz_content.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text;

	if (size < 1)
		return 0;
	text = qc_html_convert((const char *) data + 1, size - 1,
						   qc_fuzz_charset(data[0]),
						   (data[0] & 0x40) ? QC_HTML_MARKDOWN : QC_HTML_ARTICLE,
						   (data[0] & 0x80) ? "https://example.com/docs/page?x=1" : NULL,
						   NULL);
	qc_fuzz_check_text(text, data[0]);
	qc_fuzz_reset();
	return 0;
}
