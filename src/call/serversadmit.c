/*-------------------------------------------------------------------------
 *
 * serversadmit.c
 *	  A call under a foreign server, as the transport starts it: the
 *	  server's concurrency cap and rate limit, queryclaw.servers_only, and
 *	  the user mapping's headers and parameters put on the call (servers.h).
 *
 * The owner of calls (call.c) asks here from its admit hook, which the
 * transport calls just before each call starts, whatever made the call: a
 * SQL function, a batch, a model's tool call, the asynchronous worker.
 * What the role may use was read when the call was built (servers.c);
 * nothing here reads the catalogs.
 *
 * The mapping's headers replace the caller's of the same name: a caller
 * cannot send its own Authorization to a server whose mapping sets one.
 * At a redirect that leaves the server's url they are dropped (servers.c,
 * for the transport); the parameters were in the first hop's URL only.
 *
 * A server's limits only narrow the policy: its timeout shortens the
 * call's, never lengthens it; its retry_max is at most the role's
 * queryclaw.retry_max; its rate limit and concurrency cap are its own,
 * beside the host's.
 *
 * The concurrency cap counts this backend's calls in flight under each
 * server, as queryclaw.max_host_concurrency counts a batch's; the rate
 * limit is a token bucket in shared memory (hostrate.c), shared by every
 * backend and worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "hostrate.h"
#include "http.h"
#include "latchwait.h"
#include "redact.h"
#include "servers.h"
#include "serversadmit.h"

/* This backend's calls in flight under each server (at most one per slot). */
static struct
{
	Oid			serverid;
	int			calls;
}			busy[QC_MAX_CONCURRENCY_LIMIT];

static int *
busy_count(Oid serverid, bool enter)
{
	int			free_slot = -1;

	for (int i = 0; i < lengthof(busy); i++)
	{
		if (busy[i].calls > 0 && busy[i].serverid == serverid)
			return &busy[i].calls;
		if (busy[i].calls == 0 && free_slot < 0)
			free_slot = i;
	}
	if (!enter || free_slot < 0)
		return NULL;
	busy[free_slot].serverid = serverid;
	return &busy[free_slot].calls;
}

QcServerAdmission
qc_server_admit_slot(QcCall *call, bool others_in_flight)
{
	QcServerUse *use = call->server;
	int		   *calls;

	if (use == NULL || use->opts.max_concurrency == 0 || !others_in_flight)
		return QC_SERVER_START;
	calls = busy_count(use->serverid, false);
	return calls != NULL && *calls >= use->opts.max_concurrency ?
		QC_SERVER_LATER : QC_SERVER_START;
}

void
qc_server_release(QcCall *call)
{
	int		   *calls;

	if (call->server == NULL || !call->server->in_flight)
		return;
	call->server->in_flight = false;
	if ((calls = busy_count(call->server->serverid, false)) != NULL)
		(*calls)--;
}

bool
qc_server_rate_admit(QcCall *call, TimestampTz now, TimestampTz *go_at)
{
	QcServerUse *use = call->server;
	char		key[32];

	*go_at = now;
	if (use == NULL || use->opts.rate == 0 || use->token_held)
		return true;
	snprintf(key, sizeof(key), "server %u", use->serverid);
	/* taken, or promised for *go_at: either way not asked for again */
	use->token_held = true;
	return qc_hostrate_take(key, use->opts.rate, now, go_at);
}

void
qc_server_rate_promised(QcCall *call)
{
	if (call->server != NULL)
		call->server->token_held = true;
}

int
qc_server_retry_max(const QcCall *call, int fallback)
{
	const QcServerUse *use = call->server;

	if (use == NULL || !OidIsValid(use->serverid) || use->opts.retry_max < 0)
		return fallback;
	return Min(use->opts.retry_max, fallback);
}

/*
 * A token from the server's bucket.  A backend waits for one that comes
 * within the call's time; the asynchronous worker never waits (other
 * requests are on the wire): the refusal's retry_at holds the request in
 * the queue until then.
 */
static bool
take_token(QcCall *call, QcVerdict *verdict)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz go_at;
	int64		wait_ms;

	if (qc_server_rate_admit(call, now, &go_at))
		return true;
	wait_ms = (go_at - now + 999) / 1000;
	if (MyBackendType != B_BG_WORKER && wait_ms < call->timeout_ms)
	{
		qc_latch_sleep(wait_ms, QC_WAIT_SERVER_RATE);
		call->timeout_ms -= (int) wait_ms;
		return true;
	}
	return qc_verdict_refuse(verdict, ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
							 psprintf("rate limit of server \"%s\" reached", call->server->name),
							 psprintf("Its rate_limit is %s, and the next token comes later than the call may wait (%s).",
									  call->server->opts.rate_text, call->timeout_setting),
							 pstrdup("Wait, or ask the server's owner to raise rate_limit (ALTER SERVER ... OPTIONS (SET rate_limit '...'))."),
							 go_at);
}

/* url with the parameters added to its query string, before any fragment. */
static char *
add_query(const char *url, const char *query)
{
	size_t		before = strcspn(url, "#");
	const char *q = memchr(url, '?', before);
	const char *sep = q == NULL ? "?" : (q + 1 == url + before || url[before - 1] == '&') ? "" : "&";

	return psprintf("%.*s%s%s%s", (int) before, url, sep, query, url + before);
}

/* Put the mapping and the server's options on the call, once. */
static void
apply(QcCall *call, QcServerUse *use)
{
	List	   *kept = NIL;
	ListCell   *lc;

	if (use->applied)
		return;
	use->applied = true;
	foreach(lc, call->headers)
	{
		QcHeader   *h = lfirst(lc);

		if (qc_http_find_header(use->headers, h->name) == NULL)
			kept = lappend(kept, h);
	}
	call->headers = list_concat(kept, use->headers);
	if (use->query != NULL)
		qc_call_set_url(call, add_query(call->url, use->query));
	/* a server's limits only narrow the call's: its timeout only shortens */
	if (use->opts.timeout_ms > 0 && use->opts.timeout_ms < call->timeout_ms)
	{
		call->timeout_ms = use->opts.timeout_ms;
		call->timeout_setting = psprintf("Server %s's timeout", use->name);
	}
}

const char *
qc_server_audit_name(const QcCall *call)
{
	return call->server != NULL && call->server->applied ? call->server->name : NULL;
}

const QcVerdict *
qc_server_refusal(const QcCall *call)
{
	return call->server != NULL && !call->trusted ? call->server->refusal : NULL;
}

QcServerAdmission
qc_server_admit(QcCall *call)
{
	QcServerUse *use = call->server;
	const QcVerdict *refusal = qc_server_refusal(call);
	QcVerdict	verdict;
	int		   *calls;

	if (use == NULL)
		return QC_SERVER_START;
	if (refusal != NULL)
	{
		qc_call_set_refusal(call, refusal);
		return QC_SERVER_REFUSED;
	}
	if (!OidIsValid(use->serverid))
		return QC_SERVER_START;
	apply(call, use);
	if (!take_token(call, &verdict))
	{
		qc_call_set_refusal(call, &verdict);
		return QC_SERVER_REFUSED;
	}
	if ((calls = busy_count(use->serverid, true)) != NULL)
	{
		(*calls)++;
		use->in_flight = true;
	}
	return QC_SERVER_START;
}

/* Replace each secret in len bytes at buf, in place; returns the new length. */
static size_t
redact_bytes(char *buf, size_t len, List *secrets)
{
	static const char redacted[] = "REDACTED";
	ListCell   *lc;

	foreach(lc, secrets)
	{
		const char *secret = lfirst(lc);
		size_t		slen = strlen(secret);
		char	   *hit;
		char	   *from = buf;

		/* a secret is at least as long as what replaces it */
		while ((hit = memmem(from, len - (from - buf), secret, slen)) != NULL)
		{
			memcpy(hit, redacted, sizeof(redacted) - 1);
			memmove(hit + sizeof(redacted) - 1, hit + slen, len - (hit + slen - buf));
			len -= slen - (sizeof(redacted) - 1);
			buf[len] = '\0';
			from = hit + sizeof(redacted) - 1;
		}
	}
	return len;
}

/* Text that may hold secrets JSON-escaped, else bytes: redacted. */
static char *
redact_response_part(char *part, size_t *len, List *secrets)
{
	const char *text;

	if (part == NULL)
		return NULL;
	if (memchr(part, '\0', *len) != NULL)
	{
		*len = redact_bytes(part, *len, secrets);
		return part;
	}
	text = qc_redact_secrets(part, secrets);
	if (text == part)
		return part;
	*len = strlen(text);
	return (char *) text;
}

void
qc_server_redact_response(QcCall *call)
{
	List	   *secrets = qc_call_mapping_secrets(call);
	size_t		len;

	if (secrets == NIL)
		return;
	call->response_body = redact_response_part(call->response_body,
											   &call->response_len, secrets);
	if (call->response_headers != NULL)
	{
		len = strlen(call->response_headers);
		call->response_headers = redact_response_part(call->response_headers, &len, secrets);
	}
	if (call->final_url != NULL)
	{
		len = strlen(call->final_url);
		call->final_url = redact_response_part(call->final_url, &len, secrets);
	}
}
