/*-------------------------------------------------------------------------
 *
 * functions.h
 *	  What the SQL-callable functions do, for C callers.
 *
 * The LLM tools (tools.c) run exactly the code of a direct call, so a tool
 * call obeys the same policy and limits and is audited the same way: the
 * SQL entry points in fetch.c, api.c, check.c and search.c are thin
 * wrappers around these.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_FUNCTIONS_H
#define QC_FUNCTIONS_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "http.h"
#include "response.h"

/*
 * fetch.c: send a web_fetch request (a GET built by qc_call_new), raise an
 * audited error for a status other than 2xx, and return the body in the
 * format, audited.
 */
extern char *qc_fetch_text(QcCall *call, QcFormat format);

/*
 * api.c: build an api_call request (the method and headers validated, a
 * JSON body typed as JSON), then send it and return api_call's result
 * object, audited.  headers is a jsonb object or NULL; body is in the
 * database encoding, or NULL.
 */
extern QcCall *qc_api_call_prepare(const char *url, const char *method,
								   Jsonb *headers, const char *body);
extern Jsonb *qc_api_call_send(QcCall *call);

/* check.c: check_url's result as JSON text. */
extern char *qc_check_url_json(const char *url);

/* search.c: one search result. */
typedef struct QcSearchResult
{
	char	   *title;
	char	   *url;
	char	   *snippet;
} QcSearchResult;

/*
 * search.c: query the configured search API and return up to num_results
 * results (of QcSearchResult *), audited as web_search; audit_extra (or
 * NULL) goes into the audit row's detail.
 */
extern List *qc_search(const char *query, int num_results,
					   const char *audit_extra);

/* search.c: results as a JSON array of {rank, title, url, snippet}. */
extern char *qc_search_results_json(List *results);

#endif							/* QC_FUNCTIONS_H */
