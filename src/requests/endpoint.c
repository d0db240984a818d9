/*-------------------------------------------------------------------------
 *
 * endpoint.c
 *	  Synchronous requests to the DBA's endpoints (LLM, embeddings, search)
 *	  with retries: the loop of attempts and the waits between them.  What
 *	  is retried and for how long is retry.c's policy.
 *
 * Each attempt is a QcCall of its own, so each is admitted (master switch,
 * rate limit, room in the audit queue), timed and audited like any call.
 * The waits are latch waits, reported as an Extension wait event, that a
 * query cancel or statement_timeout ends at once.  A synchronous caller
 * never waits longer than one request may take: a Retry-After past that
 * (or past retry_max_delay) ends the retries and is quoted in the error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "endpoint.h"
#include "guc.h"
#include "http.h"
#include "latchwait.h"
#include "servers.h"
#include "serversadmit.h"

/* A new call for one attempt at proto's request. */
static QcCall *
attempt_call(const QcCall *proto, int attempt)
{
	QcCall	   *call = qc_call_new(proto->func, proto->method, proto->url);

	call->headers = proto->headers;
	call->body = proto->body;
	call->body_len = proto->body_len;
	call->max_chars = proto->max_chars;
	call->timeout_ms = proto->timeout_ms;
	call->timeout_setting = proto->timeout_setting;
	call->max_bytes = proto->max_bytes;
	call->trusted = proto->trusted;
	qc_server_attempt(call, proto);
	call->audit_extra = proto->audit_extra;
	if (attempt > 1)
		call->audit_extra = psprintf("%s%s\"attempt\": %d",
									 proto->audit_extra ? proto->audit_extra : "",
									 proto->audit_extra ? ", " : "", attempt);
	return call;
}

/* Did a call that got no response fail in a way worth another attempt? */
static bool
failure_retryable(const QcRetryTarget *target, const QcCall *call)
{
	if (strcmp(call->outcome, QC_OUTCOME_TIMEOUT) == 0)
		return qc_retry_failure(target, QC_FAILED_TRANSFER);
	if (call->error_code == ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION)
		return qc_retry_failure(target, QC_FAILED_CONNECT);
	if (call->error_code == ERRCODE_CONNECTION_FAILURE)
		return qc_retry_failure(target, QC_FAILED_TRANSFER);
	/* refused, disabled, rate-limited, no room to audit: not a passing fault */
	return false;
}

void
qc_endpoint_sleep(int64 ms)
{
	qc_latch_sleep(ms, QC_WAIT_RETRY);
}

char *
qc_endpoint_url(const char *base, const char *path)
{
	size_t		query = strcspn(base, "?");
	size_t		len = query;

	while (len > 0 && base[len - 1] == '/')
		len--;
	return psprintf("%.*s%s%s", (int) len, base, path, base + query);
}

QcCall *
qc_endpoint_request(const char *func, const QcEndpointBase *base, const char *path,
					const char *key, size_t max_bytes, const char *body)
{
	QcCall	   *call = qc_call_new(func, "POST", qc_endpoint_url(base->url, path));

	qc_server_endpoint_call(call, base);
	call->timeout_ms = qc_llm_timeout;
	call->timeout_setting = "queryclaw.llm_timeout";
	/* replies are bounded by tokens, not by the limit meant for web pages */
	call->max_bytes = Max(QC_MAX_BYTES(), max_bytes);
	call->headers = qc_http_add_header(NIL, "Content-Type", "application/json");
	/* under a server, the role's mapping is the key: never the DBA's */
	if (key != NULL && key[0] != '\0' && base->server == NULL)
		call->headers = pg_strcasecmp(qc_llm_api_key_header, "Authorization") == 0 ?
			qc_http_add_header(call->headers, "Authorization",
							   psprintf("Bearer %s", key)) :
			qc_http_add_header(call->headers, qc_llm_api_key_header, key);
	call->body = body;
	call->body_len = strlen(body);
	return call;
}

/* "20 s", "1.5 s", "250 ms" */
static char *
show_ms(int64 ms)
{
	if (ms < 1000)
		return psprintf(INT64_FORMAT " ms", ms);
	if (ms % 1000 == 0)
		return psprintf(INT64_FORMAT " s", ms / 1000);
	return psprintf("%.1f s", ms / 1000.0);
}

char *
qc_endpoint_attempts_note(const QcAttempts *a)
{
	const char *made = a->count == 1 ? "1 attempt was made" :
		psprintf("%d attempts were made", a->count);

	if (a->longest_setting != NULL)
		return psprintf("%s: the endpoint asked to wait %s before the next (Retry-After), longer than %s (%s) allows.",
						made, show_ms(a->retry_after_ms), a->longest_setting,
						show_ms(a->longest_ms));
	if (a->count == 1)
		return "";
	return psprintf("%s.", made);
}

void
qc_endpoint_try_init(QcEndpointTry *t, const QcCall *proto,
					 QcRetryEndpoint endpoint, int64 longest_ms)
{
	memset(t, 0, sizeof(*t));
	t->proto = proto;
	t->target.endpoint = endpoint;
	t->target.method = proto->method;
	t->target.idempotency_key = qc_http_find_header(proto->headers, "Idempotency-Key") != NULL;
	t->longest_ms = longest_ms;
}

QcCall *
qc_endpoint_try_call(QcEndpointTry *t)
{
	return attempt_call(t->proto, ++t->att.count);
}

int64
qc_endpoint_try_judge(QcEndpointTry *t, QcCall *call)
{
	QcRetrySettings settings = {qc_server_retry_max(call, qc_retry_max),
	qc_retry_base_delay, qc_retry_max_delay};
	QcAttempts *att = &t->att;
	int64		wait_ms = 0;
	QcRetryVerdict verdict;

	t->responded = call->error_code == 0;
	att->retryable = t->responded ? qc_retry_status(&t->target, call->status) :
		failure_retryable(&t->target, call);
	att->retry_after_ms = -1;
	if (t->responded && att->retryable &&
		!qc_retry_after_header(call->response_headers, time(NULL), &att->retry_after_ms))
		att->retry_after_ms = -1;
	if (!att->retryable)
		return -1;
	verdict = qc_retry_next(&settings, att->count, att->retry_after_ms, t->longest_ms,
							pg_prng_double(&pg_global_prng_state), &wait_ms);
	if (verdict == QC_RETRY_TOO_LONG)
	{
		att->longest_ms = t->longest_ms;
		att->longest_setting = t->longest_ms == qc_retry_max_delay ?
			"queryclaw.retry_max_delay" : t->proto->timeout_setting;
	}
	if (verdict != QC_RETRY_WAIT)
		return -1;
	/* this attempt is over (a failure without a response is audited) */
	if (t->responded)
		qc_call_set_failure(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
							psprintf("HTTP status %ld, tried again after %s", call->status,
									 show_ms(wait_ms)),
							NULL, NULL);
	qc_call_end(call);
	return wait_ms;
}

QcCall *
qc_endpoint_try_last(QcEndpointTry *t, QcCall *call)
{
	if (!t->responded)
	{
		const char *note = qc_endpoint_attempts_note(&t->att);

		if (note[0] != '\0')
			call->error_detail = call->error_detail ?
				psprintf("%s %s", call->error_detail, note) : pstrdup(note);
		qc_call_raise(call);
	}
	return call;
}

QcCall *
qc_endpoint_send(const QcCall *proto, QcRetryEndpoint endpoint,
				 QcAttempts *att)
{
	QcEndpointTry t;
	QcCall	   *call;
	int64		wait_ms;

	/* a synchronous caller waits no longer than one request may take */
	qc_endpoint_try_init(&t, proto, endpoint, Min(qc_retry_max_delay, proto->timeout_ms));
	for (;;)
	{
		call = qc_endpoint_try_call(&t);
		(void) qc_call_run(call);
		if ((wait_ms = qc_endpoint_try_judge(&t, call)) < 0)
			break;
		qc_endpoint_sleep(wait_ms);
	}
	*att = t.att;
	return qc_endpoint_try_last(&t, call);
}
