/*-------------------------------------------------------------------------
 *
 * retry.c
 *	  The retry policy: retryable statuses and failures, exponential backoff
 *	  with jitter, and Retry-After.
 *
 * Retried (README, "Retries"): connection failures, timeouts, 408, 425,
 * 429, 500, 502, 503 and 504, and 409 from the LLM endpoint (OpenAI's
 * "conflict" is a transient state on its side).  Requests to the DBA's
 * endpoints (LLM, embeddings, search) have no side effects and are retried
 * on all of these.  Other requests are retried when they are idempotent
 * (GET, HEAD, PUT, DELETE) or carry an idempotency key; a POST or PATCH
 * without one only when it was certainly not processed: nothing was sent
 * (no connection), or the server said 429 or 503, which refuse a request
 * before handling it.
 *
 * Pure C: HTTP dates are read with libcurl's curl_getdate(), which knows
 * the three formats RFC 9110 asks recipients to accept.
 *
 *-------------------------------------------------------------------------
 */
#include "retry.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

/* A Retry-After beyond a day is as good as "not today". */
#define RETRY_AFTER_MAX_S (24 * 60 * 60)

/* The request may be sent again whatever became of the first one. */
static bool
repeatable(const QcRetryTarget *target)
{
	return target->endpoint != QC_ENDPOINT_OTHER || target->idempotency_key ||
		(strcmp(target->method, "POST") != 0 && strcmp(target->method, "PATCH") != 0);
}

bool
qc_retry_status(const QcRetryTarget *target, long status)
{
	switch (status)
	{
		case 429:
		case 503:
			return true;
		case 408:
		case 425:
		case 500:
		case 502:
		case 504:
			return repeatable(target);
		case 409:
			return target->endpoint == QC_ENDPOINT_LLM;
		default:
			return false;
	}
}

bool
qc_retry_failure(const QcRetryTarget *target, QcRetryFailure failure)
{
	return failure == QC_FAILED_CONNECT || repeatable(target);
}

int64_t
qc_retry_backoff_ms(const QcRetrySettings *s, int attempts, double jitter01)
{
	int64_t		delay = s->base_delay_ms;

	for (int i = 1; i < attempts && delay < s->max_delay_ms; i++)
		delay *= 2;
	if (delay > s->max_delay_ms)
		delay = s->max_delay_ms;
	if (jitter01 < 0 || jitter01 >= 1)
		jitter01 = 0;
	/* half fixed, half drawn: attempts of many backends spread out */
	return delay - delay / 2 + (int64_t) (jitter01 * (double) (delay / 2));
}

/*
 * A whole number with optional white space around it, held at limit (no
 * overflow); false when the text is anything else.
 */
static bool
parse_count(const char *p, int64_t limit, int64_t *out)
{
	int64_t		n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!isdigit((unsigned char) *p))
		return false;
	for (; isdigit((unsigned char) *p); p++)
		if (n <= limit)
			n = n * 10 + (*p - '0');
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	*out = n > limit ? limit : n;
	return *p == '\0';
}

bool
qc_retry_after_parse(const char *value, time_t now, int64_t *ms)
{
	const char *p = value;
	int64_t		seconds;
	time_t		when;

	if (parse_count(value, RETRY_AFTER_MAX_S, &seconds))
	{
		*ms = seconds * 1000;
		return true;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	/* "Sun, 06 Nov 1994 08:49:37 GMT" and its two obsolete forms */
	if (!isalpha((unsigned char) *p) || (when = curl_getdate(p, NULL)) == -1)
		return false;
	if (when <= now)
		*ms = 0;
	else
		*ms = (when - now > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (int64_t) (when - now)) * 1000;
	return true;
}

/*
 * Copy the value of the header named name (lower case, with its colon)
 * from a raw header block into value; false when absent or too long.
 */
static bool
header_value(const char *head, const char *name, char *value, size_t size)
{
	size_t		namelen = strlen(name);

	for (const char *line = head; line != NULL && *line != '\0';)
	{
		const char *end = strchr(line, '\n');
		size_t		len = end ? (size_t) (end - line) : strlen(line);

		if (len >= namelen && strncasecmp(line, name, namelen) == 0)
		{
			if (len - namelen >= size)
				return false;
			memcpy(value, line + namelen, len - namelen);
			value[len - namelen] = '\0';
			return true;
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

bool
qc_retry_after_header(const char *head, time_t now, int64_t *ms)
{
	char		value[128];

	/* OpenAI's retry-after-ms is the more precise of the two it sends */
	if (header_value(head, "retry-after-ms:", value, sizeof(value)) &&
		parse_count(value, (int64_t) RETRY_AFTER_MAX_S * 1000, ms))
		return true;
	return header_value(head, "retry-after:", value, sizeof(value)) &&
		qc_retry_after_parse(value, now, ms);
}

QcRetryVerdict
qc_retry_next(const QcRetrySettings *s, int attempts, int64_t retry_after_ms,
			  int64_t longest_ms, double jitter01, int64_t *wait_ms)
{
	if (attempts > s->max_retries)
		return QC_RETRY_EXHAUSTED;
	if (retry_after_ms > longest_ms)
		return QC_RETRY_TOO_LONG;
	*wait_ms = qc_retry_backoff_ms(s, attempts, jitter01);
	/* the server's word when it gave one, never less than it asked */
	if (retry_after_ms >= 0)
		*wait_ms = retry_after_ms;
	if (*wait_ms > longest_ms)
		*wait_ms = longest_ms;
	return QC_RETRY_WAIT;
}
