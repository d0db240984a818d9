/*
 * test_retry.c
 *	  Unit tests of the retry policy (retry.c): which statuses and failures
 *	  are retried for which requests, the backoff and its cap, and
 *	  Retry-After in both its forms, with no server.
 *
 * Prints one "ok N - ..." or "not ok N - ..." line per case and exits
 * non-zero when any case fails.
 */
#include <stdio.h>
#include <string.h>

#include "retry.h"
#include "check.h"

static void
test_statuses(void)
{
	QcRetryTarget llm = {QC_ENDPOINT_LLM, "POST", false};
	QcRetryTarget search = {QC_ENDPOINT_SEARCH, "GET", false};
	QcRetryTarget post = {QC_ENDPOINT_OTHER, "POST", false};
	QcRetryTarget keyed = {QC_ENDPOINT_OTHER, "POST", true};
	QcRetryTarget get = {QC_ENDPOINT_OTHER, "GET", false};
	static const long retried[] = {408, 425, 429, 500, 502, 503, 504};
	static const long final[] = {200, 301, 400, 401, 403, 404, 422, 501, 505};

	for (int i = 0; i < (int) (sizeof(retried) / sizeof(retried[0])); i++)
	{
		char		what[80];

		snprintf(what, sizeof(what), "%ld retried for the LLM, search, GET, keyed POST", retried[i]);
		check(qc_retry_status(&llm, retried[i]) && qc_retry_status(&search, retried[i]) &&
			  qc_retry_status(&get, retried[i]) && qc_retry_status(&keyed, retried[i]), what);
	}
	for (int i = 0; i < (int) (sizeof(final) / sizeof(final[0])); i++)
	{
		char		what[80];

		snprintf(what, sizeof(what), "%ld never retried", final[i]);
		check(!qc_retry_status(&llm, final[i]) && !qc_retry_status(&get, final[i]), what);
	}
	check(qc_retry_status(&llm, 409) && !qc_retry_status(&search, 409) &&
		  !qc_retry_status(&get, 409), "409 retried for the LLM endpoint only");
	check(qc_retry_status(&post, 429) && qc_retry_status(&post, 503) &&
		  !qc_retry_status(&post, 500) && !qc_retry_status(&post, 504),
		  "a POST without a key: only 429 and 503");
	check(qc_retry_failure(&post, QC_FAILED_CONNECT) && !qc_retry_failure(&post, QC_FAILED_TRANSFER),
		  "a POST without a key: again only when nothing was sent");
	check(qc_retry_failure(&llm, QC_FAILED_TRANSFER) && qc_retry_failure(&keyed, QC_FAILED_TRANSFER) &&
		  qc_retry_failure(&get, QC_FAILED_TRANSFER), "timeouts retried for endpoints, keyed and GET");
}

static void
test_backoff(void)
{
	QcRetrySettings s = {3, 1000, 300000};
	int64_t		wait = -1;

	check(qc_retry_backoff_ms(&s, 1, 0) == 500 && qc_retry_backoff_ms(&s, 1, 0.999) == 999,
		  "first wait: between half and all of the base delay");
	check(qc_retry_backoff_ms(&s, 3, 0) == 2000, "doubles with each attempt");
	check(qc_retry_backoff_ms(&s, 40, 0.5) <= 300000 && qc_retry_backoff_ms(&s, 40, 0) == 150000,
		  "capped at retry_max_delay, even after many attempts");
	check(qc_retry_next(&s, 4, -1, 10000, 0, &wait) == QC_RETRY_EXHAUSTED, "retry_max retries, then no more");
	check(qc_retry_next(&s, 3, -1, 10000, 0, &wait) == QC_RETRY_WAIT && wait == 2000, "the third retry waits");
	check(qc_retry_next(&s, 1, 7000, 10000, 0, &wait) == QC_RETRY_WAIT && wait == 7000,
		  "Retry-After is waited for as given");
	check(qc_retry_next(&s, 1, 20000, 10000, 0, &wait) == QC_RETRY_TOO_LONG,
		  "a Retry-After past the longest wait gives up at once");
	s.base_delay_ms = 60000;
	check(qc_retry_next(&s, 2, -1, 10000, 0, &wait) == QC_RETRY_WAIT && wait == 10000,
		  "the backoff is cut to the longest wait");
}

static void
test_retry_after(void)
{
	int64_t		ms = -1;
	time_t		now = 784111777;	/* Sun, 06 Nov 1994 08:49:37 GMT */

	check(qc_retry_after_parse("20", now, &ms) && ms == 20000, "delay-seconds");
	check(qc_retry_after_parse(" 0 ", now, &ms) && ms == 0, "zero seconds");
	check(qc_retry_after_parse("99999999999999999999", now, &ms) && ms == 86400000,
		  "huge delay-seconds held at a day, no overflow");
	check(qc_retry_after_parse("Sun, 06 Nov 1994 08:49:57 GMT", now, &ms) && ms == 20000,
		  "IMF-fixdate");
	check(qc_retry_after_parse("Sunday, 06-Nov-94 08:50:37 GMT", now, &ms) && ms == 60000,
		  "RFC 850 date");
	check(qc_retry_after_parse("Sun Nov  6 08:49:47 1994", now, &ms) && ms == 10000,
		  "asctime date");
	check(qc_retry_after_parse("Sat, 05 Nov 1994 08:49:37 GMT", now, &ms) && ms == 0,
		  "a date in the past: no wait");
	check(!qc_retry_after_parse("soon", now, &ms) && !qc_retry_after_parse("-5", now, &ms) &&
		  !qc_retry_after_parse("5s", now, &ms) && !qc_retry_after_parse("", now, &ms),
		  "anything else is not a Retry-After");
	check(qc_retry_after_header("HTTP/1.1 429 Too Many\r\nContent-Type: x\r\nretry-after: 3\r\n\r\n",
								now, &ms) && ms == 3000, "found in a header block, any case");
	check(!qc_retry_after_header("HTTP/1.1 429 Too Many\r\nX-Retry-After: 3\r\n\r\n", now, &ms),
		  "only the Retry-After header itself");
	check(qc_retry_after_header("HTTP/1.1 429 Too Many\r\nretry-after: 2\r\nretry-after-ms: 1500\r\n\r\n",
								now, &ms) && ms == 1500, "retry-after-ms first, in milliseconds");
	check(qc_retry_after_header("HTTP/1.1 429 Too Many\r\nretry-after-ms: soon\r\nRetry-After: 2\r\n\r\n",
								now, &ms) && ms == 2000, "an unreadable retry-after-ms is passed over");
}

int
main(void)
{
	test_statuses();
	test_backoff();
	test_retry_after();
	return check_done();
}
