/*-------------------------------------------------------------------------
 *
 * charset.h
 *	  Character sets (charset.c): naming them, converting bodies into the
 *	  database encoding, and measuring and cutting text there.
 *
 * Every function here that returns text returns palloc'd text in the
 * database encoding (or UTF-8, for qc_to_utf8) that contains no NUL byte
 * and no invalid sequence.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CHARSET_H
#define QC_CHARSET_H

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

/*
 * For an error detail: "The response began: ..." with the first
 * QC_QUOTE_CHARS characters of text (in the database encoding), or NULL
 * when it is empty.
 */
#define QC_QUOTE_CHARS 200
extern char *qc_text_quote(const char *text);

#endif							/* QC_CHARSET_H */
