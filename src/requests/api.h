/*-------------------------------------------------------------------------
 *
 * api.h
 *	  api_call's work, shared by the SQL function, api_call_many and the
 *	  LLM tool.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_API_H
#define QC_API_H

#include "utils/jsonb.h"

#include "call.h"

/*
 * A call as api_call() makes it; the method, headers and body are
 * validated (22023 errors are raised here, before anything is sent).
 */
extern QcCall *qc_api_prepare(const char *func, char *url, const char *method,
							  Jsonb *headers, char *body, int max_chars);

/*
 * api_call's result for a call that has run, its outcome set (the caller
 * ends the call: call.h), or NULL if it failed.
 */
extern Jsonb *qc_api_result(QcCall *call);

#endif							/* QC_API_H */
