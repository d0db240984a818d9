/*-------------------------------------------------------------------------
 *
 * callbackhints.h
 *	  The requests handed to the callback workers, told them in shared
 *	  memory (callbackhints.c), so that they need not look for them in the
 *	  table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CALLBACKHINTS_H
#define QC_CALLBACKHINTS_H

/* How many hints shared memory keeps; one more is lost (see below). */
#define QC_CALLBACK_HINTS 1024

/* A request whose callback is due, and its role. */
typedef struct QcCallbackHint
{
	int64		id;
	Oid			role;
} QcCallbackHint;

/* _PG_init, while preloading: the shared memory hooks. */
extern void qc_callback_hints_init(void);

/*
 * After the commit that handed these requests over: keep them for the
 * callback workers.  What does not fit is lost: the callback workers are
 * told to read the table instead (qc_callback_hints_take_lost).
 */
extern void qc_callback_hints_add(const QcCallbackHint *hints, int n);

/*
 * Callbacks became due that no hint names (a cancel's, a crash's, a hint
 * that was not kept): the callback workers are to read the table.
 */
extern void qc_callback_hints_lose(void);

/* Were hints lost since the last call?  The flag is cleared. */
extern bool qc_callback_hints_take_lost(void);

/*
 * Take up to max hints into out: round-robin between their roles (the
 * first of every role before the second of any), the roles in order[]
 * (norder of them) after those not in it, the oldest first within a role.
 * Returns how many.
 */
extern int	qc_callback_hints_take(QcCallbackHint *out, int max, const Oid *order, int norder);

/* Hints taken and not used (a batch cut short) go back, before the others. */
extern void qc_callback_hints_return(const QcCallbackHint *hints, int n);

#endif							/* QC_CALLBACKHINTS_H */
