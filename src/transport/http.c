/*-------------------------------------------------------------------------
 *
 * http.c
 *	  The libcurl transport: one request, its redirects, and its limits.
 *
 * The easy handles and the multi handle live for the whole backend, so
 * connections, the DNS cache and TLS sessions are reused across calls.
 * Each hop is driven through the multi handle by our own loop, which waits
 * in short slices (reported as an Extension wait event) and calls
 * CHECK_FOR_INTERRUPTS() between them: a query cancel or statement_timeout
 * stops a transfer at once, even during DNS resolution or connect.  A run
 * owns its multi handle and slots: one started from inside another (what
 * the first reached as one of its calls ended) gets its own, and one more
 * level is refused (take_pool).
 *
 * Redirects are followed here, not by libcurl, so that every hop passes the
 * whole policy (scheme, host lists, literal addresses, read_only, and the
 * foreign servers' rules: queryclaw.servers_only, no mapping's key in the
 * target, servers.h) and credentials are not carried to another origin.
 *
 * A host name is resolved here too (resolve.c, a thread per lookup, woken
 * into this loop), before libcurl sees the hop: every address the name has
 * is checked, as check_url() checks them, and libcurl is given exactly
 * those (CURLOPT_RESOLVE), so it cannot pick an unchecked one, and a name
 * with one local address among public ones is refused whichever libcurl
 * would have tried first.  The connect-time check stays, for reused
 * connections and as a second line.
 *
 * The libcurl callbacks only copy bytes into malloc'd buffers and set flags;
 * they never palloc, ereport or longjmp.  Everything they allocate is freed
 * in a PG_FINALLY block, so an error or a cancel leaks nothing.
 *
 * The transport knows nothing of audit, rate limits or budgets: the owner
 * of the calls (call.c) is asked through hooks (http.h) whether each call
 * may start, and is handed each call as it ends.  A failure is written on
 * its call (callrec.h), never audited or raised here.
 *
 * The request headers a caller may set are checked here too (at the end of
 * the file): the transport sets Host, Content-Length and the hop-by-hop
 * headers itself, and no value may smuggle in a line of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <pthread.h>
#include <signal.h>
#include <curl/curl.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/formatting.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "cluster.h"
#include "compat.h"
#include "content.h"
#include "events.h"
#include "guc.h"
#include "http.h"
#include "redact.h"
#include "resolve.h"
#include "servers.h"

/* Most bytes of response headers kept for one response. */
#define QC_MAX_HEADER_BYTES (256 * 1024)
/* Longest single wait before interrupts are checked again. */
#define QC_POLL_SLICE_MS 100
/* Most addresses of one name that are checked and handed to libcurl. */
#define QC_MAX_ADDRESSES 32

/* The multi handle of the run under way (see take_pool), and its events. */
static CURLM *qc_multi = NULL;
static QcEvents *qc_events = NULL;

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
	const QcPolicy *policy;		/* the call's: read by the callbacks */
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

/* libcurl 8.6 and newer have an error code of their own for huge headers. */
#if LIBCURL_VERSION_NUM >= 0x080600
#define QC_CURLE_HEADERS_TOO_LARGE(rc) ((rc) == CURLE_TOO_LARGE)
#else
#define QC_CURLE_HEADERS_TOO_LARGE(rc) false
#endif

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

	if (!t->check_addresses || qc_policy_address_permitted(t->policy, addr, port, &cls))
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

	/* only IP is ever spoken */
	if (!qc_inet_from_sockaddr(&sa->addr, &addr, &port) ||
		!address_ok(t, &addr, port))
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

/* A multi handle for the backend's runs: its connection cache outlives every call. */
static CURLM *
new_multi(void)
{
	static bool initialized = false;
	CURLM	   *multi;

	if (!initialized && curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
		elog(ERROR, "could not initialize libcurl");
	initialized = true;
	multi = curl_multi_init();
	if (multi == NULL)
		elog(ERROR, "could not create a libcurl multi handle");
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long) QC_MAX_CONCURRENCY_LIMIT);
	return multi;
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
	const QcPolicy *policy = t->policy;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, policy->user_agent);
	/* an empty proxy also makes libcurl ignore the proxy environment */
	curl_easy_setopt(h, CURLOPT_PROXY, policy->proxy);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (policy->ca_file[0] != '\0')
		curl_easy_setopt(h, CURLOPT_CAINFO, policy->ca_file);
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

/* The call ran out of time (queryclaw.timeout, or the call's own limit). */
static void
record_timeout(QcCall *call, const char *url)
{
	qc_call_set_failure(call, QC_OUTCOME_TIMEOUT, ERRCODE_CONNECTION_FAILURE,
						psprintf("request to %s timed out", qc_redact_url(url)),
						psprintf("%s is %d ms, redirects included.",
								 call->timeout_setting, call->timeout_ms),
						NULL);
}

/*
 * Record what went wrong in a finished hop; returns false if nothing did.
 * A pending cancel is raised here: it ends the whole batch.
 */
static bool
record_transfer_error(QcCall *call, Transfer *t, CURLcode rc, const char *url)
{
	QcVerdict	refusal;
	const char *why;
	const char *shown;

	if (t->refused)
	{
		qc_policy_address_refusal(&t->refused_addr, t->refused_port,
								  &t->refused_class, &refusal);
		qc_call_set_refusal(call, &refusal);
		return true;
	}
	if (t->interrupted)
		CHECK_FOR_INTERRUPTS();
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t->body_cut))
		return false;
	/* libcurl's message may quote what the server sent */
	why = t->errbuf[0] ? qc_to_server_text(t->errbuf, strlen(t->errbuf), NULL) :
		curl_easy_strerror(rc);
	shown = qc_redact_url(url);
	if (t->out_of_memory)
		qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_OUT_OF_MEMORY,
							"out of memory receiving the response", NULL, NULL);
	else if (t->head_overflow || (rc == CURLE_OUT_OF_MEMORY && t->body_len == 0) ||
			 QC_CURLE_HEADERS_TOO_LARGE(rc))
	{
		/*
		 * libcurl reports a header line over its 100 kB limit as "out of
		 * memory" before 8.6, as "too large" (as it does more than 5000
		 * headers) from 8.6 on
		 */
		qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_CONNECTION_FAILURE,
							psprintf("response headers from %s are too large", shown),
							psprintf("At most %d kB of headers, and 100 kB in one header line, are accepted.",
									 QC_MAX_HEADER_BYTES / 1024),
							NULL);
	}
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		record_timeout(call, url);
	else
		qc_call_set_failure(call, QC_OUTCOME_ERROR,
							is_connect_error(rc) ? ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION :
							ERRCODE_CONNECTION_FAILURE,
							psprintf(is_connect_error(rc) ? "could not connect to %s" : "request to %s failed", shown),
							why, NULL);
	return true;
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

/*
 * One call in flight: the hop being transferred and what the next hop
 * needs.  A slot owns its easy handle for as long as the call runs.
 */
typedef struct Slot
{
	CURL	   *easy;			/* from the backend's pool */
	QcCall	   *call;			/* NULL when the slot is free */
	Transfer	t;
	struct curl_slist *header_list;
	QcUrl		origin;			/* the first hop's URL */
	QcUrl		hop;			/* the current hop's URL */
	const char *method;			/* may turn into GET on a redirect */
	const char *body;
	size_t		body_len;
	List	   *headers;		/* credentials dropped off-origin */
	bool		must_resolve;	/* the hop waits for a lookup to start */
	QcLookup   *lookup;			/* the hop's host being resolved, or NULL */
	struct curl_slist *resolve_list;	/* its checked addresses, for libcurl */
} Slot;

/*
 * A 307 or 308 keeps the method and the body: to another origin than the
 * one the caller addressed, that would hand the body (often credentials or
 * personal data) to a server the caller did not name.  Such a redirect is
 * not followed.
 */
static bool
body_would_leave_origin(const Slot *slot)
{
	const QcCall *call = slot->call;

	return call->redirects > 0 && slot->body_len > 0 &&
		(call->status == 307 || call->status == 308) &&
		!same_origin(&slot->origin, &slot->hop);
}

/* Release what libcurl and the callbacks hold for a slot's hop. */
static void
release_hop(Slot *slot)
{
	curl_multi_remove_handle(qc_multi, slot->easy);
	curl_slist_free_all(slot->header_list);
	slot->header_list = NULL;
	curl_slist_free_all(slot->resolve_list);
	slot->resolve_list = NULL;
	free(slot->t.body);
	free(slot->t.head);
	memset(&slot->t, 0, sizeof(slot->t));
}

static void launch_hop(Slot *slot, long remaining);

/*
 * The hop's URL read into slot->hop: the first hop's as the call read it
 * already (its host's admission and count).
 */
static bool
parse_hop(Slot *slot, const char *target, char **error)
{
	const QcUrl *first;

	if (slot->call->redirects > 0)
		return qc_url_parse(target, &slot->hop, error);
	first = qc_call_first_url(slot->call, error);
	if (first != NULL)
		slot->hop = *first;
	return first != NULL;
}

/*
 * Check a hop's URL against the policy and start it.  Returns false when
 * the call ended (refused, invalid, out of time): it was recorded.
 */
static bool
start_hop(Slot *slot, const char *target)
{
	QcCall	   *call = slot->call;
	QcVerdict	refusal;
	char	   *error;
	QcInetAddr	addrs[2];
	long		remaining = call->timeout_ms - (long) qc_call_elapsed_ms(call);
	/* see QcCall.trusted: the DBA's own endpoint, first hop only */
	bool		trusted = call->trusted && call->redirects == 0;

	if (!parse_hop(slot, target, &error))
	{
		qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_INVALID_PARAMETER_VALUE,
							call->redirects == 0 ? "invalid URL" : "redirect to an invalid URL",
							error, NULL);
		return false;
	}
	/* a redirect may carry no mapping's key, and meets servers_only */
	if (call->redirects > 0 && !qc_server_check_hop(call, &slot->hop, &refusal))
	{
		qc_call_set_refusal(call, &refusal);
		return false;
	}
	if (body_would_leave_origin(slot))
	{
		/* the response of the previous hop, a 307 or 308, is the result */
		call->redirects--;
		call->redirect_held = qc_redact_url(slot->hop.url);
		call->reason = psprintf("redirect to %s not followed: it would send the request body to another origin",
								call->redirect_held);
		return false;
	}
	if (trusted ? !qc_policy_check_trusted_url(call->policy, &slot->hop, &refusal) :
		!qc_policy_check_url(call->policy, &slot->hop, slot->method, &refusal))
	{
		qc_call_set_refusal(call, &refusal);
		return false;
	}
	if (call->redirects == 0)
		slot->origin = slot->hop;
	else
	{
		if (!same_origin(&slot->origin, &slot->hop))
			slot->headers = strip_secret_headers(slot->headers);
		/* a user mapping's headers stay under its server's url */
		slot->headers = qc_server_hop_headers(call, &slot->hop, slot->headers);
	}
	call->final_url = slot->hop.url;
	if (remaining <= 0)
	{
		record_timeout(call, slot->hop.url);
		return false;
	}

	memset(&slot->t, 0, sizeof(slot->t));
	slot->t.body_limit = call->max_bytes;
	slot->t.policy = call->policy;
	slot->t.check_addresses = (call->policy->proxy[0] == '\0') && !trusted;
	/* a name is resolved first (resolve_hosts), unless a proxy connects */
	slot->must_resolve = slot->t.check_addresses &&
		qc_url_literal_addresses(&slot->hop, addrs) == 0;
	if (!slot->must_resolve)
		launch_hop(slot, remaining);
	return true;
}

/* Hand a hop whose URL passed the policy to libcurl. */
static void
launch_hop(Slot *slot, long remaining)
{
	CURLMcode	mc;

	slot->header_list = append_headers(NULL, slot->headers);
	configure(slot->easy, &slot->t, slot->hop.url, slot->method, slot->body,
			  slot->body_len, slot->header_list, remaining);
	if (slot->resolve_list != NULL)
		curl_easy_setopt(slot->easy, CURLOPT_RESOLVE, slot->resolve_list);
	curl_easy_setopt(slot->easy, CURLOPT_PRIVATE, slot);
	mc = curl_multi_add_handle(qc_multi, slot->easy);
	if (mc != CURLM_OK)
		elog(ERROR, "could not start transfer: %s", curl_multi_strerror(mc));
}

/*
 * "+host:port:addr,addr" for CURLOPT_RESOLVE: libcurl connects to these
 * addresses only ("+": the entry expires like a looked-up one).
 */
static struct curl_slist *
resolve_entry(const QcUrl *hop, const QcInetAddr *addrs, int naddrs)
{
	StringInfoData entry;
	struct curl_slist *list;

	initStringInfo(&entry);
	appendStringInfo(&entry, "+%s:%d:", hop->host, hop->port);
	for (int i = 0; i < naddrs; i++)
	{
		char		text[64];

		qc_inet_format(&addrs[i], text, sizeof(text));
		appendStringInfo(&entry, addrs[i].family == AF_INET6 ? "%s[%s]" : "%s%s",
						 i ? "," : "", text);
	}
	list = curl_slist_append(NULL, entry.data);
	pfree(entry.data);
	if (list == NULL)
		elog(ERROR, "out of memory building the address list");
	return list;
}

/*
 * The answer for a hop's host is in: refuse the hop if any address is one
 * the policy refuses (libcurl might connect to any of them), else start it
 * on exactly those addresses.  Returns false when the call ended.
 */
static bool
hop_resolved(Slot *slot, int naddrs, const QcInetAddr *addrs)
{
	QcCall	   *call = slot->call;
	QcAddrClass cls;
	QcVerdict	refusal;

	if (naddrs <= 0)
	{
		qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
							psprintf("could not connect to %s", qc_redact_url(slot->hop.url)),
							psprintf("Could not resolve host: %s", slot->hop.host), NULL);
		return false;
	}
	for (int i = 0; i < naddrs; i++)
	{
		if (!qc_policy_address_permitted(call->policy, &addrs[i], slot->hop.port, &cls))
		{
			qc_policy_address_refusal(&addrs[i], slot->hop.port, &cls, &refusal);
			qc_call_set_refusal(call, &refusal);
			return false;
		}
	}
	slot->resolve_list = resolve_entry(&slot->hop, addrs, naddrs);
	launch_hop(slot, call->timeout_ms - (long) qc_call_elapsed_ms(call));
	return true;
}

/*
 * Move a hop that waits for its host's addresses along: start its lookup
 * (later, when every lookup thread is taken and others of this batch will
 * free one), or take the answer.  Returns false when the call ended.
 */
static bool
resolve_hop(Slot *slot, bool others_resolving)
{
	QcCall	   *call = slot->call;
	QcInetAddr	addrs[QC_MAX_ADDRESSES];
	const char *error = NULL;
	int			naddrs;

	if (qc_call_elapsed_ms(call) >= call->timeout_ms)
	{
		record_timeout(call, slot->hop.url);
		return false;
	}
	if (slot->lookup == NULL)
	{
		slot->lookup = qc_lookup_start(slot->hop.host, qc_events_wake, qc_events, &error);
		if (slot->lookup == NULL && others_resolving)
			return true;
		if (slot->lookup == NULL)
		{
			qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
								psprintf("could not connect to %s", qc_redact_url(slot->hop.url)),
								error, NULL);
			return false;
		}
	}
	if (!qc_lookup_done(slot->lookup))
		return true;
	naddrs = qc_lookup_finish(slot->lookup, addrs, lengthof(addrs), &error);
	slot->lookup = NULL;
	slot->must_resolve = false;
	return hop_resolved(slot, naddrs, addrs);
}

/* Stop a slot's lookup, if it has one (the call ended or was cancelled). */
static void
drop_lookup(Slot *slot)
{
	if (slot->lookup != NULL)
		qc_lookup_abandon(slot->lookup);
	slot->lookup = NULL;
	slot->must_resolve = false;
}

/*
 * A redirect target in printable ASCII: every other byte (controls, space,
 * DEL, and any byte of another charset, valid UTF-8 or not) is
 * percent-encoded, so that no byte of a Location header reaches the final
 * URL as it is.  libcurl encodes some of them already, in lower case up to
 * 8.14 (Debian 13) and in upper case since: every escape is written in upper
 * case here, as RFC 3986 prefers, so the final URL does not depend on which
 * libcurl made it.
 */
static char *
url_encode_bytes(const char *url)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const unsigned char *p = (const unsigned char *) url; *p; p++)
	{
		if (*p <= ' ' || *p >= 0x7F)
			appendStringInfo(&out, "%%%02X", *p);
		else if (*p == '%' && isxdigit(p[1]) && isxdigit(p[2]))
		{
			appendStringInfo(&out, "%%%c%c", toupper(p[1]), toupper(p[2]));
			p += 2;
		}
		else
			appendStringInfoChar(&out, (char) *p);
	}
	return out.data;
}

/*
 * Take over the response of a finished hop; returns its redirect target.
 * What the server sent in its head becomes valid text here (the body is
 * decoded later, by its charset).
 */
static char *
take_response(Slot *slot)
{
	QcCall	   *call = slot->call;
	CURL	   *h = slot->easy;
	char	   *value;

	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &call->status);
	value = copy_info_string(h, CURLINFO_CONTENT_TYPE);
	call->content_type = value ? qc_to_server_text(value, strlen(value), NULL) : NULL;
	call->response_headers = qc_to_server_text(slot->t.head ? slot->t.head : "",
											   slot->t.head_len, NULL);
	call->response_body = copy_bytes(slot->t.body, slot->t.body_len);
	call->response_len = slot->t.body_len;
	call->response_cut = slot->t.body_cut;
	if (call->status >= 300 && call->status < 400 &&
		(value = copy_info_string(h, CURLINFO_REDIRECT_URL)) != NULL)
		return url_encode_bytes(value);
	return NULL;
}

/*
 * A hop ended with rc.  Returns true when the slot started the next hop,
 * false when the call is over (successfully or recorded as failed).
 */
static bool
finish_hop(Slot *slot, CURLcode rc)
{
	QcCall	   *call = slot->call;
	char	   *location = NULL;
	bool		failed = record_transfer_error(call, &slot->t, rc, slot->hop.url);

	if (!failed)
		location = take_response(slot);
	release_hop(slot);
	if (failed || location == NULL)
		return false;

	if (call->redirects >= call->policy->max_redirects)
	{
		qc_call_set_failure(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
							psprintf("too many redirects from %s", qc_redact_url(call->url)),
							call->policy->max_redirects == 1 ?
							pstrdup("queryclaw.max_redirects allows 1 redirect.") :
							psprintf("queryclaw.max_redirects allows %d redirects.",
									 call->policy->max_redirects),
							NULL);
		return false;
	}
	/* browsers' rules: 303, and 301/302 after POST, become GET */
	if ((call->status == 303 && strcmp(slot->method, "HEAD") != 0) ||
		((call->status == 301 || call->status == 302) && strcmp(slot->method, "POST") == 0))
	{
		slot->method = "GET";
		slot->body = NULL;
		slot->body_len = 0;
	}
	call->redirects++;
	return start_hop(slot, location);
}

/* Claim a slot for an admitted call and start its first hop; false if it ended. */
static bool
start_call(Slot *slot, QcCall *call)
{
	slot->call = call;
	slot->method = call->method;
	slot->body = call->body;
	slot->body_len = call->body_len;
	slot->headers = call->headers;
	call->started = GetCurrentTimestamp();
	call->taken_up = true;
	if (start_hop(slot, call->url))
		return true;
	slot->call = NULL;
	return false;
}

/* A call is over: measure it and hand it back to its owner. */
static void
call_done(QcCall *call, const QcTransportHooks *hooks)
{
	call->elapsed_ms = qc_call_elapsed_ms(call);
	hooks->done(call, hooks->arg);
}

/* The call in a slot is over: free the slot, hand the call back. */
static void
end_call(Slot *slot, const QcTransportHooks *hooks)
{
	QcCall	   *call = slot->call;

	slot->call = NULL;
	call_done(call, hooks);
}

/* Is another transfer to this call's host allowed now? */
static bool
host_has_room(Slot *slots, int nslots, QcCall *call)
{
	const char *host;
	int			busy = 0;

	/* no host can have too many (a single call): no URL is parsed for it */
	if (nslots <= qc_cluster_share(qc_max_host_concurrency))
		return true;
	host = qc_call_host(call);
	/* an unparsable URL ends at once in start_hop, without a connection */
	if (host[0] == '\0')
		return true;
	for (int i = 0; i < nslots; i++)
		if (slots[i].call != NULL && strcmp(qc_call_host(slots[i].call), host) == 0)
			busy++;
	return busy < qc_cluster_share(qc_max_host_concurrency);
}

/*
 * Where the transport's work on a call allocates: a fed run lasts as long
 * as its owner keeps feeding it (the async worker's, for hours), so what
 * each call needs (its hops' URLs, its response) goes into the call's own
 * memory, which its owner frees with it.  A batch's calls share the
 * batch's.
 */
static MemoryContext
switch_to_call(const QcTransportHooks *hooks, QcCall *call)
{
	if (hooks->feed == NULL)
		return CurrentMemoryContext;
	return MemoryContextSwitchTo(GetMemoryChunkContext(call));
}

/* Is a call in flight in any slot? */
static bool
any_running(Slot *slots, int nslots)
{
	for (int s = 0; s < nslots; s++)
		if (slots[s].call != NULL)
			return true;
	return false;
}

/* Is a hop waiting for its host's addresses? */
static bool
any_resolving(Slot *slots, int nslots)
{
	for (int s = 0; s < nslots; s++)
		if (slots[s].call != NULL && slots[s].lookup != NULL)
			return true;
	return false;
}

/* Move every hop that waits for its host's addresses along. */
static void
resolve_hosts(Slot *slots, int nslots, const QcTransportHooks *hooks)
{
	for (int s = 0; s < nslots; s++)
	{
		MemoryContext old;

		if (slots[s].call == NULL || !slots[s].must_resolve)
			continue;
		old = switch_to_call(hooks, slots[s].call);
		if (!resolve_hop(&slots[s], any_resolving(slots, nslots)))
		{
			drop_lookup(&slots[s]);
			end_call(&slots[s], hooks);
		}
		MemoryContextSwitchTo(old);
	}
}

/* How far ahead of the first waiting call to look for one whose host has room. */
#define QC_LOOKAHEAD 64

/*
 * Fill free slots with waiting calls, in input order but skipping (within
 * a window) calls whose host is at queryclaw.max_host_concurrency.  Each
 * is admitted by the owner first; calls that end at once (not admitted,
 * refused, invalid URL) are handed back directly.  held_back: ended calls
 * not yet handed back, which the owner's admission must count among the
 * calls in flight (they still hold what it may wait for).
 */
/* A call its owner gave up: recorded as cancelled; it was never audited. */
static void
record_abandoned(QcCall *call)
{
	qc_call_set_failure(call, QC_OUTCOME_CANCELLED, ERRCODE_QUERY_CANCELED,
						pstrdup("cancelled"), NULL, NULL);
}

/* Is the call one its owner gave up (before or while it runs)? */
static bool
abandoned(QcCall *call, const QcTransportHooks *hooks)
{
	return hooks->abandoned != NULL && hooks->abandoned(call, hooks->arg);
}

/*
 * Ask the owner's watch hook, at most every QC_TRANSPORT_WATCH_MS; cut off
 * the calls in flight it gave up, their transfers aborted.
 */
static void
watch_calls(Slot *slots, int nslots, TimestampTz *next_watch,
			const QcTransportHooks *hooks)
{
	TimestampTz now;

	if (hooks->watch == NULL ||
		(now = GetCurrentTimestamp()) < *next_watch)
		return;
	*next_watch = TimestampTzPlusMilliseconds(now, QC_TRANSPORT_WATCH_MS);
	if (!hooks->watch(hooks->arg))
		return;
	for (int s = 0; s < nslots; s++)
	{
		MemoryContext old;

		if (slots[s].call == NULL || !abandoned(slots[s].call, hooks))
			continue;
		old = switch_to_call(hooks, slots[s].call);
		drop_lookup(&slots[s]);
		release_hop(&slots[s]);
		record_abandoned(slots[s].call);
		end_call(&slots[s], hooks);
		MemoryContextSwitchTo(old);
	}
}

/*
 * The calls of a run not yet started, in order: calls[first] is the first
 * that waits (those after it may have started, out of order, when their
 * host had room).  A fed run appends to it.
 */
typedef struct Waiting
{
	QcCall	  **calls;
	bool	   *started;
	int			n;
	int			first;
	int			size;			/* allocated */
} Waiting;

/* The calls a run begins with (a fed run: none yet). */
static Waiting *
waiting_list(QcCall **calls, int ncalls)
{
	Waiting    *w = palloc(sizeof(Waiting));

	w->size = Max(ncalls, 1);
	w->calls = palloc(w->size * sizeof(QcCall *));
	w->started = palloc0(w->size * sizeof(bool));
	w->n = ncalls;
	w->first = 0;
	if (ncalls > 0)
		memcpy(w->calls, calls, ncalls * sizeof(QcCall *));
	return w;
}

static bool
anything_waiting(const Waiting *w)
{
	return w->first < w->n;
}

static void
fill_slots(Slot *slots, int nslots, Waiting *w, bool held_back,
		   const QcTransportHooks *hooks)
{
	for (int s = 0; s < nslots; s++)
	{
		if (slots[s].call != NULL)
			continue;
		while (w->first < w->n && w->started[w->first])
			w->first++;
		for (int i = w->first; i < w->n && i < w->first + QC_LOOKAHEAD; i++)
		{
			QcCall	   *call = w->calls[i];
			QcAdmission admission = QC_ADMIT_START;
			MemoryContext old;
			bool		started;

			if (w->started[i] || !host_has_room(slots, nslots, call))
				continue;
			old = switch_to_call(hooks, call);
			if (abandoned(call, hooks))
			{
				/* never sent: no attempt, no audit row */
				w->started[i] = true;
				record_abandoned(call);
				call->audited = true;
				call_done(call, hooks);
				MemoryContextSwitchTo(old);
				continue;
			}
			/* a fed call was admitted by its owner */
			if (hooks->feed == NULL)
				admission = hooks->admit(call, held_back || any_running(slots, nslots),
										 hooks->arg);
			/* later, once one of the calls in flight ended */
			if (admission == QC_ADMIT_LATER)
			{
				MemoryContextSwitchTo(old);
				return;
			}
			w->started[i] = true;
			started = admission == QC_ADMIT_START && start_call(&slots[s], call);
			if (!started)
				call_done(call, hooks);
			MemoryContextSwitchTo(old);
			if (started)
				break;
		}
	}
	/* so that first == n once every call has started */
	while (w->first < w->n && w->started[w->first])
		w->first++;
}

/* How many slots hold no call and are not waited for. */
static int
free_room(Slot *slots, int nslots, const Waiting *w)
{
	int			room = 0;

	for (int s = 0; s < nslots; s++)
		if (slots[s].call == NULL)
			room++;
	for (int i = w->first; i < w->n; i++)
		if (!w->started[i])
			room--;
	return room;
}

/*
 * A fed run: ask the feed for as many calls as there is room for, and
 * append them, the calls already started dropped from the front first.
 * Returns how many came.
 */
static int
feed_calls(Slot *slots, int nslots, Waiting *w, const QcTransportHooks *hooks)
{
	int			room = free_room(slots, nslots, w);
	int			fed;

	if (room <= 0)
		return 0;
	if (w->first > 0)
	{
		w->n -= w->first;
		memmove(w->calls, w->calls + w->first, w->n * sizeof(QcCall *));
		memmove(w->started, w->started + w->first, w->n * sizeof(bool));
		w->first = 0;
	}
	if (w->n + room > w->size)
	{
		w->size = w->n + room;
		w->calls = repalloc(w->calls, w->size * sizeof(QcCall *));
		w->started = repalloc(w->started, w->size * sizeof(bool));
	}
	fed = hooks->feed(w->calls + w->n, room, hooks->arg);
	Assert(fed >= 0 && fed <= room);
	memset(w->started + w->n, 0, fed * sizeof(bool));
	w->n += fed;
	return fed;
}

/*
 * A run owns its multi handle and its slots from its start to its end.  A
 * run started inside another (something the first one reached as one of
 * its calls ended: a model's tool that calls a server itself while the
 * async worker's run has other roles' transfers out, a trigger on the
 * audit log without preload) gets a multi handle and slots of its own, so
 * that it can neither reset nor free a slot in flight nor take a
 * completion that is not its own; the outer run's transfers wait, as they
 * are, until it ends.  A run inside that one is refused, before it touches
 * anything.
 */
#define QC_TRANSPORT_DEPTH 2

typedef struct Pool
{
	CURLM	   *multi;
	QcEvents   *events;			/* multi's sockets and timer (events.c) */
	Slot	   *slots;
	int			size;
} Pool;

static Pool pools[QC_TRANSPORT_DEPTH];
static int	runs = 0;			/* under way: pools[runs - 1] is the innermost's */

/*
 * The first n slots of the pool of a run that starts now, the others of
 * that depth made ready; raises when runs are nested too deep.
 */
static Slot *
take_pool(QcCall **calls, int ncalls, int n)
{
	Pool	   *pool;

	if (runs == QC_TRANSPORT_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s cannot send a request from a run of requests started inside another",
						ncalls > 0 ? calls[0]->func : "a call"),
				 errdetail("It was reached from inside a run of requests (as one of them ended) that itself runs inside another; their transfers are left as they are."),
				 errhint("Queue the request instead (api_call_async, web_fetch_async or llm_chat_tools_async), or make it in a statement of its own.")));
	pool = &pools[runs];
	if (pool->multi == NULL)
	{
		pool->multi = new_multi();
		if ((pool->events = qc_events_attach(pool->multi)) == NULL)
			elog(ERROR, "could not watch the transfers' sockets: %m");
	}
	if (n > pool->size)
	{
		Slot	   *bigger = MemoryContextAllocZero(TopMemoryContext, n * sizeof(Slot));

		/* no run of this depth is under way: none of its slots is in use */
		if (pool->slots != NULL)
		{
			memcpy(bigger, pool->slots, pool->size * sizeof(Slot));
			pfree(pool->slots);
		}
		pool->slots = bigger;
		for (; pool->size < n; pool->size++)
			if ((pool->slots[pool->size].easy = curl_easy_init()) == NULL)
				elog(ERROR, "could not create a libcurl handle");
	}
	for (int i = 0; i < n; i++)
		pool->slots[i].call = NULL;
	return pool->slots;
}

/*
 * Might libcurl start a thread to look a name up in this perform?  Only
 * for a hop it was handed (not one waiting for our own lookup) that it was
 * not given the addresses of: a proxy's name, a trusted endpoint's name,
 * or "localhost".
 */
static bool
any_curl_resolving(Slot *slots, int nslots)
{
	for (int s = 0; s < nslots; s++)
		if (slots[s].call != NULL && !slots[s].must_resolve &&
			(slots[s].call->policy->proxy[0] != '\0' ||
			 (!slots[s].hop.host_is_ip && slots[s].resolve_list == NULL)))
			return true;
	return false;
}

/*
 * Run the transfers that have something to do (qc_events_run), with every
 * signal blocked while it runs when it may start a thread to look a name
 * up.  Such a thread inherits the mask, so
 * the backend's signal handlers never run in it: a statement timeout sends
 * SIGINT twice (to the process and to its group), and taken by two threads
 * the second would cancel the statement again once the first had been
 * handled.  Signals that arrive meanwhile are handled on return.  Hops on
 * checked addresses (CURLOPT_RESOLVE, or a literal address) start none, and
 * skip the two system calls.
 */
static CURLMcode
perform(Slot *slots, int nslots, int *running)
{
	sigset_t	all;
	sigset_t	saved;
	CURLMcode	mc;

	if (!any_curl_resolving(slots, nslots))
		return qc_events_run(qc_events, running);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	mc = qc_events_run(qc_events, running);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return mc;
}

/* Wait for socket activity (or a signal) for at most one slice of ms. */
static void
wait_for_activity(int ms)
{
	CHECK_FOR_INTERRUPTS();
	pgstat_report_wait_start(qc_wait_event(QC_WAIT_HTTP));
	/* a signal (cancel, timeout) interrupts the poll at once */
	qc_events_wait(qc_events, ms);
	pgstat_report_wait_end();
}

/*
 * Calls whose transfer ended, not yet handed back: at most one per slot.
 * While calls wait for a slot, the ended ones are handed back once their
 * slots have been given new calls and those were sent, so that the owner's
 * work on them (shaping the response, the audit row) overlaps the next
 * requests instead of delaying them.  With none waiting there is nothing
 * to send first: each is handed back at once, and its body freed before
 * the next is taken.
 */
typedef struct Ended
{
	QcCall	  **calls;
	int			n;
} Ended;

/*
 * Hand every finished transfer to finish_hop; free the slots of the calls
 * that are over, keeping those calls in *ended (with defer) or handing
 * them back.  Returns how many calls are over.
 */
static int
collect_finished(Ended *ended, bool defer, const QcTransportHooks *hooks)
{
	CURLMsg    *msg;
	int			left;
	int			over = 0;

	while ((msg = curl_multi_info_read(qc_multi, &left)) != NULL)
	{
		Slot	   *slot;
		MemoryContext old;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &slot);
		old = switch_to_call(hooks, slot->call);
		if (finish_hop(slot, msg->data.result))
			;					/* the next hop is under way */
		else if (!defer)
		{
			end_call(slot, hooks);
			over++;
		}
		else
		{
			slot->call->elapsed_ms = qc_call_elapsed_ms(slot->call);
			ended->calls[ended->n++] = slot->call;
			slot->call = NULL;
			over++;
		}
		MemoryContextSwitchTo(old);
	}
	return over;
}

/*
 * Hand the ended calls back, each taken off the list first: one whose
 * owner raises an error (a cancel while its response is shaped) is the
 * owner's to account for, the others are still the transport's.
 */
static void
hand_back(Ended *ended, const QcTransportHooks *hooks)
{
	for (int i = 0; i < ended->n; i++)
	{
		QcCall	   *call = ended->calls[i];

		ended->calls[i] = NULL;
		hooks->done(call, hooks->arg);
	}
	ended->n = 0;
}

void
qc_http_execute_many(QcCall **calls, int ncalls, int concurrency,
					 const QcTransportHooks *hooks)
{
	volatile int nslots = Max(1, hooks->feed ? concurrency : Min(concurrency, ncalls));
	Slot	   *volatile slots = take_pool(calls, ncalls, nslots);
	/* in memory, not in locals the error path could see stale */
	Waiting    *w = waiting_list(calls, ncalls);
	Ended	   *ended = palloc0(sizeof(Ended));
	TimestampTz next_watch = 0;

	ended->calls = palloc0(nslots * sizeof(QcCall *));
	qc_multi = pools[runs].multi;
	qc_events = pools[runs++].events;
	PG_TRY();
	{
		for (;;)
		{
			int			running;
			CURLMcode	mc;
			bool		fed = false;
			int			over;

			watch_calls(slots, nslots, &next_watch, hooks);
			if (hooks->feed != NULL)
				fed = feed_calls(slots, nslots, w, hooks) > 0;
			fill_slots(slots, nslots, w, ended->n > 0, hooks);
			resolve_hosts(slots, nslots, hooks);
			if (!any_running(slots, nslots) && !anything_waiting(w) && ended->n == 0 &&
				!fed)
				break;

			/* send what was just started, then hand back what had ended */
			mc = perform(slots, nslots, &running);
			if (mc != CURLM_OK)
				elog(ERROR, "transfer failed: %s", curl_multi_strerror(mc));
			hand_back(ended, hooks);
			over = collect_finished(ended, anything_waiting(w), hooks);

			/*
			 * slots came free: fill them before waiting (a fed run asks its
			 * feed first, for the calls that ended were handed back)
			 */
			if (ended->n == 0 && !(hooks->feed && over > 0) &&
				(running > 0 || any_resolving(slots, nslots)))
				wait_for_activity(hooks->feed ? QC_TRANSPORT_FEED_MS : QC_POLL_SLICE_MS);
		}
	}
	PG_FINALLY();
	{
		/* only an error (a cancel) leaves a call in a slot or not handed back */
		for (int i = 0; i < ended->n; i++)
			if (ended->calls[i] != NULL)
				hooks->interrupted(ended->calls[i], hooks->arg);
		for (int s = 0; s < nslots; s++)
		{
			if (slots[s].call != NULL)
				hooks->interrupted(slots[s].call, hooks->arg);
			drop_lookup(&slots[s]);
			release_hop(&slots[s]);
			slots[s].call = NULL;
		}
		runs--;
		qc_multi = runs > 0 ? pools[runs - 1].multi : NULL;
		qc_events = runs > 0 ? pools[runs - 1].events : NULL;
	}
	PG_END_TRY();
	pfree(ended->calls);
	pfree(ended);
	pfree(w->calls);
	pfree(w->started);
	pfree(w);
}

const char *
qc_http_received(const QcCall *call, size_t *len, const char **head)
{
	Pool	   *pool = runs > 0 ? &pools[runs - 1] : NULL;

	for (int s = 0; pool != NULL && s < pool->size; s++)
	{
		Slot	   *slot = &pool->slots[s];

		if (slot->call != call || slot->t.head == NULL)
			continue;
		*len = slot->t.body_len;
		*head = slot->t.head;
		return slot->t.body;
	}
	return NULL;
}

bool
qc_http_can_nest(void)
{
	return runs < QC_TRANSPORT_DEPTH;
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
