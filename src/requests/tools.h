/*-------------------------------------------------------------------------
 *
 * tools.h
 *	  The tools a model may call (tools.c), each run in a subtransaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_TOOLS_H
#define QC_TOOLS_H

#include "nodes/pg_list.h"
#include "utils/array.h"

#include "chat.h"

/* What became of one tool call. */
typedef struct QcToolResult
{
	bool		ok;
	char	   *content;		/* what the model is told */
	char	   *error;			/* the error message, when not ok */
	int			chars;			/* characters of the result sent */
	bool		truncated;
} QcToolResult;

/*
 * The tools a call offers, from its tools argument (of const QcTool *).
 * Raises 22023 for an unknown name, 55000 for web_search without
 * queryclaw.search_url, 42501 when the role may not run the tool's
 * function: all before any request.
 */
extern List *qc_tools_parse(ArrayType *names);

/* The request's "tools" array for those tools, or NULL for none. */
extern char *qc_tools_json(List *tools);

/*
 * One tool call, run in subtransactions: its failure (refusal, timeout,
 * HTTP error, bad arguments, a tool not offered) becomes the result's
 * content; only a query cancel or termination is raised.
 *
 * qc_tool_start() runs the call; with send_later, a tool that makes an
 * HTTP request (web_fetch, api_call) only makes it: qc_tool_request()
 * gives it (NULL for any other tool, or when the call already failed),
 * for the caller to send with others.  Once it was sent (or at once when
 * there is none), qc_tool_finish() reads the response and returns the
 * result, in the caller's memory.  qc_tool_free() frees the run, its
 * request with it: only once the transport is done with the request (the
 * batch that sent it is over).
 */
typedef struct QcToolRun QcToolRun;

extern QcToolRun *qc_tool_start(const QcChat *chat, List *tools, int round,
								const QcToolCall *tc, bool send_later);
extern QcCall *qc_tool_request(const QcToolRun *run);
extern QcToolResult *qc_tool_finish(QcToolRun *run);
extern void qc_tool_free(QcToolRun *run);

/*
 * The result of a tool call that is not run because its reply holds more
 * than queryclaw.llm_max_tool_calls calls: an error the model can read.
 */
extern QcToolResult *qc_tool_not_run(void);

/* Raise 42501 unless the current role may execute the function. */
extern void qc_require_execute(const char *signature, const char *detail);

#endif							/* QC_TOOLS_H */
