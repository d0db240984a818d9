/*-------------------------------------------------------------------------
 *
 * onerror.c
 *	  queryclaw.on_error = 'return': a failed call returns its error as its
 *	  result, and the statement goes on to its end, where one WARNING
 *	  counts the failures.
 *
 * Which failures are returned is decided here alone (qc_on_error_returns):
 * those of the call itself — a refusal of the policy (42501), a limit
 * reached (53400), a connection, TLS or timeout failure (class 08), an
 * HTTP status or a model's failure (38000), and a reply that is not what
 * was asked for (22P02: a body that is not JSON for format 'json', a
 * model's answer that does not match output_schema).  Everything else
 * still raises: invalid arguments (22023, and the entry points check
 * theirs before any work), the switch off or a setting missing (55000), a
 * cancel (57014), and any error of the server itself.
 *
 * The work runs in a subtransaction (subxact.c: as a PL/pgSQL block with
 * an EXCEPTION clause runs its body, a cancel raised again at once):
 * wherever the failure is raised (the transport, the shaping of a reply,
 * a model's loop some rounds in), what the work had begun is undone, and
 * the statement can go on.  What must outlive it does: a durable audit
 * row is the audit worker's already, and the rows written in the caller's
 * transaction are held until the subtransaction is over, then written
 * (audit.c, qc_audit_hold).
 *
 * The WARNING: each failure returned is counted by SQLSTATE, and the
 * counts are said once, at the end of the top-level statement.  That end
 * is found as pg_stat_statements finds a top-level statement: the
 * executor's run and finish and the utility hook count how deep
 * statements nest, and an ExecutorEnd or a ProcessUtility that returns at
 * depth 0 ends one.  An error that aborts the transaction drops the counts
 * (the error is what the client sees).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "tcop/utility.h"
#include "utils/json.h"

#include "audit.h"
#include "compat.h"
#include "guc.h"
#include "json.h"
#include "onerror.h"
#include "subxact.h"

/* The SQLSTATEs counted one by one; more kinds than this count together. */
#define QC_ON_ERROR_KINDS 8

typedef struct FailureCount
{
	int			sqlerrcode;
	int64		n;
} FailureCount;

static FailureCount counts[QC_ON_ERROR_KINDS];
static int	nkinds = 0;
static int64 other_kinds = 0;	/* failures of kinds past the table's room */

/* How deep the statement under way is nested (0: a top-level one). */
static int	nesting = 0;

static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;
static ProcessUtility_hook_type prev_utility = NULL;

bool
qc_on_error_returns(int sqlerrcode)
{
	switch (sqlerrcode)
	{
		case ERRCODE_INSUFFICIENT_PRIVILEGE:
		case ERRCODE_CONFIGURATION_LIMIT_EXCEEDED:
		case ERRCODE_EXTERNAL_ROUTINE_EXCEPTION:
		case ERRCODE_INVALID_TEXT_REPRESENTATION:
			return true;
		default:
			return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_CONNECTION_EXCEPTION;
	}
}

/* One more failure returned, of this SQLSTATE. */
static void
count_failure(int sqlerrcode)
{
	for (int i = 0; i < nkinds; i++)
		if (counts[i].sqlerrcode == sqlerrcode)
		{
			counts[i].n++;
			return;
		}
	if (nkinds < QC_ON_ERROR_KINDS)
	{
		counts[nkinds].sqlerrcode = sqlerrcode;
		counts[nkinds++].n = 1;
	}
	else
		other_kinds++;
}

static void
forget_failures(void)
{
	nkinds = 0;
	other_kinds = 0;
}

bool
qc_on_error_run(QcOnErrorWork work, void *arg, ErrorData **failure)
{
	ErrorData  *volatile edata = NULL;

	if (qc_on_error != QC_ON_ERROR_RETURN)
	{
		work(arg);
		return true;
	}
	qc_audit_hold();
	PG_TRY();
	{
		edata = qc_subxact_run(work, arg);
	}
	PG_CATCH();
	{
		/* a cancel: the statement ends, and what it held goes with it */
		qc_audit_release(false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* the rows of the calls made, in the transaction that goes on */
	qc_audit_release(true);
	if (edata == NULL)
		return true;
	if (!qc_on_error_returns(edata->sqlerrcode))
		ReThrowError(edata);
	count_failure(edata->sqlerrcode);
	*failure = edata;
	return false;
}

char *
qc_on_error_text(const ErrorData *failure)
{
	const char *message = failure->message ? failure->message : "unknown error";

	return failure->detail ? psprintf("%s: %s", message, failure->detail) :
		pstrdup(message);
}

Jsonb *
qc_on_error_jsonb(const ErrorData *failure, const char *members)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	if (members != NULL)
		appendStringInfo(&s, "%s, ", members);
	appendStringInfoString(&s, "\"error\": ");
	escape_json(&s, qc_on_error_text(failure));
	appendStringInfo(&s, ", \"sqlstate\": \"%s\"}", unpack_sql_state(failure->sqlerrcode));
	return qc_jsonb_parse(s.data);
}

/*
 * The end of a top-level statement: one WARNING for the failures it
 * returned, if any, then the counts start again.
 */
static void
warn_failures(void)
{
	StringInfoData kinds;
	int64		total = other_kinds;

	if (nkinds == 0)
		return;
	initStringInfo(&kinds);
	for (int i = 0; i < nkinds; i++)
	{
		total += counts[i].n;
		appendStringInfo(&kinds, "%s%s: " INT64_FORMAT, i ? ", " : "",
						 unpack_sql_state(counts[i].sqlerrcode), counts[i].n);
	}
	if (other_kinds > 0)
		appendStringInfo(&kinds, ", other SQLSTATEs: " INT64_FORMAT, other_kinds);
	forget_failures();
	ereport(WARNING,
			(errmsg_plural("%lld queryclaw call failed and returned its error",
						   "%lld queryclaw calls failed and returned their errors",
						   total, (long long) total),
			 errdetail("By SQLSTATE, %s.  With queryclaw.on_error = 'return', a failed call gives NULL (api_call and the LLM functions an object with the error), and the statement goes on.",
					   kinds.data),
			 errhint("Each attempt has its row in queryclaw.my_audit.")));
	pfree(kinds.data);
}

static void
on_error_executor_run(QC_EXECUTOR_RUN_PARAMS)
{
	nesting++;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(QC_EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(QC_EXECUTOR_RUN_ARGS);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

static void
on_error_executor_finish(QueryDesc *queryDesc)
{
	nesting++;
	PG_TRY();
	{
		if (prev_executor_finish)
			prev_executor_finish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

static void
on_error_executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (nesting == 0)
		warn_failures();
}

static void
on_error_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	nesting++;
	PG_TRY();
	{
		if (prev_utility)
			prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
						 dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
									queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
	if (nesting == 0)
		warn_failures();
}

/* A statement that ends in an error says that error, not the count. */
static void
on_error_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		forget_failures();
}

void
qc_on_error_init(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = on_error_executor_run;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = on_error_executor_finish;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = on_error_executor_end;
	prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = on_error_utility;
	RegisterXactCallback(on_error_xact_callback, NULL);
}
