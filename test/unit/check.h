/*
 * check.h
 *	  The one-line checks of the unit tests: "ok N - what" or
 *	  "not ok N - what", counted, and the plan and exit status at the end.
 */
#ifndef QC_UNIT_CHECK_H
#define QC_UNIT_CHECK_H

#include <stdio.h>

static int	ncase = 0;
static int	nfail = 0;

static void
check(int cond, const char *what)
{
	ncase++;
	if (!cond)
		nfail++;
	printf("%s %d - %s\n", cond ? "ok" : "not ok", ncase, what);
}

/* The plan line; the exit status of main. */
static int
check_done(void)
{
	printf("1..%d\n", ncase);
	return nfail ? 1 : 0;
}

#endif							/* QC_UNIT_CHECK_H */
