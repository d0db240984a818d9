/*-------------------------------------------------------------------------
 *
 * content.h
 *	  Turning response bodies into text that is valid in the database.
 *
 * charset.c names character sets and converts bodies (charset.h, included
 * here); html.c decides an HTML page's charset and parses it; content.c
 * turns the page into text, its main content as text or Markdown, or its
 * metadata (with text.c, article.c, markdown.c and metadata.c, whose
 * shared internals are in html.h).  None of it needs a network or a
 * fixture server: html_to_text() exposes the same code to SQL for stored
 * HTML.
 *
 * Every function here returns palloc'd text in the database encoding that
 * contains no NUL byte and no invalid sequence: bytes that cannot be
 * decoded become U+FFFD (or '?' where the database encoding cannot hold
 * U+FFFD), so a hostile body can never put invalid text into a table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CONTENT_H
#define QC_CONTENT_H

#include "charset.h"

/* What HTML is turned into */
typedef enum QcHtmlFormat
{
	QC_HTML_NONE,				/* nothing: only the metadata is wanted */
	QC_HTML_TEXT,				/* all readable text */
	QC_HTML_ARTICLE,			/* the main content, as text */
	QC_HTML_MARKDOWN			/* the main content, as Markdown */
} QcHtmlFormat;

/*
 * HTML bytes in the given format, in the database encoding (NULL for
 * QC_HTML_NONE).  charset is the HTTP header's charset or NULL (see
 * qc_html_charset); base_url, if not NULL, is what relative links are
 * resolved against.  When metadata is not NULL, *metadata receives the
 * page's metadata as a JSON object, in the database encoding, from the same
 * parse.
 */
extern char *qc_html_convert(const char *html, size_t len, const char *charset,
							 QcHtmlFormat format, const char *base_url,
							 char **metadata);

#endif							/* QC_CONTENT_H */
