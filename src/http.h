/*-------------------------------------------------------------------------
 *
 * http.h
 *	  The transport (http.c): a call, or many at once, sent with libcurl
 *	  under the policy, redirects followed; and the request headers it
 *	  accepts from a caller.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HTTP_H
#define QC_HTTP_H

#include "nodes/pg_list.h"

#include "call.h"

/* Most transfers one batch may run at once (queryclaw.max_concurrency). */
#define QC_MAX_CONCURRENCY_LIMIT 256

/* Called as each call of a batch ends, in completion order. */
typedef void (*QcCallDone) (QcCall *call, void *arg);

/*
 * Send the request, following redirects under the policy.  Returns
 * when a final response (of any status) has arrived; a refusal, a
 * transport error or a timeout is audited and raised as an ERROR.
 */
extern void qc_http_execute(QcCall *call);

/* The same, but a failure is recorded on the call instead of raised. */
extern bool qc_http_run(QcCall *call);

/*
 * Run many calls, at most concurrency at once (and at most
 * queryclaw.max_host_concurrency to one host).  Failures are recorded on
 * each call, never raised; on_done (may be NULL) sees each call as it ends.
 * Only a query cancel or an internal error ends the batch early.
 */
extern void qc_http_execute_many(QcCall **calls, int ncalls, int concurrency,
								 QcCallDone on_done, void *arg);

/* Validate a method name (upper-cases it); raises 22023 when unknown. */
extern const char *qc_http_validate_method(const char *method);

/* Validate one header; raises 22023 for names or values that are unsafe. */
extern void qc_http_validate_header(const char *name, const char *value);

/* Append a header, validated as qc_http_validate_header() does. */
extern List *qc_http_add_header(List *headers, const char *name,
								const char *value);

/* Return the value of a request header (case-insensitive), or NULL. */
extern const char *qc_http_find_header(List *headers, const char *name);

#endif							/* QC_HTTP_H */
