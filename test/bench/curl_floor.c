/*
 * test/bench/curl_floor.c: what libcurl alone costs a call (make bench).
 *
 * The same sequential GETs as floor.c's first mode, made through libcurl
 * the way the extension's transport makes them (src/transport/http.c): one easy
 * handle reused on one keep-alive connection, driven by a multi handle with
 * curl_multi_perform() and curl_multi_poll(), the body and header bytes
 * copied out by callbacks.  No policy, no audit, no SQL, no option set per
 * request.  DESIGN.md makes libcurl the transport, so this is the floor for
 * any call of ours: throughput.sh prints it beside floor.c's.
 *
 *   curl_floor URL N    N GETs, one after the other: microseconds per request
 *   curl_floor URL N INFLIGHT
 *                       N GETs on INFLIGHT easy handles at once, each handle
 *                       sent again as its response ends (its connection kept
 *                       alive): seconds for all of them, and the CPU time
 *                       the process took per request, in microseconds (user
 *                       and system, from getrusage): what libcurl alone costs
 *                       the async worker per request at that concurrency
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "benchclock.h"

/* Bytes are counted, as the extension copies them, not kept. */
static size_t
count_bytes(char *data, size_t size, size_t nmemb, void *arg)
{
	*(size_t *) arg += size * nmemb;
	return size * nmemb;
}

static void
get_once(CURLM *multi, CURL *easy)
{
	int			running = 1;
	CURLMsg    *msg;
	int			left;

	curl_multi_add_handle(multi, easy);
	for (;;)
	{
		if (curl_multi_perform(multi, &running) != CURLM_OK)
			exit(1);
		if (running == 0)
			break;
		curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	while ((msg = curl_multi_info_read(multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE && msg->data.result != CURLE_OK)
		{
			fprintf(stderr, "curl_floor: %s\n", curl_easy_strerror(msg->data.result));
			exit(1);
		}
	curl_multi_remove_handle(multi, easy);
}

/* An easy handle for url, its body and header bytes counted into *bytes. */
static CURL *
new_easy(const char *url, size_t *bytes)
{
	CURL	   *easy = curl_easy_init();

	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_PROXY, "");
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, count_bytes);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, bytes);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, count_bytes);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, bytes);
	return easy;
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* N GETs, inflight at once on as many handles (see the header). */
static void
in_flight(const char *url, int n, int inflight)
{
	CURLM	   *multi = curl_multi_init();
	size_t		bytes = 0;
	int			sent = 0,
				ended = 0,
				running;
	double		t0 = now_seconds(),
				c0 = cpu_seconds();

	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long) inflight);
	for (; sent < inflight && sent < n; sent++)
		curl_multi_add_handle(multi, new_easy(url, &bytes));
	while (ended < n)
	{
		CURLMsg    *msg;
		int			left;

		if (curl_multi_perform(multi, &running) != CURLM_OK)
			exit(1);
		while ((msg = curl_multi_info_read(multi, &left)) != NULL)
		{
			CURL	   *easy = msg->easy_handle;

			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->data.result != CURLE_OK)
			{
				fprintf(stderr, "curl_floor: %s\n", curl_easy_strerror(msg->data.result));
				exit(1);
			}
			ended++;
			curl_multi_remove_handle(multi, easy);
			if (sent < n)
			{
				curl_multi_add_handle(multi, easy);
				sent++;
			}
			else
				curl_easy_cleanup(easy);
		}
		if (ended < n)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	printf("%.3f %.1f\n", now_seconds() - t0, (cpu_seconds() - c0) * 1e6 / n);
	curl_multi_cleanup(multi);
}

int
main(int argc, char **argv)
{
	CURLM	   *multi;
	CURL	   *easy;
	size_t		bytes = 0;
	int			n;
	double		t0;

	if ((argc != 3 && argc != 4) || (n = atoi(argv[2])) <= 0 ||
		(argc == 4 && atoi(argv[3]) <= 0))
	{
		fprintf(stderr, "usage: curl_floor URL N [INFLIGHT]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	if (argc == 4)
	{
		in_flight(argv[1], n, atoi(argv[3]));
		curl_global_cleanup();
		return 0;
	}
	multi = curl_multi_init();
	easy = new_easy(argv[1], &bytes);

	/* the first request opens the connection, as in floor.c */
	get_once(multi, easy);
	t0 = now_seconds();
	for (int i = 0; i < n; i++)
		get_once(multi, easy);
	printf("%.1f\n", (now_seconds() - t0) * 1e6 / n);

	curl_easy_cleanup(easy);
	curl_multi_cleanup(multi);
	curl_global_cleanup();
	return 0;
}
