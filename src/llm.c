/*-------------------------------------------------------------------------
 *
 * llm.c
 *	  The LLM tool loop and its SQL entry points: llm_chat_tools() in its
 *	  prompt and messages forms, and web_fetch's extract_prompt.
 *
 * One round is one request to the model (chat.c).  When the reply asks for
 * tools, every call in it is run (tools.c; beyond
 * queryclaw.llm_max_tool_calls, a call is answered with an error instead),
 * the assistant message and one "tool" message per call id are appended,
 * and the next round starts; the loop ends when the model answers without
 * tool calls, or when max_rounds requests have been made (finish_reason
 * "max_rounds": the calls of that last reply are recorded but not run,
 * since no round is left to read them).
 *
 * With an output schema, the tool rounds are sent without it, and once
 * the model answers without tool calls the same conversation goes once
 * more with response_format (see run_loop).  That answer must be JSON (a
 * surrounding code fence is tolerated) that matches the schema (schema.c).
 * An answer that does not gets one retry, even past max_rounds: the reply
 * goes back with the first mismatch and the schema; a second failure is an
 * error (22P02).  A refusal is returned as such, or with an output schema
 * raised (38000).
 *
 * Interrupts are checked before every round; a request or a tool call in
 * progress stops on a cancel through the transport's own checks.
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
#include "schema.h"
#include "tools.h"

PG_FUNCTION_INFO_V1(llm_chat_tools);
PG_FUNCTION_INFO_V1(llm_chat_tools_messages);

#define LLM_SIGNATURE "queryclaw.llm_chat_tools(text,text[],text,text,integer,jsonb)"

static const char *const extract_system =
"You extract information from the text of a web page. Follow the user's "
"instruction using only what the page says, and reply with the extracted "
"information alone, without preamble. If the page does not contain it, say "
"so in one short sentence.";

/* One tool call and what became of it. */
typedef struct ToolRecord
{
	int			round;
	QcToolCall *call;
	QcToolResult *result;		/* NULL: not run (max_rounds) */
} ToolRecord;

/* How a run ended. */
typedef struct LoopResult
{
	char	   *answer;			/* text, or NULL */
	char	   *answer_json;	/* with an output schema: the JSON answer */
	char	   *refusal;		/* the provider's refusal, or NULL */
	const char *finish_reason;
	int			rounds;
	List	   *records;		/* of ToolRecord * */
	QcUsage		usage;			/* -1 for what no reply reported */
} LoopResult;

/*
 * The answer as jsonb, or NULL with *why saying what is wrong: not JSON
 * (a code fence around it is dropped), or the first mismatch with the
 * schema.  *json_text receives the JSON text.
 */
static Jsonb *
json_answer(const char *content, Jsonb *schema, char **json_text, char **why)
{
	char	   *text;
	size_t		len;
	Jsonb	   *jb;
	char	   *mismatch;

	if (content == NULL)
	{
		*why = "The reply has no content.";
		return NULL;
	}
	text = pstrdup(content);
	while (isspace((unsigned char) *text))
		text++;
	if (strncmp(text, "```", 3) == 0)
		text += strcspn(text, "\n");
	len = strlen(text);
	while (len > 0 && isspace((unsigned char) text[len - 1]))
		text[--len] = '\0';
	if (len >= 3 && strcmp(text + len - 3, "```") == 0)
		text[len - 3] = '\0';

	if ((jb = qc_jsonb_parse(text)) == NULL)
	{
		*why = "The answer is not valid JSON.";
		return NULL;
	}
	if ((mismatch = qc_schema_mismatch(schema, jb)) != NULL)
	{
		*why = psprintf("The answer does not match the schema: %s.", mismatch);
		return NULL;
	}
	*json_text = text;
	return jb;
}

/* Add what a reply reported to the run's totals. */
static void
add_usage(QcUsage *sum, const QcUsage *u)
{
	if (u->prompt_tokens >= 0)
		sum->prompt_tokens = Max(sum->prompt_tokens, 0) + u->prompt_tokens;
	if (u->completion_tokens >= 0)
		sum->completion_tokens = Max(sum->completion_tokens, 0) + u->completion_tokens;
	if (u->total_tokens >= 0)
		sum->total_tokens = Max(sum->total_tokens, 0) + u->total_tokens;
}

/*
 * Run the tool calls of a reply, appending one tool message per call.  Only
 * the first queryclaw.llm_max_tool_calls are run, so that one reply cannot
 * fan out without limit; each of the others is answered with an error.
 */
static void
run_tool_calls(QcChat *chat, List *tools, int round, QcChatReply *reply,
			   LoopResult *out)
{
	ListCell   *lc;

	qc_chat_add_reply(chat, reply);
	foreach(lc, reply->tool_calls)
	{
		ToolRecord *rec = palloc0(sizeof(ToolRecord));

		CHECK_FOR_INTERRUPTS();
		rec->round = round;
		rec->call = lfirst(lc);
		rec->result = foreach_current_index(lc) < qc_llm_max_tool_calls ?
			qc_tool_run(chat, tools, round, rec->call) : qc_tool_not_run();
		qc_chat_add(chat, "tool", rec->result->content, rec->call->id);
		out->records = lappend(out->records, rec);
	}
}

/* The calls of a last round, listed but not run: no round is left. */
static void
record_unrun(QcChatReply *reply, LoopResult *out)
{
	ListCell   *lc;

	foreach(lc, reply->tool_calls)
	{
		ToolRecord *rec = palloc0(sizeof(ToolRecord));

		rec->round = out->rounds;
		rec->call = lfirst(lc);
		out->records = lappend(out->records, rec);
	}
	out->finish_reason = "max_rounds";
}

/* After an answer that does not fit the schema: say why, once. */
static void
ask_again(QcChat *chat, QcChatReply *reply, const char *why)
{
	qc_chat_add_reply(chat, reply);
	qc_chat_add(chat, "user",
				psprintf("%s Reply again with only a JSON value that matches this JSON schema, and no other text: %s",
						 why, chat->output_schema),
				NULL);
}

/* Up to 200 characters of what the model said, for an error's detail. */
static char *
quote_reply(const char *text)
{
	char	   *quote = text ? pstrdup(text) : NULL;

	if (quote != NULL)
		qc_clip_chars(quote, 200);
	return quote;
}

static void
fail_json(const QcChatReply *reply, const char *why)
{
	char	   *quote = quote_reply(reply->content);

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("the model's answer does not match output_schema"),
			 errdetail("After one retry: %s%s%s%s", why,
					   strcmp(reply->finish_reason, "length") == 0 ?
					   " The reply was cut at the token limit." : "",
					   quote ? " The answer began: " : "", quote ? quote : ""),
			 errhint("Check that the model supports response_format json_schema, or simplify output_schema.")));
}

/* The model would not answer: 38000 with its words. */
static void
fail_refusal(const char *what, const char *refusal)
{
	ereport(ERROR,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("the model refused %s", what),
			 errdetail("The model said: %s", quote_reply(refusal))));
}

/*
 * The loop.  Tool rounds are sent without response_format: a server that
 * lets the schema govern the whole reply (Ollama, llama.cpp) would never
 * call a tool.  Once the model answers without tool calls, the same
 * conversation is sent once more with the schema (and tool_choice "none"),
 * so that it answers again, in shape; with no tools the first request
 * carries it.  A refusal ends the run.
 */
static void
run_loop(QcChat *chat, List *tools, int max_rounds, LoopResult *out)
{
	Jsonb	   *schema = chat->output_schema ? qc_jsonb_parse(chat->output_schema) : NULL;
	bool		retried = false;

	memset(out, 0, sizeof(*out));
	out->usage.prompt_tokens = out->usage.completion_tokens = out->usage.total_tokens = -1;
	chat->want_schema = schema != NULL && chat->tools_json == NULL;
	for (;;)
	{
		QcChatReply *reply;
		char	   *why = NULL;

		CHECK_FOR_INTERRUPTS();
		reply = qc_chat_send(chat, ++out->rounds);
		add_usage(&out->usage, &reply->usage);
		out->answer = reply->content;
		out->refusal = reply->refusal;
		out->finish_reason = reply->finish_reason;

		if (reply->refusal != NULL)
		{
			if (schema != NULL)
				fail_refusal("to answer in the shape of output_schema", reply->refusal);
			qc_chat_add_reply(chat, reply);
			return;
		}
		/* asked for the schema with tool_choice "none", a call is not run */
		if (chat->want_schema)
			reply->tool_calls = NIL;
		if (reply->tool_calls != NIL && out->rounds >= max_rounds)
		{
			record_unrun(reply, out);
			return;
		}
		if (reply->tool_calls != NIL)
		{
			run_tool_calls(chat, tools, out->rounds, reply, out);
			continue;
		}
		if (schema != NULL && !chat->want_schema)
		{
			/* done browsing: the same conversation again, for the schema */
			chat->want_schema = true;
			continue;
		}
		if (schema == NULL ||
			json_answer(reply->content, schema, &out->answer_json, &why) != NULL)
		{
			qc_chat_add_reply(chat, reply);
			return;
		}
		if (retried)
			fail_json(reply, why);
		retried = true;
		ask_again(chat, reply, why);
	}
}

/* The result object; with_messages adds the whole conversation. */
static Datum
result_jsonb(const QcChat *chat, const LoopResult *r, bool with_messages)
{
	StringInfoData s;
	ListCell   *lc;

	initStringInfo(&s);
	appendStringInfoString(&s, "{\"answer\": ");
	if (r->answer_json != NULL)
		appendStringInfoString(&s, r->answer_json);
	else
		qc_json_append_string(&s, r->answer);
	appendStringInfoString(&s, ", \"refusal\": ");
	qc_json_append_string(&s, r->refusal);
	appendStringInfoString(&s, ", \"finish_reason\": ");
	escape_json(&s, r->finish_reason);
	appendStringInfo(&s, ", \"rounds\": %d, \"model\": ", r->rounds);
	escape_json(&s, chat->model);
	appendStringInfoString(&s, ", \"tool_calls\": [");
	foreach(lc, r->records)
	{
		ToolRecord *rec = lfirst(lc);
		QcToolResult *res = rec->result;

		appendStringInfo(&s, "%s{\"round\": %d, \"id\": ",
						 foreach_current_index(lc) ? ", " : "", rec->round);
		escape_json(&s, rec->call->id);
		appendStringInfoString(&s, ", \"name\": ");
		escape_json(&s, rec->call->name);
		appendStringInfoString(&s, ", \"arguments\": ");
		if (qc_json_is_valid(rec->call->arguments, strlen(rec->call->arguments)))
			appendStringInfoString(&s, rec->call->arguments);
		else
			escape_json(&s, rec->call->arguments);
		appendStringInfo(&s, ", \"ok\": %s, \"error\": ", res && res->ok ? "true" : "false");
		if (res == NULL)
			escape_json(&s, "not run: max_rounds was reached");
		else
			qc_json_append_string(&s, res->error);
		appendStringInfo(&s, ", \"chars\": %d, \"truncated\": %s}",
						 res ? res->chars : 0, res && res->truncated ? "true" : "false");
	}
	appendStringInfoString(&s, "], \"usage\": {");
	qc_usage_append(&s, &r->usage);
	appendStringInfoChar(&s, '}');
	if (with_messages)
		appendStringInfo(&s, ", \"messages\": [%s]", chat->messages.data);
	appendStringInfoChar(&s, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data));
}

/*
 * What both forms share, all checked before any request: the tools, the
 * model, the output schema, and max_rounds (which can only lower
 * queryclaw.llm_max_rounds).  Returns the tools; sets *max_rounds.
 */
static List *
prepare(FunctionCallInfo fcinfo, QcChat *chat, int tools_arg, int model_arg,
		int rounds_arg, int schema_arg, int *max_rounds)
{
	List	   *tools = PG_ARGISNULL(tools_arg) ? NIL :
		qc_tools_parse(PG_GETARG_ARRAYTYPE_P(tools_arg));

	qc_chat_init(chat, "llm_chat_tools",
				 PG_ARGISNULL(model_arg) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(model_arg)));
	chat->tools_json = qc_tools_json(tools);
	if (!PG_ARGISNULL(schema_arg))
	{
		Jsonb	   *schema = PG_GETARG_JSONB_P(schema_arg);

		if (!JB_ROOT_IS_OBJECT(schema))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("output_schema must be a JSON object"),
					 errdetail("It is a JSON Schema, such as '{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}'.")));
		chat->output_schema = JsonbToCString(NULL, &schema->root, VARSIZE(schema));
		chat->schema_strict = qc_schema_strict_ok(schema);
	}
	*max_rounds = qc_llm_max_rounds;
	if (!PG_ARGISNULL(rounds_arg))
	{
		if (PG_GETARG_INT32(rounds_arg) < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_rounds must be at least 1")));
		*max_rounds = Min(PG_GETARG_INT32(rounds_arg), qc_llm_max_rounds);
	}
	return tools;
}

/* The messages argument: a non-empty array of objects with a role. */
static void
add_messages(QcChat *chat, Jsonb *messages)
{
	int			n = JB_ROOT_IS_ARRAY(messages) && !JB_ROOT_IS_SCALAR(messages) ?
		JsonContainerSize(&messages->root) : 0;

	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("messages must be a non-empty JSON array"),
				 errdetail("For example: '[{\"role\": \"user\", \"content\": \"Hello\"}]'.")));
	for (int i = 0; i < n; i++)
	{
		JsonbValue *m = getIthJsonbValueFromContainer(&messages->root, i);

		if (m->type != jbvBinary || qc_jsonb_get_string(m->val.binary.data, "role") == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("message %d has no role", i + 1),
					 errdetail("Each message is an object with a \"role\" string, as in the chat-completions API.")));
		qc_chat_add_message(chat, m);
	}
}

/*
 * Both forms.  The prompt form has a system argument after tools, the
 * messages form has none, so its later arguments come one place earlier;
 * its result also holds the messages, to continue the conversation.
 */
static Datum
chat_tools(FunctionCallInfo fcinfo, bool messages_form)
{
	int			shift = messages_form ? 1 : 0;
	QcChat		chat;
	LoopResult	result;
	List	   *tools;
	int			max_rounds;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	tools = prepare(fcinfo, &chat, 1, 3 - shift, 4 - shift, 5 - shift, &max_rounds);
	if (messages_form)
		add_messages(&chat, PG_GETARG_JSONB_P(0));
	else
	{
		if (!PG_ARGISNULL(2))
			qc_chat_add(&chat, "system", text_to_cstring(PG_GETARG_TEXT_PP(2)), NULL);
		qc_chat_add(&chat, "user", text_to_cstring(PG_GETARG_TEXT_PP(0)), NULL);
	}
	run_loop(&chat, tools, max_rounds, &result);
	PG_RETURN_DATUM(result_jsonb(&chat, &result, messages_form));
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
check_extract(const LoopResult *r)
{
	if (r->refusal != NULL)
		fail_refusal("to extract from the page", r->refusal);
	if (strcmp(r->finish_reason, "length") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the model's answer was cut at its token limit"),
				 r->answer ? errdetail("The answer began: %s", quote_reply(r->answer)) :
				 errdetail("The reply has no answer."),
				 errhint("Raise queryclaw.llm_max_tokens, or ask for less.")));
	if (r->records != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the model asked for a tool instead of extracting from the page"),
				 errdetail("It called %s with %s.",
						   ((ToolRecord *) linitial(r->records))->call->name,
						   quote_reply(((ToolRecord *) linitial(r->records))->call->arguments))));
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
	QcChat		chat;
	LoopResult	result;

	qc_chat_init(&chat, "web_fetch", NULL);
	qc_chat_add(&chat, "system", extract_system, NULL);
	qc_chat_add(&chat, "user",
				psprintf("%s\n\nThe page %s%s:\n\n%s", instruction, url,
						 page_cut ? " (only its beginning)" : "", page),
				NULL);
	run_loop(&chat, NIL, 1, &result);
	check_extract(&result);
	return result.answer;
}
