/*-------------------------------------------------------------------------
 *
 * urlpath.h
 *	  A URL's path as the server that receives it reads it, for the
 *	  endpoints' question "is this URL under that server's url?"
 *	  (servers.c), and percent-decoding.
 *
 * A server decodes a path before it routes it, so "/v1/%2e%2e/admin" is
 * "/admin" to it, not a path under "/v1".  The syntax-based normalization
 * of RFC 3986 §6.2.2 says which spellings are the same path: percent-
 * encoded unreserved characters decoded (§6.2.2.2), the hex digits of the
 * other escapes in upper case (§6.2.2.1) and dot segments removed
 * (§5.2.4).  That is QC_PATH_RFC.  Servers go further: many decode
 * "%2F" (and "%5C", and a bare "\") into a separator, merge "//" and drop
 * a segment's ";parameters" (so "..;" is ".."); QC_PATH_LENIENT reads the
 * path that way too.  A URL is under a server's path only when it is in
 * both readings, whichever way the server reads it.
 *
 * Pure C (no PostgreSQL headers, no allocation): tested without a server
 * (test/unit/test_urlpath.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_URLPATH_H
#define QC_URLPATH_H

#include <stdbool.h>
#include <stddef.h>

typedef enum QcPathReading
{
	QC_PATH_RFC,				/* RFC 3986 §6.2.2: "%2F" is data */
	QC_PATH_LENIENT				/* also "%2F", "%5C", "\" as '/', "//" as
								 * '/', ";params" dropped */
} QcPathReading;

#define QC_PATH_READINGS 2

/*
 * Where the path of an absolute URL ("scheme://authority/path?query")
 * starts, and its length in *len (up to '?' or '#').
 */
extern const char *qc_url_path_span(const char *url, size_t *len);

/*
 * Write the path p (len bytes) as reading reads it into out, which has
 * room for len + 2 bytes, NUL-terminated and without a trailing '/' (so
 * the root is ""); returns its length.
 */
extern size_t qc_url_path_normal(const char *p, size_t len, QcPathReading reading,
								 char *out);

/*
 * Is the normalized path base itself or below it at a segment boundary?
 * ("/v1" covers "/v1" and "/v1/x", not "/v10"; "" covers every path.)
 */
extern bool qc_url_path_under(const char *path, const char *base);

/*
 * Percent-decode len bytes at in into out (room for len + 1 bytes),
 * NUL-terminated; '+' becomes a space when plus_is_space.  An escape that
 * is not two hex digits is kept as it is.  Returns the length.
 */
extern size_t qc_url_percent_decode(const char *in, size_t len, bool plus_is_space,
									char *out);

#endif							/* QC_URLPATH_H */
