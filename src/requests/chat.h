/*-------------------------------------------------------------------------
 *
 * chat.h
 *	  A conversation with an OpenAI-compatible chat-completions endpoint
 *	  (chat.c): the messages, the request, and the reply read back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CHAT_H
#define QC_CHAT_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "endpoint.h"

/* Model replies may be larger than queryclaw.max_bytes, up to this. */
#define QC_LLM_REPLY_BYTES ((size_t) 8 * 1024 * 1024)

/* One tool call the model asked for. */
typedef struct QcToolCall
{
	char	   *id;				/* unique in the conversation */
	char	   *name;
	char	   *arguments;		/* as the model sent them */
	bool		arguments_ok;	/* they are a JSON object */
} QcToolCall;

/* Token counts; -1 when the provider did not say. */
typedef struct QcUsage
{
	int64		prompt_tokens;
	int64		completion_tokens;
	int64		total_tokens;
} QcUsage;

/* One reply of the endpoint, read into palloc'd memory. */
typedef struct QcChatReply
{
	char	   *content;		/* the answer, reasoning left out; or NULL */
	char	   *refusal;		/* the provider's refusal, or NULL */
	char	   *finish_reason;	/* "stop" when the provider gave none */
	List	   *tool_calls;		/* of QcToolCall * */
	QcUsage		usage;
} QcChatReply;

/* A conversation with the model.  All text is in the database encoding. */
typedef struct QcChat
{
	const char *via;			/* the SQL function, for the audit rows */
	const char *func;			/* the audit rows' func of the model requests */
	const char *model;
	const char *tools_json;		/* the request's "tools" array, or NULL */
	const char *output_schema;	/* a JSON object, or NULL */
	bool		schema_strict;	/* the schema meets strict mode's rules */
	bool		want_schema;	/* send response_format in this request */
	StringInfoData messages;	/* JSON objects separated by commas */
	List	   *call_ids;		/* the tool call ids used so far */
	char		run_id[17];		/* ties one run's audit rows together */
	const char *audit_extra;	/* more "key": value members for every audit
								 * row of the run (the queued request), or NULL */
} QcChat;

/*
 * The wire format.  qc_chat_init() raises 55000 when the endpoint
 * or the model is not configured; model NULL means queryclaw.llm_model.
 */
extern void qc_chat_check_config(const char *model);
extern void qc_chat_init(QcChat *chat, const char *via, const char *model);
extern void qc_chat_add(QcChat *chat, const char *role, const char *content,
						const char *tool_call_id);
extern void qc_chat_add_json(QcChat *chat, const char *message);
/* A message of the caller's (an object); its tool call ids count as used. */
extern void qc_chat_add_message(QcChat *chat, JsonbValue *message);
extern void qc_chat_add_reply(QcChat *chat, const QcChatReply *reply);

/* Append "prompt_tokens": n, "completion_tokens": n, "total_tokens": n (null when unknown). */
extern void qc_usage_append(StringInfo s, const QcUsage *usage);

/*
 * The conversation as a request for round `round`, to send to the endpoint
 * (endpoint.h: qc_endpoint_try_*, which retries); raises 53400 when the
 * role's token budget is spent.
 */
extern QcCall *qc_chat_request(QcChat *chat, int round);

/*
 * Read the reply to the request's last attempt (`attempts` says how many
 * were made), audit the request (func "llm") and return the reply.  An
 * HTTP error status or a reply that is not a chat completion raises an
 * audited error.
 */
extern QcChatReply *qc_chat_read(QcChat *chat, int round, QcCall *call,
								 const QcAttempts *attempts);

#endif							/* QC_CHAT_H */
