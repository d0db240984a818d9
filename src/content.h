/*-------------------------------------------------------------------------
 *
 * content.h
 *	  Turning response bodies into text that is valid in the database.
 *
 * charset.c names character sets and converts bodies; html.c decides an
 * HTML page's charset and turns the page into text, its main content as
 * text or Markdown, or its metadata (with text.c, article.c, markdown.c
 * and metadata.c, whose shared internals are in html.h).  None of it needs
 * a network or a fixture server: html_to_text() exposes the same code to
 * SQL for stored HTML.
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

/*
 * The charset named by a Content-Type header value ("text/html;
 * charset=ISO-8859-1" gives "iso-8859-1"), palloc'd in lower case, or NULL.
 */
extern char *qc_content_type_charset(const char *content_type);

/*
 * Does this Content-Type (possibly NULL) denote HTML / JSON / some kind of
 * text that can be returned as is?
 */
extern bool qc_content_type_is_html(const char *content_type);
extern bool qc_content_type_is_json(const char *content_type);
extern bool qc_content_type_is_text(const char *content_type);

/*
 * Convert len bytes in the named charset (NULL: UTF-8) into the database
 * encoding.  An unknown charset name is treated as UTF-8.
 */
extern char *qc_to_server_text(const char *data, size_t len, const char *charset);

/*
 * Text in the database encoding that is valid there: s itself when it is,
 * else a palloc'd copy in which each invalid sequence is replaced by U+FFFD
 * (or '?' where the database encoding cannot hold it).  The last guard
 * before text built from several sources (an error message, an audit row,
 * a result object) is stored or sent.  NULL gives NULL.
 */
extern char *qc_valid_text(const char *s);

/*
 * The iconv name of the encoding a charset label denotes ("latin1" gives
 * "WINDOWS-1252", as browsers decide), or NULL for an unknown label.
 */
extern const char *qc_charset_lookup(const char *label);

/*
 * Decode len bytes in the named charset into palloc'd UTF-8 with no NUL
 * and no invalid sequence; *outlen receives its length.  A byte order mark
 * overrides the charset.  NULL or an unknown charset means UTF-8.
 */
extern char *qc_to_utf8(const char *data, size_t len, const char *charset,
						size_t *outlen);

/* What HTML is turned into */
typedef enum QcHtmlFormat
{
	QC_HTML_NONE,				/* nothing: only the metadata is wanted */
	QC_HTML_TEXT,				/* all readable text */
	QC_HTML_ARTICLE,			/* the main content, as text */
	QC_HTML_MARKDOWN			/* the main content, as Markdown */
} QcHtmlFormat;

/*
 * The charset label to decode an HTML body with, decided as browsers
 * decide it: header_charset (the HTTP header's, or NULL) if known, else a
 * <meta> declaration in the first 1024 bytes, else "utf-8" when the bytes
 * look like UTF-8, else "windows-1252".  (A byte order mark, which
 * overrides all of these, is seen to by qc_to_utf8().)
 */
extern const char *qc_html_charset(const char *html, size_t len,
								   const char *header_charset);

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

/*
 * Cut s (database encoding, NUL-terminated) in place to at most max_chars
 * characters, on a character boundary.  Returns true when it cut.
 */
extern bool qc_clip_chars(char *s, int max_chars);

/*
 * Does s (database encoding) have more than max_chars characters?  Looks
 * at no more than that many, however long s is.
 */
extern bool qc_exceeds_chars(const char *s, int max_chars);

/*
 * Is data (len bytes) valid UTF-8 without NUL bytes?  Checked a window at
 * a time, with interrupts checked between windows.
 */
extern bool qc_is_utf8(const char *data, size_t len);

/* Number of characters in s (database encoding). */
extern int	qc_count_chars(const char *s);

#endif							/* QC_CONTENT_H */
