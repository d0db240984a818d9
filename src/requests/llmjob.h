/*-------------------------------------------------------------------------
 *
 * llmjob.h
 *	  The LLM tool loop as a job that can be resumed (llmjob.c): a caller
 *	  asks it for the requests to send now, sends them, hands them back,
 *	  and asks again, until the job is done.  llm_chat_tools() drives one
 *	  job at a time, waiting on its latch; a background worker drives many,
 *	  all their requests in one batch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_LLMJOB_H
#define QC_LLMJOB_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/elog.h"
#include "utils/jsonb.h"

#include "chat.h"
#include "tools.h"

/* What a run is asked: the SQL function's arguments, NULL when not given. */
typedef struct QcLlmSpec
{
	const char *via;			/* the SQL function, for the audit rows */
	ArrayType  *tools;			/* tool names (text[]), or NULL for none */
	const char *system;
	const char *prompt;
	Jsonb	   *messages;		/* the messages form: the conversation */
	const char *model;
	bool		has_max_rounds;
	int			max_rounds;		/* at most queryclaw.llm_max_rounds */
	Jsonb	   *output_schema;
	bool		with_messages;	/* the result holds the whole conversation */

	/*
	 * Run by a background worker: a retry waits up to retry_max_delay (the
	 * job says when it may go on, it never sleeps); in a SQL call a wait is
	 * also bounded by llm_timeout, as for every synchronous caller.
	 */
	bool		in_background;
	const char *audit_extra;	/* more members for every audit row, or NULL */
	const char *query;			/* the statement its calls are made for, when
								 * not the one under way (QcCall.query) */
	void	   *owner;			/* the caller's, untouched (the queued request) */
} QcLlmSpec;

/* One tool call and what became of it. */
typedef struct QcLlmToolRecord
{
	int			round;
	QcToolCall *call;
	QcToolResult *result;		/* NULL: not run (max_rounds), or not yet */
	QcToolRun  *run;			/* while the call is under way */
} QcLlmToolRecord;

/* How a run went, so far. */
typedef struct QcLlmOutcome
{
	char	   *answer;			/* text, or NULL */
	char	   *answer_json;	/* with an output schema: the JSON answer */
	char	   *refusal;		/* the provider's refusal, or NULL */
	const char *finish_reason;
	int			rounds;
	List	   *records;		/* of QcLlmToolRecord * */
	QcUsage		usage;			/* -1 for what no reply reported */
} QcLlmOutcome;

typedef struct QcLlmJob QcLlmJob;

/*
 * A new job, in a memory context of its own below the current one; every
 * argument checked before any request (tools and EXECUTE on them, the
 * endpoint's configuration, output_schema, max_rounds, messages): raises
 * as llm_chat_tools() does.
 */
extern QcLlmJob *qc_llm_job_new(const QcLlmSpec *spec);
extern void qc_llm_job_free(QcLlmJob *job);

/*
 * The job of a queued llm_chat_tools_async request, run in the background:
 * request is queryclaw.requests.request (or its secrets row), {"prompt",
 * "tools", "system", "model", "max_rounds", "output_schema"}, an absent
 * key being a NULL argument; audit_extra (or NULL) goes into the detail of
 * every audit row of the run (the request id and attempt), query (or NULL)
 * is their statement (its enqueuing statement), owner is kept for the
 * caller.  Checked again as the SQL function checks its arguments, as the
 * current user: raises what it would raise.  A request with "input" and no
 * "prompt" is an embedding ({"input", "model"}: an enrichment's
 * llm_embed_request): its job is one request to the embeddings endpoint,
 * with retries, and its result {embedding, model, usage}.
 */
extern QcLlmJob *qc_llm_job_from_request(Jsonb *request, const char *audit_extra,
										 const char *query, void *owner);

extern const QcLlmOutcome *qc_llm_job_outcome(const QcLlmJob *job);
/* The failure of a job run by qc_llm_jobs_run(), or NULL. */
extern ErrorData *qc_llm_job_error(const QcLlmJob *job);
extern void *qc_llm_job_owner(const QcLlmJob *job);

/*
 * The result of a job that ended well, in the current memory context:
 * {answer, refusal, finish_reason, rounds, model, tool_calls, usage} and,
 * when asked for, messages.
 */
extern Jsonb *qc_llm_job_result(QcLlmJob *job);

/*
 * The secrets its tool calls' requests sent (qc_call_secrets), which a
 * page, and the model after it, may have echoed into the result.
 */
extern List *qc_llm_job_secrets(const QcLlmJob *job);

/*
 * The checks of llm_chat_tools' output_schema (a JSON object) and
 * max_rounds (at least 1), which its async form makes when it queues the
 * request: 22023.
 */
extern void qc_llm_check_output_schema(Jsonb *schema);
extern void qc_llm_check_max_rounds(int max_rounds);

/* Up to 200 characters of what the model said, for an error's detail. */
extern char *qc_llm_quote(const char *text);

/* The model would not answer `what`: 38000 with its words. */
extern void qc_llm_fail_refusal(const char *what, const char *refusal) pg_attribute_noreturn();

/*
 * A job driven by a caller that sends its calls itself (the async worker's
 * fed run), each step in the caller's transaction and in a subtransaction
 * of its own (a step that raises ends the job: qc_llm_job_error):
 *
 *	 calls		the calls to send now (of QcCall *, in the job's memory), to
 *				be admitted and sent by the caller; ask only when the job is
 *				not done and its not-before time has come
 *	 take		once every call it gave has ended: read them
 *	 advance	then move on (this may run tools)
 */
extern List *qc_llm_job_calls(QcLlmJob *job);
extern void qc_llm_job_take(QcLlmJob *job);
/* after take, and after the calls taken were audited: move on (may run tools) */
extern void qc_llm_job_advance(QcLlmJob *job);
extern bool qc_llm_job_done(const QcLlmJob *job);
/* When the job may go on (a retry's wait), 0 when it may now. */
extern TimestampTz qc_llm_job_not_before(const QcLlmJob *job);

/* Run one job to its end here and now, waiting on the latch; raises its failure. */
extern void qc_llm_job_run(QcLlmJob *job);

/*
 * Run many jobs (a List of QcLlmJob *) to their ends, inside a transaction,
 * their requests in flight together: in passes, each sending in one batch
 * (at most concurrency at once) the calls of every job that is not done and
 * whose not-before time has come, then letting each of those jobs take in
 * its calls; between passes, waiting on the latch while every job waits
 * for its not-before time.  A step that raises ends its job with that error
 * (qc_llm_job_error), in a subtransaction rolled back; only a query cancel
 * or a termination is raised.  The calls are admitted, rate-limited and
 * audited as the current user: run jobs of one role together.
 */
extern void qc_llm_jobs_run(List *jobs, int concurrency);

#endif							/* QC_LLMJOB_H */
