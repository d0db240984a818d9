/*-------------------------------------------------------------------------
 *
 * endpoint.h
 *	  Requests to the DBA's own endpoints (LLM, embeddings, search), sent
 *	  with retries under the retry policy (retry.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ENDPOINT_H
#define QC_ENDPOINT_H

#include "call.h"
#include "retry.h"
#include "servers.h"

/* How the attempts went, for the caller's final error. */
typedef struct QcAttempts
{
	int			count;			/* attempts made, 1 or more */
	bool		retryable;		/* the last one failed in a retryable way */
	int64_t		retry_after_ms; /* the last Retry-After, or -1 */
	const char *longest_setting;	/* what bounded the wait, when too long */
	int64_t		longest_ms;
} QcAttempts;

/*
 * Send proto's request to a trusted endpoint (proto->trusted is set) and
 * return the last attempt's call, with a response of any status: the caller
 * judges it and ends it (qc_call_end or qc_call_fail: call.h).  A retryable
 * status or failure is audited (its "attempt" in the detail from the
 * second on), then waited for (interruptibly, as a wait event) and sent
 * again as a new call, until it succeeds, retry_max retries were made, or
 * a Retry-After is longer than one wait may be (retry_max_delay, and the
 * call's own timeout: a synchronous caller waits no longer than one
 * request may take).  A failure without a response after the last attempt
 * (or one never retried, such as a refusal) is raised, its detail saying
 * how many attempts were made.
 */
extern QcCall *qc_endpoint_send(const QcCall *proto, QcRetryEndpoint endpoint,
								QcAttempts *attempts);

/*
 * The same request, attempt by attempt, for a caller that waits between
 * attempts by itself (the LLM loop, which may run many requests at once):
 * qc_endpoint_try_call() gives the next attempt's call to run; once it ran,
 * qc_endpoint_try_judge() audits a retryable failure and returns how many
 * milliseconds to wait before the next attempt, or -1 when this call is the
 * last; qc_endpoint_try_last() then raises a failure without a response
 * (its detail saying how many attempts were made) or returns the call.
 * longest_ms bounds one wait (a longer Retry-After ends the retries).
 */
typedef struct QcEndpointTry
{
	const QcCall *proto;
	QcRetryTarget target;
	int64		longest_ms;
	bool		responded;		/* the last attempt got a response */
	QcAttempts	att;
} QcEndpointTry;

extern void qc_endpoint_try_init(QcEndpointTry *t, const QcCall *proto,
								 QcRetryEndpoint endpoint, int64 longest_ms);
extern QcCall *qc_endpoint_try_call(QcEndpointTry *t);
extern int64 qc_endpoint_try_judge(QcEndpointTry *t, QcCall *call);
extern QcCall *qc_endpoint_try_last(QcEndpointTry *t, QcCall *call);

/* Wait ms on the latch (an Extension wait event); a cancel ends it. */
extern void qc_endpoint_sleep(int64 ms);

/*
 * A sentence on the attempts for an error's detail ("3 attempts were
 * made." or why no more were made), or "" after a single plain attempt.
 */
extern char *qc_endpoint_attempts_note(const QcAttempts *attempts);

/*
 * An API endpoint: base (a setting such as queryclaw.llm_url) without its
 * trailing '/', then path, then base's query string, if any.
 */
extern char *qc_endpoint_url(const char *base, const char *path);

/*
 * A POST of a JSON body to a DBA's endpoint (the model, the embeddings):
 * base's URL and path as qc_endpoint_url joins them, trusted and under
 * base's server as qc_server_endpoint_call() makes it, llm_timeout, a
 * response of up to max_bytes (or max_bytes the setting, if larger), and
 * key, unless NULL or empty or base is a server (whose user mapping holds
 * the role's key), in the header queryclaw.llm_api_key_header names.
 */
extern QcCall *qc_endpoint_request(const char *func, const QcEndpointBase *base,
								   const char *path, const char *key,
								   size_t max_bytes, const char *body);

#endif							/* QC_ENDPOINT_H */
