/*-------------------------------------------------------------------------
 *
 * http.c
 *	  The libcurl transport: one request, its redirects, and its limits.
 *
 * One easy handle and one multi handle live for the whole backend, so
 * connections, the DNS cache and TLS sessions are reused across calls.
 * Each hop is driven through the multi handle by our own loop, which waits
 * in short slices (reported as an Extension wait event) and calls
 * CHECK_FOR_INTERRUPTS() between them: a query cancel or statement_timeout
 * stops a transfer at once, even during DNS resolution or connect.
 *
 * Redirects are followed here, not by libcurl, so that every hop passes the
 * whole policy (scheme, host lists, literal addresses, read_only) and
 * credentials are not carried to another origin.
 *
 * The libcurl callbacks only copy bytes into malloc'd buffers and set flags;
 * they never palloc, ereport or longjmp.  Everything they allocate is freed
 * in a PG_FINALLY block, so an error or a cancel leaks nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "audit.h"
#include "http.h"
#include "queryclaw.h"
#include "redact.h"

/* Most bytes of response headers kept for one response. */
#define QC_MAX_HEADER_BYTES (256 * 1024)
/* Longest single wait before interrupts are checked again. */
#define QC_POLL_SLICE_MS 100

static CURLM *qc_multi = NULL;
static CURL *qc_easy = NULL;

/* State shared with the libcurl callbacks of one hop: plain C only. */
typedef struct Transfer
{
	char	   *body;			/* malloc'd */
	size_t		body_len;
	size_t		body_cap;
	size_t		body_limit;
	bool		body_cut;
	char	   *head;			/* malloc'd header block of the last response */
	size_t		head_len;
	size_t		head_cap;
	bool		head_overflow;
	bool		out_of_memory;
	bool		check_addresses;	/* false when a trusted proxy connects */
	bool		refused;
	QcInetAddr	refused_addr;
	int			refused_port;
	QcAddrClass refused_class;
	bool		interrupted;
	char		errbuf[CURL_ERROR_SIZE];
} Transfer;

/* Grow *buf to hold need bytes; false when malloc fails. */
static bool
grow(char **buf, size_t *cap, size_t need)
{
	size_t		newcap = *cap ? *cap : 16384;
	char	   *p;

	if (need <= *cap)
		return true;
	while (newcap < need)
		newcap *= 2;
	p = realloc(*buf, newcap);
	if (p == NULL)
		return false;
	*buf = p;
	*cap = newcap;
	return true;
}

/* Body bytes (already decompressed): keep up to body_limit, then stop. */
static size_t
write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	Transfer   *t = arg;
	size_t		n = size * nmemb;
	size_t		keep = Min(n, t->body_limit - t->body_len);

	if (!grow(&t->body, &t->body_cap, t->body_len + keep + 1))
	{
		t->out_of_memory = true;
		return 0;
	}
	memcpy(t->body + t->body_len, data, keep);
	t->body_len += keep;
	if (keep < n)
	{
		t->body_cut = true;
		return 0;				/* makes libcurl stop with CURLE_WRITE_ERROR */
	}
	return n;
}

/* Header lines; a status line starts a new response (1xx, proxies). */
static size_t
header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	Transfer   *t = arg;
	size_t		n = size * nmemb;

	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0)
		t->head_len = 0;
	if (t->head_len + n > QC_MAX_HEADER_BYTES)
	{
		t->head_overflow = true;
		return 0;
	}
	if (!grow(&t->head, &t->head_cap, t->head_len + n + 1))
	{
		t->out_of_memory = true;
		return 0;
	}
	memcpy(t->head + t->head_len, data, n);
	t->head_len += n;
	t->head[t->head_len] = '\0';
	return n;
}

/* Record a refused address for the error report made after curl returns. */
static bool
address_ok(Transfer *t, const QcInetAddr *addr, int port)
{
	QcAddrClass cls;

	if (!t->check_addresses || qc_policy_address_permitted(addr, port, &cls))
		return true;
	if (t->refused)
		return false;			/* report the first refused address */
	t->refused = true;
	t->refused_addr = *addr;
	t->refused_port = port;
	t->refused_class = cls;
	return false;
}

/* Every new connection: check the address libcurl is about to connect to. */
static curl_socket_t
opensocket_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *sa)
{
	Transfer   *t = arg;
	QcInetAddr	addr;
	int			port;

	memset(&addr, 0, sizeof(addr));
	addr.family = sa->family;
	if (sa->family == AF_INET)
	{
		struct sockaddr_in *in = (struct sockaddr_in *) &sa->addr;

		memcpy(addr.bytes, &in->sin_addr, 4);
		port = ntohs(in->sin_port);
	}
	else if (sa->family == AF_INET6)
	{
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa->addr;

		memcpy(addr.bytes, &in6->sin6_addr, 16);
		port = ntohs(in6->sin6_port);
	}
	else
		return CURL_SOCKET_BAD; /* only IP is ever spoken */

	if (!address_ok(t, &addr, port))
		return CURL_SOCKET_BAD;
	return socket(sa->family, sa->socktype, sa->protocol);
}

/*
 * Before each request, new or reused connection alike: a connection kept
 * alive from an earlier call was checked under the policy of that time.
 */
static int
prereq_cb(void *arg, char *primary_ip, char *local_ip, int primary_port,
		  int local_port)
{
	Transfer   *t = arg;
	QcInetAddr	addr;

	if (!t->check_addresses)
		return CURL_PREREQFUNC_OK;
	if (qc_inet_parse(primary_ip, &addr))
		return address_ok(t, &addr, primary_port) ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
	/* libcurl always reports a numeric address; refuse if it ever did not */
	t->refused = true;
	t->refused_class.range = "unrecognised";
	return CURL_PREREQFUNC_ABORT;
}

/* Progress: stop the transfer when a cancel or termination is pending. */
static int
xferinfo_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow)
{
	Transfer   *t = arg;

	if (QueryCancelPending || ProcDiePending)
	{
		t->interrupted = true;
		return 1;
	}
	return 0;
}

static void
ensure_handles(void)
{
	if (qc_easy != NULL)
		return;
	if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
		elog(ERROR, "could not initialize libcurl");
	qc_multi = curl_multi_init();
	qc_easy = curl_easy_init();
	if (qc_multi == NULL || qc_easy == NULL)
		elog(ERROR, "could not create libcurl handles");
}

/* Build the header list (malloc'd by libcurl; freed by the caller). */
static struct curl_slist *
append_headers(struct curl_slist *list, List *headers)
{
	ListCell   *lc;
	struct curl_slist *next;

	/* never wait for "100 Continue" before sending a body */
	if ((next = curl_slist_append(list, "Expect:")) == NULL)
		elog(ERROR, "out of memory building request headers");
	list = next;
	foreach(lc, headers)
	{
		QcHeader   *h = lfirst(lc);
		/* "Name;" is libcurl's way of sending an empty value */
		char	   *line = h->value[0] == '\0' ? psprintf("%s;", h->name) :
			psprintf("%s: %s", h->name, h->value);

		next = curl_slist_append(list, line);
		pfree(line);
		if (next == NULL)
			elog(ERROR, "out of memory building request headers");
		list = next;
	}
	return list;
}

static void
set_method(CURL *h, const char *method, const char *body, size_t body_len)
{
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") == 0 && body == NULL)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	else
	{
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		if (body != NULL || strcmp(method, "POST") == 0)
		{
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body_len);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		}
	}
}

/* Options for one hop; the handle was reset, so every option is set here. */
static void
configure(CURL *h, Transfer *t, const char *url, const char *method,
		  const char *body, size_t body_len, struct curl_slist *headers,
		  long timeout_ms)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, qc_user_agent);
	/* an empty proxy also makes libcurl ignore the proxy environment */
	curl_easy_setopt(h, CURLOPT_PROXY, qc_proxy);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, t);
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, prereq_cb);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, t);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	/* do not wait for a resolver thread when a transfer is abandoned */
	curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L);
	set_method(h, method, body, body_len);
}

/*
 * Drive one transfer to its end.  CHECK_FOR_INTERRUPTS() may leave by
 * longjmp; the caller's PG_FINALLY removes the handle and frees buffers.
 */
static CURLcode
run_transfer(CURL *h)
{
	CURLMcode	mc = curl_multi_add_handle(qc_multi, h);

	if (mc != CURLM_OK)
		elog(ERROR, "could not start transfer: %s", curl_multi_strerror(mc));
	for (;;)
	{
		int			running;
		int			left;
		CURLMsg    *msg;

		mc = curl_multi_perform(qc_multi, &running);
		if (mc != CURLM_OK)
			elog(ERROR, "transfer failed: %s", curl_multi_strerror(mc));
		while ((msg = curl_multi_info_read(qc_multi, &left)) != NULL)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
				return msg->data.result;
		if (running == 0)
			elog(ERROR, "transfer ended without a result");

		CHECK_FOR_INTERRUPTS();
		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		/* a signal (cancel, timeout) interrupts the poll at once */
		mc = curl_multi_poll(qc_multi, NULL, 0, QC_POLL_SLICE_MS, NULL);
		pgstat_report_wait_end();
		if (mc != CURLM_OK)
			elog(ERROR, "transfer failed: %s", curl_multi_strerror(mc));
	}
}

/* Copy n bytes into a NUL-terminated palloc'd string. */
static char *
copy_bytes(const char *data, size_t n)
{
	char	   *copy = palloc(n + 1);

	if (n > 0)
		memcpy(copy, data, n);
	copy[n] = '\0';
	return copy;
}

static char *
copy_info_string(CURL *h, CURLINFO info)
{
	char	   *value = NULL;

	if (curl_easy_getinfo(h, info, &value) != CURLE_OK || value == NULL)
		return NULL;
	return pstrdup(value);
}

static bool
is_connect_error(CURLcode rc)
{
	switch (rc)
	{
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
		case CURLE_COULDNT_CONNECT:
		case CURLE_SSL_CONNECT_ERROR:
		case CURLE_PEER_FAILED_VERIFICATION:
		case CURLE_SSL_CERTPROBLEM:
		case CURLE_SSL_CIPHER:
		case CURLE_SSL_CACERT_BADFILE:
		case CURLE_SSL_ISSUER_ERROR:
			return true;
		default:
			return false;
	}
}

static void
fail_timeout(QcCall *call, const char *url)
{
	qc_call_fail(call, QC_OUTCOME_TIMEOUT, ERRCODE_CONNECTION_FAILURE,
				 psprintf("request to %s timed out", qc_redact_url(url)),
				 psprintf("%s is %d ms, redirects included.",
						  call->timeout_setting, call->timeout_ms),
				 NULL);
}

/* Turn what went wrong in a hop into an audited error; returns if nothing did. */
static void
raise_transfer_error(QcCall *call, Transfer *t, CURLcode rc, const char *url)
{
	QcRefusal	refusal;
	const char *why = t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc);
	const char *shown = qc_redact_url(url);

	if (t->refused)
	{
		qc_policy_address_refusal(&t->refused_addr, t->refused_port,
								  &t->refused_class, &refusal);
		qc_call_fail(call, QC_OUTCOME_REFUSED, refusal.sqlerrcode,
					 refusal.message, refusal.detail, refusal.hint);
	}
	if (t->interrupted)
		CHECK_FOR_INTERRUPTS();
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t->body_cut))
		return;
	if (t->out_of_memory)
		qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_OUT_OF_MEMORY,
					 "out of memory receiving the response", NULL, NULL);
	if (t->head_overflow)
		qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_CONNECTION_FAILURE,
					 psprintf("response headers from %s are too large", shown),
					 psprintf("At most %d bytes of headers are accepted.", QC_MAX_HEADER_BYTES),
					 NULL);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		fail_timeout(call, url);
	qc_call_fail(call, QC_OUTCOME_ERROR,
				 is_connect_error(rc) ? ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION :
				 ERRCODE_CONNECTION_FAILURE,
				 psprintf(is_connect_error(rc) ? "could not connect to %s" : "request to %s failed", shown),
				 why, NULL);
}

/*
 * Send one hop.  On a redirect response, returns the absolute target in
 * *location (else NULL).
 */
static void
perform_hop(QcCall *call, const char *url, const char *method,
			const char *body, size_t body_len, List *headers,
			long timeout_ms, bool trusted, char **location)
{
	Transfer	t;
	struct curl_slist *volatile slist = NULL;
	volatile CURLcode rc = CURLE_OK;

	memset(&t, 0, sizeof(t));
	t.body_limit = call->max_bytes;
	t.check_addresses = (qc_proxy[0] == '\0') && !trusted;
	*location = NULL;
	ensure_handles();

	PG_TRY();
	{
		slist = append_headers(NULL, headers);
		configure(qc_easy, &t, url, method, body, body_len, slist, timeout_ms);
		rc = run_transfer(qc_easy);
		if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.body_cut))
		{
			curl_easy_getinfo(qc_easy, CURLINFO_RESPONSE_CODE, &call->status);
			call->content_type = copy_info_string(qc_easy, CURLINFO_CONTENT_TYPE);
			call->response_headers = copy_bytes(t.head, t.head_len);
			call->data = copy_bytes(t.body, t.body_len);
			call->data_len = t.body_len;
			call->data_cut = t.body_cut;
			if (call->status >= 300 && call->status < 400)
				*location = copy_info_string(qc_easy, CURLINFO_REDIRECT_URL);
		}
	}
	PG_FINALLY();
	{
		curl_multi_remove_handle(qc_multi, qc_easy);
		curl_slist_free_all(slist);
		free(t.body);
		free(t.head);
	}
	PG_END_TRY();

	raise_transfer_error(call, &t, rc, url);
}

/* Drop credentials when a redirect leaves the origin they were meant for. */
static List *
strip_secret_headers(List *headers)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, headers)
	{
		QcHeader   *h = lfirst(lc);

		if (!qc_name_is_secret(h->name, true))
			kept = lappend(kept, h);
	}
	return kept;
}

static bool
same_origin(const QcUrl *a, const QcUrl *b)
{
	return strcmp(a->scheme, b->scheme) == 0 && strcmp(a->host, b->host) == 0 &&
		a->port == b->port;
}

QcCall *
qc_call_new(const char *func, const char *method, const char *url)
{
	QcCall	   *call = palloc0(sizeof(QcCall));

	call->func = func;
	call->method = method;
	call->url = url;
	call->max_chars = qc_max_chars;
	call->chars = -1;
	call->started = GetCurrentTimestamp();
	call->timeout_ms = qc_timeout;
	call->timeout_setting = "queryclaw.timeout";
	call->max_bytes = QC_MAX_BYTES();
	return call;
}

static double
elapsed_ms(const QcCall *call)
{
	return (GetCurrentTimestamp() - call->started) / 1000.0;
}

void
qc_call_fail(QcCall *call, const char *outcome, int sqlerrcode,
			 const char *message, const char *detail, const char *hint)
{
	call->outcome = outcome;
	call->reason = pstrdup(message);
	call->elapsed_ms = elapsed_ms(call);
	qc_audit_call(call);
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg_internal("%s", message),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

void
qc_http_execute(QcCall *call)
{
	const char *method = call->method;
	const char *body = call->body;
	size_t		body_len = call->body_len;
	List	   *headers = call->headers;
	const char *target = call->url;
	QcUrl		first = {0};

	for (;;)
	{
		QcUrl		url;
		QcRefusal	refusal;
		char	   *error;
		char	   *location;
		long		remaining = call->timeout_ms - (long) elapsed_ms(call);
		/* see QcCall.trusted: the DBA's endpoint, first hop only */
		bool		trusted = call->trusted && call->redirects == 0;

		if (!qc_url_parse(target, &url, &error))
			qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_INVALID_PARAMETER_VALUE,
						 call->redirects == 0 ? "invalid URL" : "redirect to an invalid URL",
						 error, NULL);
		if (trusted ? !qc_policy_check_trusted_url(&url, &refusal) :
			!qc_policy_check_url(&url, method, &refusal))
			qc_call_fail(call, QC_OUTCOME_REFUSED, refusal.sqlerrcode,
						 refusal.message, refusal.detail, refusal.hint);
		if (call->redirects == 0)
			first = url;
		else if (!same_origin(&first, &url))
			headers = strip_secret_headers(headers);
		call->final_url = url.url;
		if (remaining <= 0)
			fail_timeout(call, url.url);

		perform_hop(call, url.url, method, body, body_len, headers, remaining,
					trusted, &location);
		if (location == NULL)
			break;

		if (call->redirects >= qc_max_redirects)
			qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
						 psprintf("too many redirects from %s", qc_redact_url(call->url)),
						 qc_max_redirects == 1 ?
						 pstrdup("queryclaw.max_redirects allows 1 redirect.") :
						 psprintf("queryclaw.max_redirects allows %d redirects.", qc_max_redirects),
						 NULL);
		/* browsers' rules: 303, and 301/302 after POST, become GET */
		if ((call->status == 303 && strcmp(method, "HEAD") != 0) ||
			((call->status == 301 || call->status == 302) && strcmp(method, "POST") == 0))
		{
			method = "GET";
			body = NULL;
			body_len = 0;
		}
		target = location;
		call->redirects++;
	}
	call->elapsed_ms = elapsed_ms(call);
}

const char *
qc_http_validate_method(const char *method)
{
	static const char *const methods[] = {
		"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", NULL
	};
	char	   *upper = asc_toupper(method, strlen(method));

	for (int i = 0; methods[i]; i++)
		if (strcmp(upper, methods[i]) == 0)
			return methods[i];
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unsupported HTTP method \"%s\"", method),
			 errhint("Use GET, POST, PUT, PATCH, DELETE or HEAD.")));
	pg_unreachable();
}

/* RFC 9110 token characters. */
static bool
is_token(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char) *s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

void
qc_http_validate_header(const char *name, const char *value)
{
	static const char *const refused[] = {
		"host", "connection", "keep-alive", "proxy-connection", "te", "trailer",
		"transfer-encoding", "upgrade", "content-length", "expect", NULL
	};

	if (!is_token(name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid HTTP header name \"%s\"", name),
				 errdetail("Header names consist of letters, digits and !#$%%&'*+-.^_`|~ only.")));
	for (int i = 0; refused[i]; i++)
		if (pg_strcasecmp(name, refused[i]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("HTTP header \"%s\" cannot be set", name),
					 errdetail("Host, Content-Length and hop-by-hop headers are set by the transport.")));
	for (const char *c = value; *c; c++)
		if (*c == '\r' || *c == '\n')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for HTTP header \"%s\"", name),
					 errdetail("Header values cannot contain carriage return or line feed characters.")));
}

const char *
qc_http_find_header(List *headers, const char *name)
{
	ListCell   *lc;

	foreach(lc, headers)
	{
		QcHeader   *h = lfirst(lc);

		if (pg_strcasecmp(h->name, name) == 0)
			return h->value;
	}
	return NULL;
}

List *
qc_http_add_header(List *headers, const char *name, const char *value)
{
	QcHeader   *h = palloc(sizeof(QcHeader));

	qc_http_validate_header(name, value);
	h->name = pstrdup(name);
	h->value = pstrdup(value);
	return lappend(headers, h);
}
