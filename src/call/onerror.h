/*-------------------------------------------------------------------------
 *
 * onerror.h
 *	  queryclaw.on_error (onerror.c): a failed call raises, or returns its
 *	  error as its result and the statement goes on.
 *
 * An SQL entry point checks its arguments first (they always raise), then
 * runs the work that calls out through qc_on_error_run, and shapes the
 * failure it hands back as its result: NULL, or for api_call and the LLM
 * functions an object saying the error (qc_on_error_jsonb).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ONERROR_H
#define QC_ONERROR_H

#include "utils/jsonb.h"

/* The work of one call (or of a group of a batch), given its argument. */
typedef void (*QcOnErrorWork) (void *arg);

/*
 * Does queryclaw.on_error = 'return' return a failure of this SQLSTATE?
 * The one place that decides (onerror.c says which).
 */
extern bool qc_on_error_returns(int sqlerrcode);

/*
 * Run work(arg).  With queryclaw.on_error = 'raise' (the default) that is
 * all.  With 'return', it runs in a subtransaction: a failure that
 * qc_on_error_returns accepts rolls back what the work did (its calls'
 * audit rows stay), is counted for the statement's WARNING, and comes back
 * in *failure with false returned; any other error is raised again.
 */
extern bool qc_on_error_run(QcOnErrorWork work, void *arg, ErrorData **failure);

/* "message: detail" of a failure, as a batch row's error column says it. */
extern char *qc_on_error_text(const ErrorData *failure);

/*
 * The object a jsonb function returns for a failure: the members given
 * first (JSON text such as "\"ok\": false"; may be NULL), then error and
 * sqlstate.
 */
extern Jsonb *qc_on_error_jsonb(const ErrorData *failure, const char *members);

/* _PG_init: the hooks that find the end of a statement, for its WARNING. */
extern void qc_on_error_init(void);

#endif							/* QC_ONERROR_H */
