/*-------------------------------------------------------------------------
 *
 * search.h
 *	  web_search's work, shared by the SQL function and the LLM tool.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SEARCH_H
#define QC_SEARCH_H

#include "nodes/pg_list.h"

/* One search result; any field may be NULL when the API left it out. */
typedef struct QcSearchResult
{
	char	   *title;
	char	   *url;
	char	   *snippet;
} QcSearchResult;

/*
 * Raise 55000 when queryclaw.search_url is empty: "no search API is
 * configured", or for_tool, the web_search tool's words.
 */
extern void qc_search_require_url(bool for_tool);

/*
 * Query the configured search API and return up to num_results results
 * (of QcSearchResult *), audited as web_search; audit_extra (or NULL) goes
 * into the audit row's detail.  Failures are audited and raised.
 */
extern List *qc_search(const char *query, int num_results,
					   const char *audit_extra);

/* Results as a JSON array of {rank, title, url, snippet}. */
extern char *qc_search_results_json(List *results);

#endif							/* QC_SEARCH_H */
