/*-------------------------------------------------------------------------
 *
 * llm.c
 *	  The LLM tool loop and its SQL entry points: llm_chat_tools() in its
 *	  prompt and messages forms, and web_fetch's extract_prompt.
 *
 * The loop itself is a job (llmjob.c) that these functions run here and
 * now, waiting on the latch between attempts; the asynchronous queue's
 * worker runs the same jobs, many at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "chat.h"
#include "content.h"
#include "guc.h"
#include "json.h"
#include "llm.h"
#include "llmjob.h"
#include "onerror.h"
#include "tools.h"

PG_FUNCTION_INFO_V1(llm_chat_tools);
PG_FUNCTION_INFO_V1(llm_chat_tools_messages);

#define LLM_SIGNATURE "queryclaw.llm_chat_tools(text,text[],text,text,integer,jsonb)"

static const char *const extract_system =
"You extract information from the text of a web page. Follow the user's "
"instruction using only what the page says, and reply with the extracted "
"information alone, without preamble. If the page does not contain it, say "
"so in one short sentence.";

/* A job run here and now: its work under queryclaw.on_error. */
static void
run_job(void *arg)
{
	qc_llm_job_run((QcLlmJob *) arg);
}

/*
 * Both forms.  The prompt form has a system argument after tools, the
 * messages form has none, so its later arguments come one place earlier;
 * its result also holds the messages, to continue the conversation.  With
 * queryclaw.on_error = 'return', a loop that fails (a refusal, the model's
 * error, a timeout) returns {"answer": null, "error", "sqlstate"}.
 */
static Datum
chat_tools(FunctionCallInfo fcinfo, bool messages_form)
{
	int			shift = messages_form ? 1 : 0;
	QcLlmSpec	spec = {0};
	QcLlmJob   *job;
	ErrorData  *failure;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	spec.via = "llm_chat_tools";
	spec.tools = PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1);
	if (!PG_ARGISNULL(3 - shift))
		spec.model = text_to_cstring(PG_GETARG_TEXT_PP(3 - shift));
	if ((spec.has_max_rounds = !PG_ARGISNULL(4 - shift)))
		spec.max_rounds = PG_GETARG_INT32(4 - shift);
	if (!PG_ARGISNULL(5 - shift))
		spec.output_schema = PG_GETARG_JSONB_P(5 - shift);
	if (messages_form)
		spec.messages = PG_GETARG_JSONB_P(0);
	else
	{
		if (!PG_ARGISNULL(2))
			spec.system = text_to_cstring(PG_GETARG_TEXT_PP(2));
		spec.prompt = text_to_cstring(PG_GETARG_TEXT_PP(0));
	}
	spec.with_messages = messages_form;
	job = qc_llm_job_new(&spec);
	if (!qc_on_error_run(run_job, job, &failure))
		PG_RETURN_JSONB_P(qc_on_error_jsonb(failure, "\"answer\": null"));
	PG_RETURN_JSONB_P(qc_llm_job_result(job));
}

/*
 * llm_chat_tools(prompt text, tools text[] DEFAULT '{web_fetch,api_call}',
 *				  system text DEFAULT NULL, model text DEFAULT NULL,
 *				  max_rounds int DEFAULT NULL, output_schema jsonb DEFAULT NULL)
 *	returns jsonb {answer, finish_reason, rounds, model, tool_calls, usage}
 */
Datum
llm_chat_tools(PG_FUNCTION_ARGS)
{
	return chat_tools(fcinfo, false);
}

/*
 * llm_chat_tools(messages jsonb, tools text[] DEFAULT '{web_fetch,api_call}',
 *				  model text DEFAULT NULL, max_rounds int DEFAULT NULL,
 *				  output_schema jsonb DEFAULT NULL)
 *	returns the same object plus messages: the conversation to continue
 */
Datum
llm_chat_tools_messages(PG_FUNCTION_ARGS)
{
	return chat_tools(fcinfo, true);
}

void
qc_llm_check_extract(const char *instruction)
{
	if (instruction[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("extract_prompt cannot be empty"),
				 errhint("Say what to pull out of the page, or pass NULL for the page itself.")));
	qc_require_execute(LLM_SIGNATURE,
					   "web_fetch's extract_prompt sends the page to the LLM endpoint, which needs EXECUTE on llm_chat_tools.");
	qc_chat_check_config(NULL);
}

/*
 * An answer extract_prompt can return: not a refusal, not cut at the token
 * limit, not a tool call; else 38000 with what the provider said.
 */
static void
check_extract(const QcLlmOutcome *r)
{
	if (r->refusal != NULL)
		qc_llm_fail_refusal("to extract from the page", r->refusal);
	if (strcmp(r->finish_reason, "length") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the model's answer was cut at its token limit"),
				 r->answer ? errdetail("The answer began: %s", qc_llm_quote(r->answer)) :
				 errdetail("The reply has no answer."),
				 errhint("Raise queryclaw.llm_max_tokens, or ask for less.")));
	if (r->records != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the model asked for a tool instead of extracting from the page"),
				 errdetail("It called %s with %s.",
						   ((QcLlmToolRecord *) linitial(r->records))->call->name,
						   qc_llm_quote(((QcLlmToolRecord *) linitial(r->records))->call->arguments))));
	if (strcmp(r->finish_reason, "content_filter") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the model refused to extract from the page"),
				 errdetail("The provider stopped the answer: finish_reason \"content_filter\".")));
}

char *
qc_llm_extract(const char *url, const char *page, bool page_cut,
			   const char *instruction)
{
	QcLlmSpec	spec = {0};
	QcLlmJob   *job;

	spec.via = "web_fetch";
	spec.system = extract_system;
	spec.prompt = psprintf("%s\n\nThe page %s%s:\n\n%s", instruction, url,
						   page_cut ? " (only its beginning)" : "", page);
	spec.has_max_rounds = true;
	spec.max_rounds = 1;
	job = qc_llm_job_new(&spec);
	qc_llm_job_run(job);
	check_extract(qc_llm_job_outcome(job));
	return qc_llm_job_outcome(job)->answer;
}
