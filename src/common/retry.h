/*-------------------------------------------------------------------------
 *
 * retry.h
 *	  The retry policy (README, "Retries"): which failures are tried
 *	  again, and how long to wait before the next attempt.  One policy for
 *	  the synchronous calls to the DBA's endpoints (endpoint.c) and for the
 *	  asynchronous queue.
 *
 * Pure C (no PostgreSQL headers, no allocation): the caller passes the
 * settings, the clock and the random draw, so every decision can be tested
 * without a server (test/unit/test_retry.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RETRY_H
#define QC_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Where a request goes: the DBA's endpoints have no side effects. */
typedef enum QcRetryEndpoint
{
	QC_ENDPOINT_OTHER,			/* any URL a caller chose */
	QC_ENDPOINT_LLM,			/* queryclaw.llm_url: 409 is retried too */
	QC_ENDPOINT_EMBED,			/* queryclaw.embed_url */
	QC_ENDPOINT_SEARCH			/* queryclaw.search_url */
} QcRetryEndpoint;

/* What the policy needs to know about a request. */
typedef struct QcRetryTarget
{
	QcRetryEndpoint endpoint;
	const char *method;			/* upper case */
	bool		idempotency_key;	/* sent with an Idempotency-Key header */
} QcRetryTarget;

/* How an attempt failed without a response. */
typedef enum QcRetryFailure
{
	QC_FAILED_CONNECT,			/* no connection: nothing was sent */
	QC_FAILED_TRANSFER			/* timed out or broke once connected */
} QcRetryFailure;

/* The settings: retry_max, retry_base_delay, retry_max_delay (ms). */
typedef struct QcRetrySettings
{
	int			max_retries;
	int64_t		base_delay_ms;
	int64_t		max_delay_ms;
} QcRetrySettings;

/* Is a response with this status worth another attempt? */
extern bool qc_retry_status(const QcRetryTarget *target, long status);

/* Is an attempt that failed this way worth another one? */
extern bool qc_retry_failure(const QcRetryTarget *target, QcRetryFailure failure);

/*
 * The backoff before the next attempt, after `attempts` attempts (1 or
 * more): base * 2^(attempts-1), capped at the maximum, of which the upper
 * half is jitter (jitter01 is a uniform draw in [0, 1)).
 */
extern int64_t qc_retry_backoff_ms(const QcRetrySettings *s, int attempts,
								   double jitter01);

/*
 * A Retry-After value as milliseconds from now: delay-seconds, or an HTTP
 * date (a date in the past is 0).  False when it is neither.
 */
extern bool qc_retry_after_parse(const char *value, time_t now, int64_t *ms);

/*
 * The wait a raw response header block asks for: retry-after-ms (OpenAI's,
 * in milliseconds) when present, else Retry-After parsed as above; false
 * when neither is there and readable.
 */
extern bool qc_retry_after_header(const char *head, time_t now, int64_t *ms);

/* The decision after a failed attempt. */
typedef enum QcRetryVerdict
{
	QC_RETRY_WAIT,				/* wait *wait_ms, then try again */
	QC_RETRY_EXHAUSTED,			/* retry_max retries were made */
	QC_RETRY_TOO_LONG			/* Retry-After is beyond the longest wait */
} QcRetryVerdict;

/*
 * After `attempts` attempts, the last retryable: try again, and after how
 * long?  retry_after_ms is the server's Retry-After, or -1.  longest_ms
 * bounds one wait: retry_max_delay, and in a synchronous call the
 * endpoint's timeout too.  The backoff is cut to it; a longer Retry-After
 * is QC_RETRY_TOO_LONG (waiting less than the server asked would only be
 * refused again).
 */
extern QcRetryVerdict qc_retry_next(const QcRetrySettings *s, int attempts,
									int64_t retry_after_ms, int64_t longest_ms,
									double jitter01, int64_t *wait_ms);

#endif							/* QC_RETRY_H */
