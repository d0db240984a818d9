/*-------------------------------------------------------------------------
 *
 * chat.c
 *	  The OpenAI chat-completions wire format: one request, one reply.
 *
 * Requests are POST {queryclaw.llm_url}/chat/completions with the whole
 * conversation, the offered tools' JSON schemas with tool_choice "auto",
 * and response_format json_schema when an output schema is given.  Every
 * request is a QcCall through the shared transport, so the master switch,
 * the timeout (queryclaw.llm_timeout), interrupts and the audit row are
 * those of any other call.  The endpoint is the DBA's own and is trusted
 * (QcCall.trusted): block_local and the host lists do not apply to it.
 *
 * The API key goes out as "Authorization: Bearer ...".  It never comes back
 * in: the audit row redacts the header, and any occurrence of the key in a
 * reply is replaced before the reply is read (redact.c).
 *
 * Replies are checked to be JSON and parsed into jsonb, then read into a
 * QcChatReply; anything that is not shaped like a chat completion is an
 * audited error (38000) that says what was missing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "audit.h"
#include "content.h"
#include "json.h"
#include "llm.h"
#include "queryclaw.h"
#include "redact.h"
#include "response.h"

/* The endpoint: llm_url without trailing '/', then the path, then any query. */
static char *
endpoint_url(void)
{
	size_t		base = strcspn(qc_llm_url, "?");
	size_t		len = base;

	while (len > 0 && qc_llm_url[len - 1] == '/')
		len--;
	return psprintf("%.*s/chat/completions%s", (int) len, qc_llm_url,
					qc_llm_url + base);
}

void
qc_chat_check_config(const char *model)
{
	if (qc_llm_url[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no LLM endpoint is configured"),
				 errdetail("queryclaw.llm_url is empty."),
				 errhint("A superuser can set queryclaw.llm_url to the base URL of an OpenAI-compatible API, such as https://api.openai.com/v1.")));
	if ((model == NULL || model[0] == '\0') && qc_llm_model[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no LLM model is configured"),
				 errdetail("No model was given and queryclaw.llm_model is empty."),
				 errhint("Pass model => '...', or have a superuser set queryclaw.llm_model.")));
}

void
qc_chat_init(QcChat *chat, const char *via, const char *model)
{
	uint8		random[8];

	qc_chat_check_config(model);
	memset(chat, 0, sizeof(*chat));
	chat->via = via;
	chat->model = (model != NULL && model[0] != '\0') ? model : pstrdup(qc_llm_model);
	initStringInfo(&chat->messages);
	if (!pg_strong_random(random, sizeof(random)))
		elog(ERROR, "could not generate a random run id");
	hex_encode((char *) random, sizeof(random), chat->run_id);
	chat->run_id[16] = '\0';
}

void
qc_chat_add_json(QcChat *chat, const char *message)
{
	if (chat->messages.len > 0)
		appendStringInfoString(&chat->messages, ", ");
	appendStringInfoString(&chat->messages, message);
}

void
qc_chat_add(QcChat *chat, const char *role, const char *content,
			const char *tool_call_id)
{
	StringInfoData m;

	initStringInfo(&m);
	appendStringInfoString(&m, "{\"role\": ");
	escape_json(&m, role);
	if (tool_call_id != NULL)
	{
		appendStringInfoString(&m, ", \"tool_call_id\": ");
		escape_json(&m, tool_call_id);
	}
	appendStringInfoString(&m, ", \"content\": ");
	escape_json(&m, content);
	appendStringInfoChar(&m, '}');
	qc_chat_add_json(chat, m.data);
	pfree(m.data);
}

/* The assistant's message as the API wants it echoed: content and tool calls. */
void
qc_chat_add_reply(QcChat *chat, const QcChatReply *reply)
{
	StringInfoData m;
	ListCell   *lc;

	initStringInfo(&m);
	appendStringInfoString(&m, "{\"role\": \"assistant\", \"content\": ");
	qc_json_append_string(&m, reply->content);
	if (reply->tool_calls != NIL)
	{
		appendStringInfoString(&m, ", \"tool_calls\": [");
		foreach(lc, reply->tool_calls)
		{
			QcToolCall *tc = lfirst(lc);

			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&m, ", ");
			appendStringInfoString(&m, "{\"id\": ");
			escape_json(&m, tc->id);
			appendStringInfoString(&m, ", \"type\": \"function\", \"function\": {\"name\": ");
			escape_json(&m, tc->name);
			appendStringInfoString(&m, ", \"arguments\": ");
			escape_json(&m, tc->arguments);
			appendStringInfoString(&m, "}}");
		}
		appendStringInfoChar(&m, ']');
	}
	appendStringInfoChar(&m, '}');
	qc_chat_add_json(chat, m.data);
	pfree(m.data);
}

/* The request body, in UTF-8. */
static char *
request_body(const QcChat *chat)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"model\": ");
	escape_json(&b, chat->model);
	appendStringInfo(&b, ", \"messages\": [%s]", chat->messages.data);
	if (chat->tools_json != NULL)
		appendStringInfo(&b, ", \"tools\": %s, \"tool_choice\": \"auto\"",
						 chat->tools_json);
	if (qc_llm_max_tokens > 0)
		appendStringInfo(&b, ", \"max_tokens\": %d", qc_llm_max_tokens);
	if (chat->output_schema != NULL)
		appendStringInfo(&b, ", \"response_format\": {\"type\": \"json_schema\","
						 " \"json_schema\": {\"name\": \"answer\", \"schema\": %s}}",
						 chat->output_schema);
	appendStringInfoChar(&b, '}');
	return pg_server_to_any(b.data, b.len, PG_UTF8);
}

/*
 * What the provider said about an error: {"error": {"message": ...}}
 * (OpenAI and most others), {"error": "..."}, {"message": ...} or
 * {"detail": ...}; NULL when the body is none of these.
 */
static char *
provider_message(Jsonb *jb)
{
	JsonbContainer *root = &jb->root;
	char	   *msg;

	if (!JB_ROOT_IS_OBJECT(jb))
		return NULL;
	if ((msg = qc_jsonb_get_string(qc_jsonb_get_object(root, "error"), "message")) != NULL ||
		(msg = qc_jsonb_get_string(root, "error")) != NULL ||
		(msg = qc_jsonb_get_string(root, "message")) != NULL ||
		(msg = qc_jsonb_get_string(root, "detail")) != NULL)
		return msg;
	return NULL;
}

static void
fail_status(QcCall *call, const char *text, Jsonb *jb)
{
	char	   *said = jb ? provider_message(jb) : NULL;
	const char *hint = NULL;

	if (call->status == 401 || call->status == 403)
		hint = "Check queryclaw.llm_api_key.";
	else if (call->status == 404)
		hint = psprintf("Requests go to %s: check queryclaw.llm_url (the base URL, such as https://api.openai.com/v1) and the model name.",
						qc_redact_url(call->url));
	else if (call->status == 429)
		hint = "The provider is limiting requests or spending; retry later.";
	qc_call_fail(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 psprintf("HTTP status %ld from the LLM endpoint", call->status),
				 said ? psprintf("The provider said: %s", said) : qc_text_quote(text),
				 hint);
}

static void
fail_shape(QcCall *call, const char *detail)
{
	qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 "reply from the LLM endpoint is not a chat completion",
				 detail, NULL);
}

/* Read message.tool_calls; arguments sent as an object are accepted too. */
static List *
read_tool_calls(QcCall *call, JsonbContainer *message)
{
	JsonbValue *v = qc_jsonb_get(message, "tool_calls");
	List	   *calls = NIL;
	int			n;

	if (v == NULL)
		return NIL;
	if (v->type != jbvBinary || !qc_jsonb_is_array(v->val.binary.data))
		fail_shape(call, "choices[0].message.tool_calls is not an array.");
	n = JsonContainerSize(v->val.binary.data);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);
		JsonbContainer *fn;
		JsonbValue *args;
		QcToolCall *tc = palloc0(sizeof(QcToolCall));

		CHECK_FOR_INTERRUPTS();
		if (e->type != jbvBinary || !qc_jsonb_is_object(e->val.binary.data))
			fail_shape(call, psprintf("choices[0].message.tool_calls[%d] is not an object.", i));
		fn = qc_jsonb_get_object(e->val.binary.data, "function");
		tc->name = qc_jsonb_get_string(fn, "name");
		if (tc->name == NULL)
			fail_shape(call, psprintf("choices[0].message.tool_calls[%d] has no function name.", i));
		tc->id = qc_jsonb_get_string(e->val.binary.data, "id");
		if (tc->id == NULL)
			tc->id = psprintf("call_%d", i + 1);
		args = qc_jsonb_get(fn, "arguments");
		if (args == NULL)
			tc->arguments = pstrdup("{}");
		else if (args->type == jbvString)
			tc->arguments = pnstrdup(args->val.string.val, args->val.string.len);
		else if (args->type == jbvBinary)
			tc->arguments = qc_jsonb_value_text(args);
		else
			fail_shape(call, psprintf("choices[0].message.tool_calls[%d].function.arguments is not a string.", i));
		calls = lappend(calls, tc);
	}
	return calls;
}

static QcChatReply *
read_reply(QcCall *call, const char *text, Jsonb *jb)
{
	QcChatReply *reply = palloc0(sizeof(QcChatReply));
	JsonbContainer *choices;
	JsonbContainer *usage;
	JsonbValue *first;
	JsonbContainer *message;
	char	   *said;

	if (jb == NULL || !JB_ROOT_IS_OBJECT(jb))
	{
		char	   *quote = qc_text_quote(text);

		fail_shape(call, quote ? psprintf("The reply is not a JSON object. %s", quote) :
				   "The reply is empty.");
	}
	if ((said = provider_message(jb)) != NULL &&
		qc_jsonb_get(&jb->root, "choices") == NULL)
		fail_shape(call, psprintf("The provider said: %s", said));
	choices = qc_jsonb_get_array(&jb->root, "choices");
	if (choices == NULL || JsonContainerSize(choices) == 0)
		fail_shape(call, "The reply has no choices.");
	first = getIthJsonbValueFromContainer(choices, 0);
	message = first->type == jbvBinary ?
		qc_jsonb_get_object(first->val.binary.data, "message") : NULL;
	if (message == NULL)
		fail_shape(call, "choices[0].message is missing or not an object.");
	if (qc_jsonb_get(message, "content") != NULL &&
		(reply->content = qc_jsonb_get_string(message, "content")) == NULL)
		fail_shape(call, "choices[0].message.content is not a string.");
	reply->finish_reason = qc_jsonb_get_string(first->val.binary.data, "finish_reason");
	if (reply->finish_reason == NULL)
		reply->finish_reason = "stop";
	reply->tool_calls = read_tool_calls(call, message);

	usage = qc_jsonb_get_object(&jb->root, "usage");
	qc_jsonb_get_int64(usage, "prompt_tokens", &reply->prompt_tokens);
	qc_jsonb_get_int64(usage, "completion_tokens", &reply->completion_tokens);
	if (!qc_jsonb_get_int64(usage, "total_tokens", &reply->total_tokens))
		reply->total_tokens = reply->prompt_tokens + reply->completion_tokens;
	return reply;
}

/* The audit detail members of a request, before and after its reply. */
static char *
audit_extra(const QcChat *chat, int round, const QcChatReply *reply)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "\"llm_run\": \"%s\", \"via\": \"%s\", \"round\": %d, \"model\": ",
					 chat->run_id, chat->via, round);
	escape_json(&s, chat->model);
	if (reply != NULL)
	{
		appendStringInfoString(&s, ", \"finish_reason\": ");
		escape_json(&s, reply->finish_reason);
		appendStringInfo(&s, ", \"prompt_tokens\": " INT64_FORMAT
						 ", \"completion_tokens\": " INT64_FORMAT
						 ", \"total_tokens\": " INT64_FORMAT ", \"tool_calls\": %d",
						 reply->prompt_tokens, reply->completion_tokens,
						 reply->total_tokens, list_length(reply->tool_calls));
	}
	return s.data;
}

QcChatReply *
qc_chat_send(QcChat *chat, int round)
{
	QcCall	   *call = qc_call_new("llm", "POST", endpoint_url());
	QcChatReply *reply;
	const char *text;
	Jsonb	   *jb;

	call->trusted = true;
	call->timeout_ms = qc_llm_timeout;
	call->timeout_setting = "queryclaw.llm_timeout";
	/* replies are bounded by tokens, not by the limit meant for web pages */
	call->max_bytes = Max(QC_MAX_BYTES(), QC_LLM_REPLY_BYTES);
	call->headers = qc_http_add_header(NIL, "Content-Type", "application/json");
	if (qc_llm_api_key[0] != '\0')
		call->headers = qc_http_add_header(call->headers, "Authorization",
										   psprintf("Bearer %s", qc_llm_api_key));
	call->body = request_body(chat);
	call->body_len = strlen(call->body);
	call->audit_extra = audit_extra(chat, round, NULL);

	qc_http_execute(call);
	text = qc_redact_keys(qc_to_server_text(call->data, call->data_len,
											qc_content_type_charset(call->content_type)));
	jb = qc_jsonb_parse(text);
	if (call->status < 200 || call->status > 299)
		fail_status(call, text, jb);
	if (call->data_cut)
		fail_shape(call, psprintf("The reply is larger than %zu bytes.", call->max_bytes));
	reply = read_reply(call, text, jb);

	call->audit_extra = audit_extra(chat, round, reply);
	call->chars = reply->content ? qc_count_chars(reply->content) : 0;
	call->outcome = QC_OUTCOME_OK;
	qc_audit_call(call);
	return reply;
}
