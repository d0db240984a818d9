/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Running a piece of work in an internal subtransaction whose failure
 *	  is handed back rather than raised (subxact.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SUBXACT_H
#define QC_SUBXACT_H

#include "utils/elog.h"

/*
 * Run fn(arg) in an internal subtransaction, as a PL/pgSQL exception block
 * does: released when fn returns, rolled back when it raises.  Returns
 * NULL, or the error fn raised, copied into the current memory context.  A
 * query cancel or a termination is not the caller's to handle: it is
 * raised again at once.  The current memory context and resource owner
 * are those of the call when it returns.
 */
extern ErrorData *qc_subxact_run(void (*fn) (void *arg), void *arg);

/*
 * The same for a background worker's unit of work: a query cancel (a
 * statement_timeout of the role it runs as) is handed back like any other
 * error, so it ends that unit alone; a termination is still raised.
 */
extern ErrorData *qc_subxact_try(void (*fn) (void *arg), void *arg);

#endif							/* QC_SUBXACT_H */
