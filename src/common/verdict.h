/*-------------------------------------------------------------------------
 *
 * verdict.h
 *	  QcVerdict: what a check says about a call before it starts.
 *
 * The policy (policy.c), the rate limit (ratelimit.c) and the token budget
 * (budget.c) each return one and do nothing else: they never raise and
 * never audit.  The owner of a call (call.c) records a refusal on the call
 * and audits it, once; a queue can also read retry_at and hold the request
 * until then instead of failing it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_VERDICT_H
#define QC_VERDICT_H

#include "datatype/timestamp.h"

typedef struct QcVerdict
{
	bool		allowed;
	/* the three parts of the error report, when not allowed */
	int			sqlerrcode;
	char	   *message;
	char	   *detail;
	char	   *hint;

	/*
	 * When the call could go, if the refusal is one that time lifts (the
	 * rate limit's window, the token budget's day); 0 when waiting would
	 * not help (a policy refusal, a missing preload).
	 */
	TimestampTz retry_at;
} QcVerdict;

/* Fill *v as a refusal; always returns false. */
static inline bool
qc_verdict_refuse(QcVerdict *v, int sqlerrcode, char *message, char *detail,
				  char *hint, TimestampTz retry_at)
{
	v->allowed = false;
	v->sqlerrcode = sqlerrcode;
	v->message = message;
	v->detail = detail;
	v->hint = hint;
	v->retry_at = retry_at;
	return false;
}

/* Fill *v as an admission; always returns true. */
static inline bool
qc_verdict_allow(QcVerdict *v)
{
	v->allowed = true;
	v->sqlerrcode = 0;
	v->message = v->detail = v->hint = NULL;
	v->retry_at = 0;
	return true;
}

#endif							/* QC_VERDICT_H */
