/*-------------------------------------------------------------------------
 *
 * urlpath.c
 *	  A URL's path as the server that receives it reads it, and
 *	  percent-decoding (urlpath.h).
 *
 * The normalization runs in two passes over the output buffer: the
 * escapes are decoded (and, leniently, separators and parameters
 * rewritten) while the path is copied, then the dot segments are removed
 * in place.  The decoding comes first because that is the order a server
 * works in: "%2e%2e" is a dot segment once decoded, never before.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "urlpath.h"

/* The value of a hex digit, or -1. */
static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~" */
static bool
is_unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

/* The escape at p (3 bytes within end), as a byte, or -1 when not one. */
static int
escape_at(const char *p, const char *end)
{
	if (end - p < 3 || p[0] != '%' || hex_value(p[1]) < 0 || hex_value(p[2]) < 0)
		return -1;
	return hex_value(p[1]) * 16 + hex_value(p[2]);
}

const char *
qc_url_path_span(const char *url, size_t *len)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	p += strcspn(p, "/?#");
	*len = strcspn(p, "?#");
	return p;
}

/* First pass: the escapes decoded as reading decodes them. */
static size_t
decode_path(const char *p, size_t len, QcPathReading reading, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *end = p + len;
	bool		lenient = reading == QC_PATH_LENIENT;
	size_t		n = 0;

	while (p < end)
	{
		int			c = escape_at(p, end);

		if (c >= 0)
		{
			p += 3;
			if (is_unreserved(c))
				out[n++] = (char) c;
			else if (lenient && (c == '/' || c == '\\'))
				out[n++] = '/';
			else
			{
				out[n++] = '%';
				out[n++] = hex[c >> 4];
				out[n++] = hex[c & 15];
			}
		}
		else if (lenient && *p == ';')
		{
			/* a segment's parameters: "..;x" is ".." to such a server */
			while (p < end && *p != '/' && *p != '\\')
				p++;
		}
		else
		{
			out[n++] = (lenient && *p == '\\') ? '/' : *p;
			p++;
		}
	}
	return n;
}

/*
 * Second pass: RFC 3986 §5.2.4 on a path that starts with '/', in place:
 * each segment is copied over what came before, "." dropped, ".."
 * dropping the last segment kept.  Leniently, an empty segment ("//") is
 * dropped too.
 */
static size_t
remove_dot_segments(char *buf, size_t len, bool merge_slashes)
{
	size_t		in = 0;
	size_t		out = 0;

	while (in < len)
	{
		size_t		seg = in + 1;
		size_t		end = seg;
		size_t		seglen;

		while (end < len && buf[end] != '/')
			end++;
		seglen = end - seg;
		if (seglen == 1 && buf[seg] == '.')
			;
		else if (seglen == 2 && buf[seg] == '.' && buf[seg + 1] == '.')
		{
			while (out > 0 && buf[out - 1] != '/')
				out--;
			if (out > 0)
				out--;
		}
		else if (!(seglen == 0 && merge_slashes))
		{
			buf[out++] = '/';
			memmove(buf + out, buf + seg, seglen);
			out += seglen;
		}
		in = end;
	}
	return out;
}

size_t
qc_url_path_normal(const char *p, size_t len, QcPathReading reading, char *out)
{
	char	   *path = out + 1;
	size_t		n = decode_path(p, len, reading, path);

	/* a path that does not start with '/' is read as if it did */
	if (n == 0 || path[0] != '/')
	{
		path = out;
		path[0] = '/';
		n++;
	}
	n = remove_dot_segments(path, n, reading == QC_PATH_LENIENT);
	while (n > 0 && path[n - 1] == '/')
		n--;
	memmove(out, path, n);
	out[n] = '\0';
	return n;
}

bool
qc_url_path_under(const char *path, const char *base)
{
	size_t		len = strlen(base);

	return strncmp(path, base, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

size_t
qc_url_percent_decode(const char *in, size_t len, bool plus_is_space, char *out)
{
	const char *end = in + len;
	size_t		n = 0;

	while (in < end)
	{
		int			c = escape_at(in, end);

		if (c >= 0)
		{
			out[n++] = (char) c;
			in += 3;
		}
		else
		{
			out[n++] = (plus_is_space && *in == '+') ? ' ' : *in;
			in++;
		}
	}
	out[n] = '\0';
	return n;
}
