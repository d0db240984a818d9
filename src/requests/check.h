/*-------------------------------------------------------------------------
 *
 * check.h
 *	  check_url's work, shared by the SQL function and the LLM tool.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CHECK_H
#define QC_CHECK_H

/*
 * check_url's result as JSON text; the check is audited (with
 * audit_extra, which may be NULL, in the row's detail) and rate-limited.
 */
extern char *qc_check_url_json(const char *url, char *audit_extra);

#endif							/* QC_CHECK_H */
