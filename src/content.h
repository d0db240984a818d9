/*-------------------------------------------------------------------------
 *
 * content.h
 *	  Turning response bodies into text that is valid in the database.
 *
 * charset.c decides a body's character set and converts it; html.c turns
 * HTML into readable text.  Neither needs a network or a fixture server:
 * html_to_text() exposes the same code to SQL for stored HTML.
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

/*
 * HTML bytes to readable text in the database encoding.  charset is the
 * HTTP header's charset or NULL, in which case the document's own <meta>
 * declaration (or a default) decides.
 */
extern char *qc_html_to_text(const char *html, size_t len, const char *charset);

/*
 * Cut s (database encoding, NUL-terminated) in place to at most max_chars
 * characters, on a character boundary.  Returns true when it cut.
 */
extern bool qc_clip_chars(char *s, int max_chars);

/* Number of characters in s (database encoding). */
extern int	qc_count_chars(const char *s);

#endif							/* QC_CONTENT_H */
