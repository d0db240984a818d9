/*-------------------------------------------------------------------------
 *
 * callrec.h
 *	  The record of one HTTP call (QcCall): what the caller asked for, what
 *	  came back, and what the audit log will say about it; and callrec.c's
 *	  functions, which fill it and never audit nor raise.
 *
 * Every layer writes on the record (the transport its response or its
 * failure, the response shaping its characters); only the owner of the
 * call (call.c) admits, audits and raises it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CALLREC_H
#define QC_CALLREC_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "header.h"
#include "policy.h"
#include "verdict.h"

/* Audit outcomes (README, "Audit"). */
#define QC_OUTCOME_OK			"ok"
#define QC_OUTCOME_HTTP_ERROR	"http_error"
#define QC_OUTCOME_REFUSED		"refused"
#define QC_OUTCOME_TIMEOUT		"timeout"
#define QC_OUTCOME_ERROR		"error"
#define QC_OUTCOME_CANCELLED	"cancelled"
#define QC_OUTCOME_CHECKED		"checked"	/* check_url; see audit.h */

typedef struct QcCall
{
	/* the request, set by the SQL entry point */
	const char *func;			/* SQL function name, for the audit log */
	const char *method;			/* upper case, validated */
	const char *url;			/* as the caller gave it */
	List	   *headers;		/* of QcHeader *, validated */
	const char *body;			/* UTF-8 request body, or NULL */
	size_t		body_len;
	int			max_chars;		/* effective limit on returned characters */
	int			ord;			/* position in a batch (0-based) */
	/* the URL parsed, once someone asked (qc_call_first_url) */
	const QcUrl *first_url;
	char	   *first_url_error;
	TimestampTz started;
	bool		taken_up;		/* the transport started it: it may have gone
								 * out */

	/*
	 * Per-call limits and audit additions.  qc_call_new() sets the defaults
	 * (queryclaw.timeout, queryclaw.max_bytes, nothing extra); the LLM and
	 * search endpoints change them.
	 */
	int			timeout_ms;		/* whole request, redirects included */
	const char *timeout_setting;	/* the setting named in a timeout error */
	size_t		max_bytes;		/* body bytes kept; the transfer is cut there */
	char	   *audit_extra;	/* more "key": value members for the audit
								 * row's detail object, or NULL */

	/*
	 * A trusted endpoint: the DBA's own queryclaw.llm_url or
	 * queryclaw.search_url, never a URL a caller or a model chose.  For the
	 * first hop only, the host lists, the literal-address check, read_only
	 * and the connect-time address check (block_local) are skipped;
	 * queryclaw.enabled and the http/https rule still apply.  A redirect
	 * leaves the trusted URL, so every later hop gets the whole policy.
	 */
	bool		trusted;

	/* the settings it is judged and sent under: those in force when made */
	const QcPolicy *policy;

	void	   *owner;			/* its maker's, untouched (the async worker's request) */

	/*
	 * The foreign server the URL is under, with the calling role's user
	 * mapping, read as the call is built (servers.h); NULL when none.
	 */
	struct QcServerUse *server;

	/*
	 * The statement the call is made for, when it is not the one this
	 * backend runs: an asynchronous request's enqueuing statement, as
	 * queryclaw.requests.query keeps it (redacted as an audit row's query
	 * is).  NULL: the statement under way (debug_query_string).
	 */
	const char *query;

	/* the response, filled by the transport (http.c) */
	char	   *final_url;		/* after redirects */
	long		status;			/* 0 until a response arrived */
	char	   *content_type;	/* NULL when the server sent none */
	char	   *response_headers;	/* raw header block of the final response */
	char	   *response_body;	/* body bytes (NUL-terminated copy) */
	size_t		response_len;
	bool		response_cut;	/* cut at queryclaw.max_bytes */
	int			redirects;
	char	   *redirect_held;	/* a redirect not followed (http.c), redacted */
	double		elapsed_ms;

	/* the verdict, filled as the call ends, written to the audit log */
	const char *outcome;
	char	   *reason;			/* the error message when the call failed */
	int			error_code;		/* its SQLSTATE; 0 while the call has not failed */
	char	   *error_detail;
	char	   *error_hint;
	TimestampTz retry_at;		/* a refusal time lifts: when the call
								 * could go (QcVerdict); else 0 */
	int			chars;			/* characters returned, -1 if none */
	bool		truncated;		/* cut by max_bytes or max_chars */

	/* the audit (call.c, audit.c) */
	bool		audited;		/* its row is written, or never will be */
	struct QcAuditPending *audit_pending;	/* its room in the durable
											 * queue, while it holds one */
} QcCall;

/*
 * Start a call record with the defaults (no response yet); its query is
 * the statement the calls of this backend are made for now (see
 * qc_call_make_for), and its server the one url is under, with the current
 * role's user mapping for it (qc_server_for_url).
 */
extern QcCall *qc_call_new(const char *func, const char *method, const char *url);

/*
 * While on, every call this backend would start is refused (42501), in
 * qc_call_new and by qc_call_check_allowed: on while a statement given to
 * sql_query runs.  Returns the setting it replaces, for the caller to put
 * back on every path.
 */
extern bool qc_call_forbid(bool on);

/* Refuse (42501) to start a call of func while calls are forbidden. */
extern void qc_call_check_allowed(const char *func);

/*
 * From now on, the calls this backend starts are made for the statement
 * query (QcCall.query; NULL: the one under way): an async worker running
 * a model request makes its calls, the tool calls' included, for the
 * request's enqueuing statement.  Returns the statement it replaces, for
 * the caller to put back.
 */
extern const char *qc_call_make_for(const char *query);

/*
 * Did a 2xx response arrive?  The one test of success: api_call's "ok",
 * the audit outcome "ok", and the errors of web_fetch and the endpoints.
 */
static inline bool
qc_call_status_ok(const QcCall *call)
{
	return call->status >= 200 && call->status <= 299;
}

/* Milliseconds since the call started. */
static inline double
qc_call_elapsed_ms(const QcCall *call)
{
	return (GetCurrentTimestamp() - call->started) / 1000.0;
}

/*
 * Record a failure on the call: the outcome its audit row will have, and
 * the message (primary; detail and hint may be NULL) it is raised with.
 * Neither audits nor raises: the owner (call.c) does, once.
 */
extern void qc_call_set_failure(QcCall *call, const char *outcome, int sqlerrcode,
								const char *message, const char *detail,
								const char *hint);

/*
 * Record a refusal (a verdict that did not allow the call), outcome
 * refused, with the verdict's retry_at.
 */
extern void qc_call_set_refusal(QcCall *call, const QcVerdict *verdict);

/* "message: detail" of a failed call, for a batch's error column; or NULL. */
extern char *qc_call_error_text(const QcCall *call);

/*
 * The call's URL as qc_url_parse reads it, or NULL with *error set; parsed
 * once, in the call's own memory, for the admission of a request, its
 * host's count and its first hop all read it.
 */
extern const QcUrl *qc_call_first_url(QcCall *call, char **error);

/* A new URL for the call (a user mapping's query added), read again when asked. */
extern void qc_call_set_url(QcCall *call, const char *url);

/* The host of the call's first hop, "" when its URL does not parse. */
extern const char *qc_call_host(QcCall *call);

/*
 * The secrets of the call's user mapping, in every form a server may echo
 * them (qc_mapping_secrets), once the mapping is on the call; else NIL.
 * Hidden from everyone, the caller too: a role may send a key it cannot
 * read.
 */
extern List *qc_call_mapping_secrets(const QcCall *call);

/*
 * Every secret the call sends, for qc_redact_secrets() on what is stored
 * or shown about it (its errors, audit row, queued result, what a model is
 * told): its mapping's (above), then its own (qc_call_secrets).  Copies,
 * in the current memory context.
 */
extern List *qc_call_secret_set(const QcCall *call);

#endif							/* QC_CALLREC_H */
