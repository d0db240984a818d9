/*
 * test_urlpath.c
 *	  Unit tests of urlpath.c: a URL's path as a server reads it, in the
 *	  RFC 3986 reading and the lenient one, the segment-boundary test the
 *	  endpoints' servers are matched by, and percent-decoding.
 *
 * Prints one "ok N - ..." or "not ok N - ..." line per case and exits
 * non-zero when any case fails.
 */
#include <stdio.h>
#include <string.h>

#include "urlpath.h"
#include "check.h"

/* path normalized as reading reads it is expected */
static void
normal(const char *path, QcPathReading reading, const char *expected)
{
	char		out[128];
	char		what[600];
	size_t		n = qc_url_path_normal(path, strlen(path), reading, out);

	snprintf(what, sizeof(what), "%s \"%s\" is \"%s\" (got \"%s\")",
			 reading == QC_PATH_RFC ? "RFC" : "lenient", path, expected, out);
	check(strcmp(out, expected) == 0 && n == strlen(out), what);
}

/* the same in both readings */
static void
both(const char *path, const char *expected)
{
	normal(path, QC_PATH_RFC, expected);
	normal(path, QC_PATH_LENIENT, expected);
}

static void
test_normal(void)
{
	both("/", "");
	both("", "");
	both("/v1", "/v1");
	both("/v1/", "/v1");
	both("/v1/items", "/v1/items");
	/* RFC 3986 §5.2.4 */
	both("/v1/../admin", "/admin");
	both("/v1/./x", "/v1/x");
	both("/v1/x/..", "/v1");
	both("/../../etc", "/etc");
	both("/a/b/c/./../../g", "/a/g");
	both("/v1/..x/y", "/v1/..x/y");
	both("/v1/.../y", "/v1/.../y");
	/* unreserved characters decoded first (§6.2.2.2), then the dots */
	both("/v1/%2e%2e/admin", "/admin");
	both("/v1/%2E%2E/admin", "/admin");
	both("/v1/.%2e/admin", "/admin");
	both("/v1/%2e/x", "/v1/x");
	both("/%76%31/x", "/v1/x");
	both("/%7Euser/%41%5a%30%2D%5F", "/~user/AZ0-_");
	/* other escapes kept, their hex digits in upper case (§6.2.2.1) */
	both("/a%20b/%e2%82%ac", "/a%20b/%E2%82%AC");
	both("/a%3fb", "/a%3Fb");
	both("/a%zzb/%4", "/a%zzb/%4");
	/* a path without '/' first is read as if it had one */
	both("v1/x", "/v1/x");
	both("%2e%2e", "");

	/* "%2F": data to the RFC, a separator to a lenient server */
	normal("/v1%2Fitems", QC_PATH_RFC, "/v1%2Fitems");
	normal("/v1%2Fitems", QC_PATH_LENIENT, "/v1/items");
	normal("/v1/..%2Fadmin", QC_PATH_RFC, "/v1/..%2Fadmin");
	normal("/v1/..%2fadmin", QC_PATH_LENIENT, "/admin");
	normal("/v1/%2e%2e%2fadmin", QC_PATH_LENIENT, "/admin");
	normal("/v1/..%5Cadmin", QC_PATH_RFC, "/v1/..%5Cadmin");
	normal("/v1/..%5Cadmin", QC_PATH_LENIENT, "/admin");
	normal("/v1\\..\\admin", QC_PATH_RFC, "/v1\\..\\admin");
	normal("/v1\\..\\admin", QC_PATH_LENIENT, "/admin");
	/* ";parameters" of a segment, "..;" included */
	normal("/v1/..;/admin", QC_PATH_RFC, "/v1/..;/admin");
	normal("/v1/..;/admin", QC_PATH_LENIENT, "/admin");
	normal("/v1;jsessionid=1/x", QC_PATH_LENIENT, "/v1/x");
	/* "//" merged */
	normal("/v1//../admin", QC_PATH_RFC, "/v1/admin");
	normal("/v1//../admin", QC_PATH_LENIENT, "/admin");
	normal("//v1///x//", QC_PATH_LENIENT, "/v1/x");
}

static void
test_span(void)
{
	size_t		len;
	const char *p = qc_url_path_span("https://api.example.com:8443/v1/x?a=/b#c", &len);

	check(len == 5 && strncmp(p, "/v1/x", len) == 0, "the path of a URL with a query");
	p = qc_url_path_span("http://a.example?x=/y", &len);
	check(len == 0, "no path before the query");
	p = qc_url_path_span("http://a.example/", &len);
	check(len == 1 && *p == '/', "the root");
}

static void
test_under(void)
{
	check(qc_url_path_under("/v1", "/v1"), "a path is under itself");
	check(qc_url_path_under("/v1/x", "/v1"), "a path below");
	check(!qc_url_path_under("/v10", "/v1"), "not at a segment boundary");
	check(!qc_url_path_under("/v1x/y", "/v1"), "not at a segment boundary either");
	check(!qc_url_path_under("/v", "/v1"), "a shorter path");
	check(qc_url_path_under("", ""), "the root is under the root");
	check(qc_url_path_under("/anything", ""), "everything is under the root");
	check(!qc_url_path_under("/v1%2Fx", "/v1"), "an escaped '/' is no boundary");
}

static void
test_decode(void)
{
	char		out[64];
	const char *in = "a%2Fb+c%41%zz%4";

	qc_url_percent_decode(in, strlen(in), false, out);
	check(strcmp(out, "a/b+cA%zz%4") == 0, "escapes decoded, a bad one kept");
	qc_url_percent_decode(in, strlen(in), true, out);
	check(strcmp(out, "a/b cA%zz%4") == 0, "'+' a space when asked");
	check(qc_url_percent_decode("%00x", 4, false, out) == 2 && out[0] == '\0' && out[1] == 'x',
		  "a NUL is decoded too, its length returned");
}

int
main(void)
{
	test_normal();
	test_span();
	test_under();
	test_decode();
	return check_done();
}
