/*-------------------------------------------------------------------------
 *
 * llm.h
 *	  The LLM tool loop: a conversation with an OpenAI-compatible
 *	  chat-completions endpoint (chat.c), the tools the model may call
 *	  (tools.c), and the loop and its SQL entry points (llm.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_LLM_H
#define QC_LLM_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/jsonb.h"

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
	const char *model;
	const char *tools_json;		/* the request's "tools" array, or NULL */
	const char *output_schema;	/* a JSON object, or NULL */
	bool		schema_strict;	/* the schema meets strict mode's rules */
	bool		want_schema;	/* send response_format in this request */
	StringInfoData messages;	/* JSON objects separated by commas */
	List	   *call_ids;		/* the tool call ids used so far */
	char		run_id[17];		/* ties one run's audit rows together */
} QcChat;

/*
 * chat.c: the wire format.  qc_chat_init() raises 55000 when the endpoint
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
 * Send the conversation as round `round`, audit the request (func "llm")
 * and return the reply.  An HTTP error status or a reply that is not a
 * chat completion raises an audited error.
 */
extern QcChatReply *qc_chat_send(QcChat *chat, int round);

/* tools.c: what became of one tool call. */
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
 * Run one tool call in a subtransaction: its failure (refusal, timeout,
 * HTTP error, bad arguments, a tool not offered) becomes the result's
 * content; only a query cancel or termination is raised.
 */
extern QcToolResult *qc_tool_run(const QcChat *chat, List *tools, int round,
								 const QcToolCall *tc);

/*
 * The result of a tool call that is not run because its reply holds more
 * than queryclaw.llm_max_tool_calls calls: an error the model can read.
 */
extern QcToolResult *qc_tool_not_run(void);

/* Raise 42501 unless the current role may execute the function. */
extern void qc_require_execute(const char *signature, const char *detail);

/*
 * schema.c: output_schema.  qc_schema_mismatch() returns the first way the
 * answer does not match the schema ("$.city is a number, where the schema
 * wants a string"), or NULL when it matches; qc_schema_strict_ok() says
 * whether the schema may be sent with "strict": true.
 */
extern char *qc_schema_mismatch(Jsonb *schema, Jsonb *answer);
extern bool qc_schema_strict_ok(Jsonb *schema);

/*
 * llm.c: web_fetch's extract_prompt.  qc_llm_check_extract() validates before the
 * page is fetched; qc_llm_extract() asks the model and returns its answer
 * (NULL when it gave none).
 */
extern void qc_llm_check_extract(const char *instruction);
extern char *qc_llm_extract(const char *url, const char *page, bool page_cut,
							const char *instruction);

#endif							/* QC_LLM_H */
