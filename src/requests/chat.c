/*-------------------------------------------------------------------------
 *
 * chat.c
 *	  The OpenAI chat-completions wire format: one request, one reply.
 *
 * Requests are POST {queryclaw.llm_url}/chat/completions with the whole
 * conversation, the offered tools' JSON schemas with tool_choice "auto",
 * and, when the loop asks for it, response_format json_schema (strict when
 * the schema meets strict mode's rules; tool_choice "none" then).  Every
 * request is sent attempt by attempt under endpoint.c's retries
 * (qc_endpoint_try_*: the loop, llmjob.c, chooses how to send and wait),
 * so the master switch, the timeout (queryclaw.llm_timeout), interrupts,
 * retries and one audit row per attempt are those of any call to a
 * trusted endpoint.  The endpoint
 * is the DBA's own (QcCall.trusted): block_local and the host lists do not
 * apply to it.
 *
 * The API key goes out as "Authorization: Bearer ...", or as it is in the
 * header queryclaw.llm_api_key_header names (Azure OpenAI's "api-key").
 * It never comes back in: the audit row redacts the header, and any
 * occurrence of the key in a reply is replaced before the reply is read
 * (redact.c).
 *
 * Replies are read as providers send them: content as a string or as an
 * array of text parts (joined); reasoning ("reasoning_content", or a
 * <think>...</think> block in the content) left out of the answer; a
 * refusal kept apart; a \u0000 escape (which jsonb refuses) dropped and a
 * lone surrogate escape replaced, like the NUL bytes and invalid UTF-8 of
 * any response; tool call ids made unique in the conversation; tool
 * arguments that are not a JSON object never echoed back to the model.
 * Anything not shaped like a chat completion is an audited error (38000)
 * that says what was missing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "budget.h"
#include "call.h"
#include "chat.h"
#include "content.h"
#include "endpoint.h"
#include "guc.h"
#include "json.h"
#include "redact.h"
#include "servers.h"
#include "response.h"

void
qc_chat_check_config(const char *model)
{
	if (QC_LLM_ENDPOINT().url[0] == '\0')
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
	chat->func = "llm";
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
qc_chat_add_message(QcChat *chat, JsonbValue *message)
{
	JsonbContainer *calls = qc_jsonb_get_array(message->val.binary.data, "tool_calls");

	for (int i = 0; calls != NULL && i < JsonContainerSize(calls); i++)
	{
		JsonbValue *tc = getIthJsonbValueFromContainer(calls, i);
		char	   *id = tc->type == jbvBinary ? qc_jsonb_get_string(tc->val.binary.data, "id") : NULL;

		if (id != NULL)
			chat->call_ids = lappend(chat->call_ids, id);
	}
	qc_chat_add_json(chat, qc_jsonb_value_text(message));
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
			/* the model is told they were wrong; never repeat them as its own */
			escape_json(&m, tc->arguments_ok ? tc->arguments : "{}");
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
	/* the final request for the schema lets the model answer, not browse */
	if (chat->tools_json != NULL)
		appendStringInfo(&b, ", \"tools\": %s, \"tool_choice\": \"%s\"",
						 chat->tools_json, chat->want_schema ? "none" : "auto");
	if (qc_llm_max_tokens > 0)
		appendStringInfo(&b, ", \"%s\": %d",
						 qc_llm_token_param == QC_TOKEN_PARAM_MAX_COMPLETION_TOKENS ?
						 "max_completion_tokens" : "max_tokens", qc_llm_max_tokens);
	if (chat->want_schema)
		appendStringInfo(&b, ", \"response_format\": {\"type\": \"json_schema\","
						 " \"json_schema\": {\"name\": \"answer\",%s \"schema\": %s}}",
						 chat->schema_strict ? " \"strict\": true," : "",
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
fail_status(QcCall *call, const char *text, Jsonb *jb, const QcAttempts *attempts)
{
	char	   *said = jb ? provider_message(jb) : NULL;
	const char *note = qc_endpoint_attempts_note(attempts);
	const char *hint = NULL;
	char	   *detail;

	if (call->status == 401 || call->status == 403)
		hint = "Check queryclaw.llm_api_key and queryclaw.llm_api_key_header.";
	else if (call->status == 404)
		hint = psprintf("Requests go to %s: check queryclaw.llm_url (the base URL, such as https://api.openai.com/v1) and the model name.",
						qc_redact_url(call->url));
	else if (call->status == 429)
		hint = "The provider is limiting requests or spending; retry later.";
	detail = said ? psprintf("The provider said: %s", said) : qc_text_quote(text);
	if (note[0] != '\0')
		detail = detail ? psprintf("%s %s", note, detail) : pstrdup(note);
	qc_call_fail(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 psprintf("HTTP status %ld from the LLM endpoint", call->status),
				 detail, hint);
}

static void
fail_shape(QcCall *call, const char *detail)
{
	qc_call_fail(call, QC_OUTCOME_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
				 "reply from the LLM endpoint is not a chat completion",
				 detail, NULL);
}

/*
 * The id a tool call keeps: the model's, unless it is missing, empty or
 * already used in this conversation (some servers count from 0 in every
 * reply); then one of ours, which the next request echoes back.
 */
static char *
unique_call_id(QcChat *chat, const char *given, int round, int index)
{
	char	   *id = (given != NULL && given[0] != '\0') ? pstrdup(given) : NULL;
	ListCell   *lc;

	for (int n = 0;; n++)
	{
		bool		used = false;

		if (id != NULL)
			foreach(lc, chat->call_ids)
				if ((used = (strcmp(lfirst(lc), id) == 0)))
					break;
		if (id != NULL && !used)
			break;
		id = n == 0 ? psprintf("call_qc_%d_%d", round, index + 1) :
			psprintf("call_qc_%d_%d_%d", round, index + 1, n);
	}
	chat->call_ids = lappend(chat->call_ids, id);
	return id;
}

/* Read a tool call's arguments: a JSON object, as a string or as is. */
static void
read_arguments(QcCall *call, QcToolCall *tc, JsonbContainer *fn, int i)
{
	JsonbValue *args = qc_jsonb_get(fn, "arguments");
	Jsonb	   *parsed;

	if (args == NULL)
		tc->arguments = pstrdup("{}");
	else if (args->type == jbvString)
		tc->arguments = pnstrdup(args->val.string.val, args->val.string.len);
	else if (args->type == jbvBinary)
		tc->arguments = qc_jsonb_value_text(args);
	else
		fail_shape(call, psprintf("choices[0].message.tool_calls[%d].function.arguments is not a string.", i));
	/* some servers send "" for a call without arguments */
	if (tc->arguments[0] == '\0')
		tc->arguments = pstrdup("{}");
	parsed = qc_jsonb_parse(tc->arguments);
	tc->arguments_ok = parsed != NULL && JB_ROOT_IS_OBJECT(parsed);
}

/* Read message.tool_calls; arguments sent as an object are accepted too. */
static List *
read_tool_calls(QcCall *call, QcChat *chat, int round, JsonbContainer *message)
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
		QcToolCall *tc = palloc0(sizeof(QcToolCall));

		CHECK_FOR_INTERRUPTS();
		if (e->type != jbvBinary || !qc_jsonb_is_object(e->val.binary.data))
			fail_shape(call, psprintf("choices[0].message.tool_calls[%d] is not an object.", i));
		fn = qc_jsonb_get_object(e->val.binary.data, "function");
		tc->name = qc_jsonb_get_string(fn, "name");
		if (tc->name == NULL)
			fail_shape(call, psprintf("choices[0].message.tool_calls[%d] has no function name.", i));
		tc->id = unique_call_id(chat, qc_jsonb_get_string(e->val.binary.data, "id"), round, i);
		read_arguments(call, tc, fn, i);
		calls = lappend(calls, tc);
	}
	return calls;
}

/*
 * The content with reasoning left out: every <think>...</think> block (an
 * unclosed one runs to the end; a "</think>" with no opening tag ends a
 * block the chat template opened, from the start), then the white space
 * around what is left.  Content without such blocks is returned as it is;
 * NULL when nothing is left.
 */
static char *
without_reasoning(char *content)
{
	StringInfoData out;
	char	   *p = content;
	char	   *open = strstr(content, "<think>");
	char	   *close = strstr(content, "</think>");
	size_t		len;

	if (open == NULL && close == NULL)
		return content;
	if (close != NULL && (open == NULL || close < open))
		p = close + strlen("</think>");
	initStringInfo(&out);
	while ((open = strstr(p, "<think>")) != NULL)
	{
		appendBinaryStringInfo(&out, p, open - p);
		if ((close = strstr(open, "</think>")) == NULL)
		{
			p = open + strlen(open);
			break;
		}
		p = close + strlen("</think>");
	}
	appendStringInfoString(&out, p);
	p = out.data;
	while (isspace((unsigned char) *p))
		p++;
	len = strlen(p);
	while (len > 0 && isspace((unsigned char) p[len - 1]))
		p[--len] = '\0';
	return len > 0 ? p : NULL;
}

/*
 * message.content: a string, or (Mistral and others) an array of parts
 * whose text parts are joined; other parts (reasoning, images) are left
 * out.  Raises for any other type.
 */
static char *
read_content(QcCall *call, JsonbContainer *message)
{
	JsonbValue *v = qc_jsonb_get(message, "content");
	StringInfoData joined;
	int			n;

	if (v == NULL)
		return NULL;
	if (v->type == jbvString)
		return without_reasoning(pnstrdup(v->val.string.val, v->val.string.len));
	if (v->type != jbvBinary || !qc_jsonb_is_array(v->val.binary.data))
		fail_shape(call, "choices[0].message.content is not a string or an array of parts.");
	initStringInfo(&joined);
	n = JsonContainerSize(v->val.binary.data);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *part = getIthJsonbValueFromContainer(v->val.binary.data, i);
		char	   *type;
		char	   *text;

		if (part->type == jbvString)
		{
			appendBinaryStringInfo(&joined, part->val.string.val, part->val.string.len);
			continue;
		}
		if (part->type != jbvBinary)
			continue;
		type = qc_jsonb_get_string(part->val.binary.data, "type");
		text = qc_jsonb_get_string(part->val.binary.data, "text");
		if (text != NULL && (type == NULL || strcmp(type, "text") == 0))
			appendStringInfoString(&joined, text);
	}
	return without_reasoning(joined.data);
}

/* usage: each count -1 when absent; total from the two others if need be. */
static void
read_usage(JsonbContainer *usage, QcUsage *out)
{
	if (!qc_jsonb_get_int64(usage, "prompt_tokens", &out->prompt_tokens))
		out->prompt_tokens = -1;
	if (!qc_jsonb_get_int64(usage, "completion_tokens", &out->completion_tokens))
		out->completion_tokens = -1;
	if (!qc_jsonb_get_int64(usage, "total_tokens", &out->total_tokens))
		out->total_tokens = (out->prompt_tokens >= 0 && out->completion_tokens >= 0) ?
			out->prompt_tokens + out->completion_tokens : -1;
}

static QcChatReply *
read_reply(QcCall *call, QcChat *chat, int round, const char *text, Jsonb *jb)
{
	QcChatReply *reply = palloc0(sizeof(QcChatReply));
	JsonbContainer *choices;
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
	reply->content = read_content(call, message);
	reply->refusal = qc_jsonb_get_string(message, "refusal");
	reply->finish_reason = qc_jsonb_get_string(first->val.binary.data, "finish_reason");
	if (reply->finish_reason == NULL)
		reply->finish_reason = "stop";
	reply->tool_calls = read_tool_calls(call, chat, round, message);
	read_usage(qc_jsonb_get_object(&jb->root, "usage"), &reply->usage);
	return reply;
}

void
qc_usage_append(StringInfo s, const QcUsage *usage)
{
	const char *names[] = {"prompt_tokens", "completion_tokens", "total_tokens"};
	int64		counts[] = {usage->prompt_tokens, usage->completion_tokens, usage->total_tokens};

	for (int i = 0; i < lengthof(names); i++)
	{
		appendStringInfo(s, "%s\"%s\": ", i ? ", " : "", names[i]);
		if (counts[i] < 0)
			appendStringInfoString(s, "null");
		else
			appendStringInfo(s, INT64_FORMAT, counts[i]);
	}
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
	if (chat->audit_extra != NULL)
		appendStringInfo(&s, ", %s", chat->audit_extra);
	if (reply != NULL)
	{
		appendStringInfoString(&s, ", \"finish_reason\": ");
		escape_json(&s, reply->finish_reason);
		appendStringInfoString(&s, ", ");
		qc_usage_append(&s, &reply->usage);
		appendStringInfo(&s, ", \"tool_calls\": %d", list_length(reply->tool_calls));
	}
	return s.data;
}

/*
 * A JSON text jsonb can hold: a \u0000 escape is dropped (text never holds
 * NUL) and a lone UTF-16 surrogate escape becomes U+FFFD, as a decoder
 * does with invalid bytes.  Works in place; escapes only ever shrink.
 */
static void
repair_escapes(char *text)
{
	char	   *in = text;
	char	   *out = text;

	while (*in)
	{
		unsigned int code;
		unsigned int next;

		if (in[0] != '\\')
		{
			*out++ = *in++;
			continue;
		}
		if (in[1] != 'u' || sscanf(in + 2, "%4x", &code) != 1 ||
			strspn(in + 2, "0123456789abcdefABCDEF") < 4)
		{
			/* any other escape: copy the backslash and what it escapes */
			*out++ = *in++;
			if (*in)
				*out++ = *in++;
			continue;
		}
		if (code >= 0xD800 && code <= 0xDBFF && in[6] == '\\' && in[7] == 'u' &&
			strspn(in + 8, "0123456789abcdefABCDEF") >= 4 &&
			sscanf(in + 8, "%4x", &next) == 1 && next >= 0xDC00 && next <= 0xDFFF)
		{
			memmove(out, in, 12);	/* a valid pair */
			out += 12;
			in += 12;
			continue;
		}
		if (code != 0)
		{
			memmove(out, (code >= 0xD800 && code <= 0xDFFF) ? "\\ufffd" : in, 6);
			out += 6;
		}
		in += 6;
	}
	*out = '\0';
}

/* The request as a call to the endpoint, with the key where it goes. */
static QcCall *
new_request(QcChat *chat, int round)
{
	QcEndpointBase base = QC_LLM_ENDPOINT();
	QcCall	   *call = qc_endpoint_request(chat->func, &base, "/chat/completions",
										   qc_llm_api_key, QC_LLM_REPLY_BYTES,
										   request_body(chat));

	call->audit_extra = audit_extra(chat, round, NULL);
	return call;
}

QcCall *
qc_chat_request(QcChat *chat, int round)
{
	QcCall	   *call = new_request(chat, round);

	qc_call_admit_tokens(call);
	return call;
}

QcChatReply *
qc_chat_read(QcChat *chat, int round, QcCall *call, const QcAttempts *attempts)
{
	QcChatReply *reply;
	char	   *text;
	Jsonb	   *jb;

	/* a palloc'd copy of the body, which repair_escapes() may change */
	text = (char *) qc_redact_keys(qc_to_server_text(call->response_body, call->response_len,
													 qc_content_type_charset(call->content_type)));
	repair_escapes(text);
	jb = qc_jsonb_parse(text);
	if (!qc_call_status_ok(call))
		fail_status(call, text, jb, attempts);
	if (call->response_cut)
		fail_shape(call, psprintf("The reply is larger than %zu bytes.", call->max_bytes));
	reply = read_reply(call, chat, round, text, jb);
	qc_budget_count(reply->usage.total_tokens);

	call->audit_extra = audit_extra(chat, round, reply);
	if (attempts->count > 1)
		call->audit_extra = psprintf("%s, \"attempt\": %d", call->audit_extra, attempts->count);
	call->chars = reply->content ? qc_count_chars(reply->content) : 0;
	call->outcome = QC_OUTCOME_OK;
	qc_call_end(call);
	return reply;
}
