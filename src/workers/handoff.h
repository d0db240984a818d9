/*-------------------------------------------------------------------------
 *
 * handoff.h
 *	  The final outcomes of a service step's requests recorded in one
 *	  statement, made final or handed to the callback workers (handoff.c),
 *	  and the hints that tell the callback workers of them once that commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HANDOFF_H
#define QC_HANDOFF_H

#include "asyncrun.h"

/*
 * As the worker, in a transaction: record the n final outcomes in one
 * statement: those whose handed[i] is set (a callback is due) handed to
 * the callback workers (queue.h says how), the others made final.  A row a
 * user's transaction holds is skipped, not waited for:
 * those requests are appended to *held, to be recorded at a later pass; a
 * row cancelled meanwhile keeps no result, a row gone nothing.
 */
extern void qc_handoff_record(QcAsyncRequest **requests, const bool *handed, int n,
							  List **held);

/*
 * After the transaction committed: tell the callback workers of the
 * requests handed over since the last call (callbackhints.h); whether
 * there were any, to wake them.  Forget them instead when it did not
 * commit.
 */
extern bool qc_handoff_hint(void);
extern void qc_handoff_forget(void);

#endif							/* QC_HANDOFF_H */
