/*-------------------------------------------------------------------------
 *
 * llmjob.c
 *	  The LLM tool loop as a job: a state that says which request to send
 *	  next and moves on when its reply is handed back, so that the caller
 *	  chooses how to send and how to wait.  llm_chat_tools() (llm.c) runs
 *	  one job here and now (qc_llm_job_run); a background worker runs many
 *	  at once, the requests of all of them in one batch of the transport
 *	  (qc_llm_jobs_run), so that a model answering in 200 ms serves as
 *	  many jobs in that time as the batch holds.
 *
 * One round is one request to the model (chat.c), sent attempt by attempt
 * under the retry policy (endpoint.c): a retryable failure (429, 5xx, 409,
 * no connection) gives the job a not-before time rather than a sleep; the
 * caller waits, not the job.  When the reply asks for tools, every call in
 * it is run (tools.c; beyond queryclaw.llm_max_tool_calls, a call is
 * answered with an error instead), the assistant message and one "tool"
 * message per call id are appended, and the next round starts; the run
 * ends when the model answers without tool calls, or when max_rounds
 * requests have been made (finish_reason "max_rounds": the calls of that
 * last reply are recorded but not run, since no round is left to read
 * them).
 *
 * With an output schema, the tool rounds are sent without it, and once
 * the model answers without tool calls the same conversation goes once
 * more with response_format (see take_reply).  That answer must be JSON (a
 * surrounding code fence is tolerated) that matches the schema (schema.c).
 * An answer that does not gets one retry, even past max_rounds: the reply
 * goes back with the first mismatch and the schema; a second failure is an
 * error (22P02).  A refusal is returned as such, or with an output schema
 * raised (38000).
 *
 * A queued embedding request (an enrichment's llm_embed_request) is a job
 * too, of one request to the embeddings endpoint (embedreq.c) sent attempt
 * by attempt the same way: the async workers run the jobs they are given.
 *
 * Interrupts are checked before every round; a request or a tool call in
 * progress stops on a cancel through the transport's own checks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "chat.h"
#include "compat.h"
#include "content.h"
#include "embedreq.h"
#include "endpoint.h"
#include "guc.h"
#include "call.h"
#include "json.h"
#include "llmjob.h"
#include "redact.h"
#include "schema.h"
#include "subxact.h"
#include "tools.h"

struct QcLlmJob
{
	MemoryContext cxt;			/* everything the job keeps */
	QcChat		chat;
	List	   *tools;			/* of const QcTool * */
	int			max_rounds;
	Jsonb	   *schema;			/* output_schema, or NULL */
	bool		with_messages;
	bool		in_background;
	const char *query;			/* QcLlmSpec.query, or NULL */
	void	   *owner;
	bool		retried;		/* the answer was asked for again, once */
	QcLlmOutcome out;

	/* the model request under way: its attempts, and the one in flight */
	bool		asking;
	QcEndpointTry attempts;
	QcCall	   *sent;
	TimestampTz not_before;

	bool		done;
	ErrorData  *error;			/* how a step run among many failed */
	List	   *calls;			/* jobs_step: the calls of this pass */
	int			in_flight;		/* how many of them have not ended */
	QcChatReply *reply;			/* read, not yet acted upon */
	List	   *round_records;	/* tool calls under way (QcLlmToolRecord *) */
	List	   *spent_runs;		/* tool calls read, to free (QcToolRun *) */
	List	   *secrets;		/* what the tool calls' requests sent */

	/* a queued embedding request: one request, no loop (embed_*) */
	bool		embed;
	char	   *embed_input;
	QcEmbedTarget embed_target;
	const char *embed_extra;	/* QcLlmSpec.audit_extra, or NULL */
	Jsonb	   *embed_result;
};

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
 * Start the tool calls of a reply.  Only the first
 * queryclaw.llm_max_tool_calls are run, so that one reply cannot fan out
 * without limit; each of the others is answered with an error.  In the
 * background, a call that makes an HTTP request waits for the next pass
 * (job_next gives its request); in a SQL call, every call is run
 * here, one after the other.
 */
static void
start_tool_calls(QcLlmJob *job, QcChatReply *reply)
{
	ListCell   *lc;

	qc_chat_add_reply(&job->chat, reply);
	job->round_records = NIL;
	foreach(lc, reply->tool_calls)
	{
		QcLlmToolRecord *rec = palloc0(sizeof(QcLlmToolRecord));

		CHECK_FOR_INTERRUPTS();
		rec->round = job->out.rounds;
		rec->call = lfirst(lc);
		if (foreach_current_index(lc) < qc_llm_max_tool_calls)
			rec->run = qc_tool_start(&job->chat, job->tools, rec->round, rec->call,
									 job->in_background);
		else
			rec->result = qc_tool_not_run();
		job->out.records = lappend(job->out.records, rec);
		job->round_records = lappend(job->round_records, rec);
	}
}

/* The requests the tool calls under way wait for. */
static List *
tool_requests(QcLlmJob *job)
{
	List	   *requests = NIL;
	ListCell   *lc;

	foreach(lc, job->round_records)
	{
		QcLlmToolRecord *rec = lfirst(lc);
		QcCall	   *request = rec->run ? qc_tool_request(rec->run) : NULL;

		if (request != NULL)
			requests = lappend(requests, request);
	}
	return requests;
}

/* Finish the round's tool calls: one "tool" message per call id, in order. */
static void
finish_tool_calls(QcLlmJob *job)
{
	ListCell   *lc;

	foreach(lc, job->round_records)
	{
		QcLlmToolRecord *rec = lfirst(lc);

		if (rec->run != NULL)
		{
			QcCall	   *req = qc_tool_request(rec->run);

			if (req != NULL)
				job->secrets = list_concat(job->secrets, qc_call_secret_set(req));
			rec->result = qc_tool_finish(rec->run);
			/* the transport may still look at the request: freed in advance() */
			job->spent_runs = lappend(job->spent_runs, rec->run);
			rec->run = NULL;
		}
		qc_chat_add(&job->chat, "tool", rec->result->content, rec->call->id);
	}
	job->round_records = NIL;
}

/* The calls of a last round, listed but not run: no round is left. */
static void
record_unrun(QcChatReply *reply, QcLlmOutcome *out)
{
	ListCell   *lc;

	foreach(lc, reply->tool_calls)
	{
		QcLlmToolRecord *rec = palloc0(sizeof(QcLlmToolRecord));

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
char *
qc_llm_quote(const char *text)
{
	char	   *quote = text ? pstrdup(text) : NULL;

	if (quote != NULL)
		qc_clip_chars(quote, 200);
	return quote;
}

/*
 * The answer failed the schema twice.  One cut at the token limit needs a
 * higher limit, not a simpler schema: the hint says which.
 */
static void
fail_json(const QcChatReply *reply, const char *why)
{
	char	   *quote = qc_llm_quote(reply->content);
	bool		cut = strcmp(reply->finish_reason, "length") == 0;

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("the model's answer does not match output_schema"),
			 errdetail("After one retry: %s%s%s%s", why,
					   cut ? " The reply was cut at the token limit." : "",
					   quote ? " The answer began: " : "", quote ? quote : ""),
			 cut ? errhint("Raise queryclaw.llm_max_tokens, or ask for less.") :
			 errhint("Check that the model supports response_format json_schema, or simplify output_schema.")));
}

void
qc_llm_fail_refusal(const char *what, const char *refusal)
{
	ereport(ERROR,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("the model refused %s", what),
			 errdetail("The model said: %s", qc_llm_quote(refusal))));
}

/* The result object; with_messages adds the whole conversation. */
static Jsonb *
result_jsonb(const QcChat *chat, const QcLlmOutcome *r, bool with_messages)
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
		QcLlmToolRecord *rec = lfirst(lc);
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
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data)));
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
 * The tools, the model, the output schema and max_rounds (which can only
 * lower queryclaw.llm_max_rounds), all checked before any request.
 */
void
qc_llm_check_output_schema(Jsonb *schema)
{
	if (!JB_ROOT_IS_OBJECT(schema))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output_schema must be a JSON object"),
				 errdetail("It is a JSON Schema, such as '{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}'.")));
}

void
qc_llm_check_max_rounds(int max_rounds)
{
	if (max_rounds < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rounds must be at least 1")));
}

static void
prepare(QcLlmJob *job, const QcLlmSpec *spec)
{
	job->tools = spec->tools ? qc_tools_parse(spec->tools) : NIL;
	/* the job outlives the arguments: what it keeps is copied */
	qc_chat_init(&job->chat, pstrdup(spec->via), spec->model ? pstrdup(spec->model) : NULL);
	job->chat.tools_json = qc_tools_json(job->tools);
	job->chat.audit_extra = spec->audit_extra ? pstrdup(spec->audit_extra) : NULL;

	/*
	 * Every attempt of a queued request is audited under its async
	 * function's name, the model's requests too; tool calls keep their
	 * tools' names, as in a loop run by a SQL call.
	 */
	if (spec->in_background)
		job->chat.func = job->chat.via;
	if (spec->output_schema != NULL)
	{
		Jsonb	   *schema = spec->output_schema;

		qc_llm_check_output_schema(schema);
		job->chat.output_schema = JsonbToCString(NULL, &schema->root, VARSIZE(schema));
		job->chat.schema_strict = qc_schema_strict_ok(schema);
		job->schema = qc_jsonb_parse(job->chat.output_schema);
	}
	job->max_rounds = qc_llm_max_rounds;
	if (spec->has_max_rounds)
	{
		qc_llm_check_max_rounds(spec->max_rounds);
		job->max_rounds = Min(spec->max_rounds, qc_llm_max_rounds);
	}
}

QcLlmJob *
qc_llm_job_new(const QcLlmSpec *spec)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "queryclaw llm job",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	QcLlmJob   *job = palloc0(sizeof(QcLlmJob));

	job->cxt = cxt;
	job->with_messages = spec->with_messages;
	job->in_background = spec->in_background;
	job->query = spec->query ? pstrdup(spec->query) : NULL;
	job->owner = spec->owner;
	job->out.usage.prompt_tokens = job->out.usage.completion_tokens =
		job->out.usage.total_tokens = -1;
	prepare(job, spec);
	if (spec->messages != NULL)
		add_messages(&job->chat, spec->messages);
	else
	{
		if (spec->system != NULL)
			qc_chat_add(&job->chat, "system", spec->system, NULL);
		qc_chat_add(&job->chat, "user", spec->prompt, NULL);
	}
	/* with no tools to call first, the first request asks for the schema */
	job->chat.want_schema = job->schema != NULL && job->chat.tools_json == NULL;
	MemoryContextSwitchTo(old);
	return job;
}

/* The request's "tools" array as the text[] the SQL function took. */
static ArrayType *
tools_array(JsonbContainer *tools)
{
	int			n = JsonContainerSize(tools);
	Datum	   *elems = palloc0(Max(n, 1) * sizeof(Datum));
	bool	   *nulls = palloc0(Max(n, 1) * sizeof(bool));
	int			dims[1] = {n};
	int			lbs[1] = {1};

	for (int i = 0; i < n; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(tools, i);

		/* a name that is not a string is refused as an unknown tool */
		if (v->type == jbvString)
			elems[i] = PointerGetDatum(cstring_to_text_with_len(v->val.string.val,
																 v->val.string.len));
		else if (v->type == jbvNull)
			nulls[i] = true;
		else
			elems[i] = CStringGetTextDatum(qc_jsonb_value_text(v));
	}
	return construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}

/*
 * The job of a queued embedding request ({"input", "model"}, which an
 * enrichment's llm_embed_request queues): one request to the embeddings
 * endpoint with retries, no loop; its result {embedding, model, usage}.
 * The endpoint and model are checked now, as llm_embed() checks them.
 */
static QcLlmJob *
embed_job(JsonbContainer *r, const char *audit_extra, const char *query, void *owner)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "queryclaw embed job",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	QcLlmJob   *job = palloc0(sizeof(QcLlmJob));

	job->cxt = cxt;
	job->embed = true;
	job->in_background = true;
	job->query = query ? pstrdup(query) : NULL;
	job->owner = owner;
	job->embed_input = qc_jsonb_get_string(r, "input");
	job->embed_extra = audit_extra ? pstrdup(audit_extra) : NULL;
	qc_embed_target(qc_jsonb_get_string(r, "model"), &job->embed_target);
	MemoryContextSwitchTo(old);
	return job;
}

/* The next attempt at the embedding request. */
static QcCall *
embed_next(QcLlmJob *job)
{
	if (!job->asking)
	{
		QcCall	   *request = qc_embed_request("llm_embed", &job->embed_target, job->embed_extra,
											   &job->embed_input, 1);

		qc_call_admit_tokens(request);
		qc_endpoint_try_init(&job->attempts, request, QC_ENDPOINT_EMBED, qc_retry_max_delay);
		job->asking = true;
	}
	return qc_endpoint_try_call(&job->attempts);
}

/* The embedding request's last attempt, read: the job's result. */
static void
embed_take(QcLlmJob *job, QcCall *call)
{
	ArrayType  *vector = NULL;
	int64		tokens = qc_embed_read(call, &job->attempts.att, 1, &vector);
	StringInfoData s;

	qc_call_end(call);
	initStringInfo(&s);
	appendStringInfo(&s, "{\"embedding\": %s, \"model\": ",
					 TextDatumGetCString(DirectFunctionCall1(array_to_json,
															 PointerGetDatum(vector))));
	escape_json(&s, job->embed_target.model);
	appendStringInfo(&s, ", \"usage\": {\"total_tokens\": " INT64_FORMAT "}}", tokens);
	job->embed_result = qc_jsonb_parse(s.data);
	job->done = true;
}

QcLlmJob *
qc_llm_job_from_request(Jsonb *request, const char *audit_extra, const char *query,
						void *owner)
{
	JsonbContainer *r = &request->root;
	JsonbContainer *tools = qc_jsonb_get_array(r, "tools");
	JsonbValue *schema = qc_jsonb_get(r, "output_schema");
	QcLlmSpec	spec = {0};
	int64		rounds;

	if (qc_jsonb_get_string(r, "prompt") == NULL && qc_jsonb_get_string(r, "input") != NULL)
		return embed_job(r, audit_extra, query, owner);
	spec.via = "llm_chat_tools_async";
	spec.prompt = qc_jsonb_get_string(r, "prompt");
	if (spec.prompt == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the request has no prompt"),
				 errdetail("An LLM request holds its prompt as a string under \"prompt\".")));
	spec.system = qc_jsonb_get_string(r, "system");
	spec.model = qc_jsonb_get_string(r, "model");
	if ((spec.has_max_rounds = qc_jsonb_get_int64(r, "max_rounds", &rounds)))
		spec.max_rounds = (int) Max(Min(rounds, PG_INT32_MAX), 0);
	if (tools != NULL)
		spec.tools = tools_array(tools);
	if (schema != NULL && schema->type != jbvNull)
		spec.output_schema = JsonbValueToJsonb(schema);
	spec.in_background = true;
	spec.audit_extra = audit_extra;
	spec.query = query;
	spec.owner = owner;
	return qc_llm_job_new(&spec);
}

void
qc_llm_job_free(QcLlmJob *job)
{
	MemoryContextDelete(job->cxt);
}

/*
 * A reply read: end the run, or say what the next request is.  Tool rounds
 * are sent without response_format: a server that lets the schema govern
 * the whole reply (Ollama, llama.cpp) would never call a tool.  Once the
 * model answers without tool calls, the same conversation is sent once
 * more with the schema (and tool_choice "none"), so that it answers again,
 * in shape; with no tools the first request carries it.  A refusal ends
 * the run.
 */
static void
take_reply(QcLlmJob *job, QcChatReply *reply)
{
	QcChat	   *chat = &job->chat;
	QcLlmOutcome *out = &job->out;
	char	   *why = NULL;

	add_usage(&out->usage, &reply->usage);
	out->answer = reply->content;
	out->refusal = reply->refusal;
	out->finish_reason = reply->finish_reason;
	job->done = true;
	if (reply->refusal != NULL)
	{
		if (job->schema != NULL)
			qc_llm_fail_refusal("to answer in the shape of output_schema", reply->refusal);
		qc_chat_add_reply(chat, reply);
		return;
	}
	/* asked for the schema with tool_choice "none", a call is not run */
	if (chat->want_schema)
		reply->tool_calls = NIL;
	if (reply->tool_calls != NIL && out->rounds >= job->max_rounds)
	{
		record_unrun(reply, out);
		return;
	}
	job->done = false;
	if (reply->tool_calls != NIL)
	{
		start_tool_calls(job, reply);
		if (tool_requests(job) == NIL)
			finish_tool_calls(job);
		return;
	}
	if (job->schema != NULL && !chat->want_schema)
	{
		/* done browsing: the same conversation again, for the schema */
		chat->want_schema = true;
		return;
	}
	if (job->schema == NULL ||
		json_answer(reply->content, job->schema, &out->answer_json, &why) != NULL)
	{
		qc_chat_add_reply(chat, reply);
		job->done = true;
		return;
	}
	if (job->retried)
		fail_json(reply, why);
	job->retried = true;
	ask_again(chat, reply, why);
}

/*
 * The calls (of QcCall *) to send now, in the job's memory: the next
 * attempt at a model request, or the HTTP requests of the tool calls of
 * a round.  Call it once the job is not done and its not-before time has
 * come.  Raises what keeps the request from going
 * (the role's token budget is spent: 53400).
 */
static List *
job_next(QcLlmJob *job)
{
	MemoryContext old = MemoryContextSwitchTo(job->cxt);

	Assert(!job->done && job->sent == NULL);
	if (job->embed)
	{
		job->sent = embed_next(job);
		MemoryContextSwitchTo(old);
		return list_make1(job->sent);
	}
	if (job->round_records != NIL)
	{
		List	   *requests = tool_requests(job);

		MemoryContextSwitchTo(old);
		return requests;
	}
	if (!job->asking)
	{
		QcCall	   *request;

		CHECK_FOR_INTERRUPTS();
		request = qc_chat_request(&job->chat, ++job->out.rounds);
		/* a synchronous caller waits no longer than one request may take */
		qc_endpoint_try_init(&job->attempts, request, QC_ENDPOINT_LLM,
							 job->in_background ? qc_retry_max_delay :
							 Min(qc_retry_max_delay, request->timeout_ms));
		job->asking = true;
	}
	job->sent = qc_endpoint_try_call(&job->attempts);
	MemoryContextSwitchTo(old);
	return list_make1(job->sent);
}

/*
 * Read what the calls brought: the model's reply (kept for advance), or
 * the responses to the round's tool calls.  Audits each call, and sends
 * nothing, so that it may run as each batch's calls end.
 */
static void
take(QcLlmJob *job)
{
	QcCall	   *call = job->sent;
	int64		wait_ms;

	if (job->round_records != NIL)
	{
		finish_tool_calls(job);
		return;
	}
	Assert(call != NULL);
	job->sent = NULL;
	if ((wait_ms = qc_endpoint_try_judge(&job->attempts, call)) >= 0)
		job->not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	else
	{
		call = qc_endpoint_try_last(&job->attempts, call);
		job->asking = false;
		job->not_before = 0;
		if (job->embed)
		{
			embed_take(job, call);
			return;
		}
		job->reply = qc_chat_read(&job->chat, job->out.rounds, call, &job->attempts.att);
	}
}

/* Move on from a reply taken: this may run tools, and their requests. */
static void
advance(QcLlmJob *job)
{
	QcChatReply *reply = job->reply;
	ListCell   *lc;

	foreach(lc, job->spent_runs)
		qc_tool_free(lfirst(lc));
	list_free(job->spent_runs);
	job->spent_runs = NIL;
	job->reply = NULL;
	if (reply != NULL)
		take_reply(job, reply);
}

const QcLlmOutcome *
qc_llm_job_outcome(const QcLlmJob *job)
{
	return &job->out;
}

ErrorData *
qc_llm_job_error(const QcLlmJob *job)
{
	return job->error;
}

void *
qc_llm_job_owner(const QcLlmJob *job)
{
	return job->owner;
}

Jsonb *
qc_llm_job_result(QcLlmJob *job)
{
	if (job->embed)
		return (Jsonb *) PG_DETOAST_DATUM_COPY(PointerGetDatum(job->embed_result));
	return result_jsonb(&job->chat, &job->out, job->with_messages);
}

List *
qc_llm_job_secrets(const QcLlmJob *job)
{
	return job->secrets;
}

/* Milliseconds from now until t, 0 when it has passed. */
static long
ms_until(TimestampTz t)
{
	TimestampTz now = GetCurrentTimestamp();

	return t > now ? (long) ((t - now + 999) / 1000) : 0;
}

/* The steps of a job run among many. */
typedef enum JobStepKind
{
	STEP_NEXT,					/* the calls to send */
	STEP_TAKE,					/* read them, as they end */
	STEP_ADVANCE				/* once the batch is over: move on */
} JobStepKind;

/* What a step of a job run among many needs. */
typedef struct JobStep
{
	QcLlmJob   *job;
	JobStepKind kind;
} JobStep;

static void
job_step_run(void *arg)
{
	JobStep    *step = arg;
	QcLlmJob   *job = step->job;

	if (step->kind == STEP_NEXT)
		job->calls = job_next(job);
	else if (step->kind == STEP_TAKE)
		take(job);
	else
		advance(job);
}

/*
 * One step of a job run among many, in a subtransaction: its failure ends
 * the job with that error and leaves the others going.  The calls it
 * starts, its tool calls' included, are made for the job's statement.
 */
static void
job_step(QcLlmJob *job, JobStepKind kind)
{
	JobStep		step = {job, kind};
	MemoryContext callercxt = MemoryContextSwitchTo(job->cxt);
	const char *outer = qc_call_make_for(job->query);
	ErrorData  *volatile edata;

	PG_TRY();
	{
		edata = qc_subxact_run(job_step_run, &step);
	}
	PG_FINALLY();
	{
		(void) qc_call_make_for(outer);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(callercxt);
	if (edata != NULL)
	{
		job->error = edata;
		job->done = true;
		job->calls = NIL;
		job->sent = NULL;
		job->reply = NULL;
	}
}

List *
qc_llm_job_calls(QcLlmJob *job)
{
	List	   *calls;

	job_step(job, STEP_NEXT);
	calls = job->calls;
	job->calls = NIL;
	return calls;
}

void
qc_llm_job_take(QcLlmJob *job)
{
	if (!job->done)
		job_step(job, STEP_TAKE);
}

void
qc_llm_job_advance(QcLlmJob *job)
{
	if (job->reply != NULL || job->spent_runs != NIL)
		job_step(job, STEP_ADVANCE);
}

bool
qc_llm_job_done(const QcLlmJob *job)
{
	return job->done;
}

TimestampTz
qc_llm_job_not_before(const QcLlmJob *job)
{
	return job->not_before;
}

/* A pass's batch: whose each call is, by its place in the batch. */
typedef struct Pass
{
	QcLlmJob  **job_of;
} Pass;

/*
 * As each call of the batch ends: once all of a job's calls have, the job
 * reads them at once, so that each is audited as it ends and frees its
 * room in the audit queue for a call still waiting to start.  Only
 * reading: moving on may run a tool that makes a request of its own,
 * which must wait until the transport is done with this batch.
 */
static void
call_ended(QcCall *call, void *arg)
{
	Pass	   *pass = arg;
	QcLlmJob   *job = pass->job_of[call->ord];

	if (--job->in_flight == 0)
		job_step(job, STEP_TAKE);
}

/*
 * One pass over many jobs, inside a transaction: the calls of every job
 * that is not done and whose not-before time has come go out in one batch
 * (at most concurrency at once), then each of those jobs takes in its
 * calls.  A step that raises ends its job with that error
 * (qc_llm_job_error), in a subtransaction rolled back; only a query cancel
 * or a termination is raised.
 */
static void
jobs_step(List *jobs, int concurrency)
{
	MemoryContext passcxt = AllocSetContextCreate(CurrentMemoryContext, "queryclaw llm pass",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(passcxt);
	TimestampTz now = GetCurrentTimestamp();
	int			room = Max(list_length(jobs), 1);
	QcCall	  **batch = palloc(room * sizeof(QcCall *));
	Pass		pass = {palloc(room * sizeof(QcLlmJob *))};
	int			nbatch = 0;
	ListCell   *lc;

	foreach(lc, jobs)
	{
		QcLlmJob   *job = lfirst(lc);
		ListCell   *c;

		if (job->done || job->not_before > now)
			continue;
		job_step(job, STEP_NEXT);
		job->in_flight = list_length(job->calls);
		foreach(c, job->calls)
		{
			if (nbatch == room)
			{
				room *= 2;
				batch = repalloc(batch, room * sizeof(QcCall *));
				pass.job_of = repalloc(pass.job_of, room * sizeof(QcLlmJob *));
			}
			pass.job_of[nbatch] = job;
			((QcCall *) lfirst(c))->ord = nbatch;
			batch[nbatch++] = lfirst(c);
		}
		/* a step that failed ended its job: it sends nothing */
		job->calls = NIL;
	}
	/* the responses stay in this pass's memory until it ends */
	if (nbatch > 0)
		qc_call_run_many(batch, nbatch, concurrency, call_ended, &pass);
	for (int i = 0; i < nbatch; i++)
	{
		QcLlmJob   *job = pass.job_of[i];

		if (job->reply != NULL || job->spent_runs != NIL)
			job_step(job, STEP_ADVANCE);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(passcxt);
}

/* Milliseconds until a job that is not done may go on (0: one may now; -1: all done). */
static long
jobs_wait_ms(List *jobs)
{
	long		wait = -1;
	ListCell   *lc;

	foreach(lc, jobs)
	{
		QcLlmJob   *job = lfirst(lc);

		if (!job->done)
		{
			long		ms = ms_until(job->not_before);

			wait = wait < 0 ? ms : Min(wait, ms);
		}
	}
	return wait;
}

void
qc_llm_jobs_run(List *jobs, int concurrency)
{
	long		wait;

	while ((wait = jobs_wait_ms(jobs)) >= 0)
	{
		if (wait > 0)
			qc_endpoint_sleep(wait);
		jobs_step(jobs, concurrency);
	}
}

/*
 * A SQL call's run is a run of one job among one: the same passes, so
 * that there is one loop; its failure, caught by the pass, is raised here
 * as it was raised there.
 */
void
qc_llm_job_run(QcLlmJob *job)
{
	qc_llm_jobs_run(list_make1(job), 1);
	if (job->error != NULL)
		ReThrowError(job->error);
}
