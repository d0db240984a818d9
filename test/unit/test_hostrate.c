/*
 * test_hostrate.c
 *	  Unit tests of queryclaw.host_rate_limit's pure parts: the list syntax
 *	  and which entry a host gets (rules.c), and the token bucket with its
 *	  promised tokens (bucket.c), with a clock of our own.
 *
 * Prints one "ok N - ..." or "not ok N - ..." line per case and exits
 * non-zero when any case fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "rules.h"
#include "check.h"

/* The rate a list gives a host, or 0 when none. */
static double
rate_of(const QcRateList *list, const char *host)
{
	const QcRateRule *rule = qc_rate_list_match(list, host);

	return rule ? rule->per_second : 0;
}

static void
test_syntax(void)
{
	char		err[512];
	QcRateList *list = qc_rate_list_parse("api.example.com=5/s, *.example.org=2/s,*=50/s  *.b.example.org=120/min",
										  err, sizeof(err));
	static const char *const bad[] = {
		"api.example.com", "api.example.com=", "api.example.com=5", "api.example.com=5/h",
		"api.example.com=0/s", "api.example.com=-1/s", "api.example.com=x/s",
		"api.example.com:443=5/s", "=5/s", "a..b=5/s", "*.=5/s", "api.example.com=2000000/s",
	};

	check(list != NULL && list->count == 4, "a list of four entries parses");
	if (list == NULL)
		return;
	check(rate_of(list, "api.example.com") == 5, "a host gets its own entry");
	check(rate_of(list, "www.example.org") == 2, "a subdomain gets its *.domain entry");
	check(rate_of(list, "a.b.example.org") == 2 && rate_of(list, "x.a.b.example.org") == 2,
		  "the longest *.domain entry wins (120/min is 2/s)");
	check(rate_of(list, "example.org") == 50, "*.example.org does not cover example.org itself");
	check(rate_of(list, "other.test") == 50, "* covers every other host");
	free(list);

	list = qc_rate_list_parse("API.Example.COM=0.5/s", err, sizeof(err));
	check(list != NULL && rate_of(list, "api.example.com") == 0.5 && rate_of(list, "other.test") == 0,
		  "names are matched as URLs map them; without * other hosts have no limit");
	free(list);
	list = qc_rate_list_parse("", err, sizeof(err));
	check(list != NULL && list->count == 0 && rate_of(list, "api.example.com") == 0,
		  "an empty list limits nothing");
	free(list);
	for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		char		what[200];

		err[0] = '\0';
		list = qc_rate_list_parse(bad[i], err, sizeof(err));
		snprintf(what, sizeof(what), "\"%s\" is refused with a reason", bad[i]);
		check(list == NULL && err[0] != '\0', what);
		free(list);
	}
}

static void
test_bucket(void)
{
	QcBucket	b;
	int64_t		wait = 0;
	int			went = 0;
	int64_t		t = 1000000;

	qc_bucket_init(&b, 20, t);
	for (int i = 0; i < 100 && qc_bucket_take(&b, 20, t, &wait); i++)
		went++;
	check(went == 20, "a full bucket lets one second's tokens go at once");
	check(wait > 49000 && wait <= 50001, "the next request is promised a token 1/rate later");
	check(!qc_bucket_take(&b, 20, t, &wait) && wait > 99000 && wait <= 100001,
		  "each promise comes 1/rate after the one before");
	check(!qc_bucket_idle(&b, 20, t + 100000), "a bucket with promises out is not idle");
	t += 10 * 1000000;
	check(qc_bucket_idle(&b, 20, t), "ten seconds later it is full again");
	went = 0;
	for (int i = 0; i < 100 && qc_bucket_take(&b, 20, t, &wait); i++)
		went++;
	check(went == 20, "and holds no more than one second of tokens");

	qc_bucket_init(&b, 0.5, t);
	check(qc_bucket_take(&b, 0.5, t, &wait), "below 1/s the bucket still holds one token");
	check(!qc_bucket_take(&b, 0.5, t, &wait) && wait > 1999000 && wait <= 2000001,
		  "and the next one is two seconds away at 0.5/s");

	/* 1,000 requests to a host limited to 20/s take 50 s, not less */
	qc_bucket_init(&b, 20, 0);
	{
		int64_t		last = 0;

		for (int i = 0; i < 1000; i++)
			if (!qc_bucket_take(&b, 20, 0, &wait) && wait > last)
				last = wait;
		check(last > 48900000 && last <= 49000001, "1,000 requests at 20/s: the last goes after 49 s");
	}
}

int
main(void)
{
	test_syntax();
	test_bucket();
	return check_done();
}
