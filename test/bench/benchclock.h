/*
 * test/bench/benchclock.h: the clock the benchmark clients (floor.c,
 * curl_floor.c) time their loops with, so that both floors are read alike.
 */
#ifndef BENCHCLOCK_H
#define BENCHCLOCK_H

#include <time.h>

static inline double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif							/* BENCHCLOCK_H */
