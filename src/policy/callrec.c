/*-------------------------------------------------------------------------
 *
 * callrec.c
 *	  The record of a call (QcCall): its creation, and how a failure or a
 *	  refusal is written on it.
 *
 * Failures are values: each layer that finds one (the transport, the
 * response shaping, a verdict) writes it on the call and goes on or
 * returns; none of them audits or raises.  The owner of the call (call.c)
 * audits the call once it is over, and raises the failure of a single call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "callrec.h"
#include "charset.h"
#include "guc.h"
#include "redact.h"
#include "servers.h"

/* The statement calls are made for now, when not the one under way. */
static const char *made_for = NULL;

const char *
qc_call_make_for(const char *query)
{
	const char *previous = made_for;

	made_for = query;
	return previous;
}

/* A statement of sql_query is running: no call may start (qc_call_forbid). */
static bool calls_forbidden = false;

bool
qc_call_forbid(bool on)
{
	bool		previous = calls_forbidden;

	calls_forbidden = on;
	return previous;
}

void
qc_call_check_allowed(const char *func)
{
	/*
	 * Declared volatility is a function owner's claim: a function that says
	 * it is stable can still reach ours.  So the refusal is here, where
	 * every call starts, whatever led to it.
	 */
	if (calls_forbidden)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("queryclaw calls are not allowed inside sql_query"),
				 errdetail("The statement given to sql_query reached %s, which would make a call (a request, a name lookup or a queued request); sql_query only reads the database.",
						   func),
				 errhint("Call %s outside sql_query.", func)));
}

QcCall *
qc_call_new(const char *func, const char *method, const char *url)
{
	QcCall	   *call;

	qc_call_check_allowed(func);
	call = palloc0(sizeof(QcCall));

	call->func = func;
	call->query = made_for;
	call->method = method;
	call->url = url;
	call->max_chars = qc_max_chars;
	call->chars = -1;
	call->started = GetCurrentTimestamp();
	call->timeout_ms = qc_timeout;
	call->timeout_setting = "queryclaw.timeout";
	call->max_bytes = QC_MAX_BYTES();
	call->policy = qc_policy_capture();
	call->server = qc_server_for_url(url);
	return call;
}

/*
 * A message, detail or hint of a failed call as it is kept and raised:
 * valid text (it may quote a server), and no secret (raised, it reaches
 * the server log).  NULL for NULL.
 */
static char *
shown_text(const QcCall *call, const char *text)
{
	if (text == NULL)
		return NULL;
	return qc_redact_echo(qc_valid_text(text), qc_call_secret_set(call));
}

List *
qc_call_mapping_secrets(const QcCall *call)
{
	return call->server != NULL && call->server->applied ? call->server->secrets : NIL;
}

List *
qc_call_secret_set(const QcCall *call)
{
	List	   *secrets = NIL;
	ListCell   *lc;

	foreach(lc, qc_call_mapping_secrets(call))
		secrets = lappend(secrets, pstrdup(lfirst(lc)));
	return list_concat(secrets, qc_call_secrets(call->url, call->final_url, call->headers));
}

void
qc_call_set_failure(QcCall *call, const char *outcome, int sqlerrcode,
					const char *message, const char *detail, const char *hint)
{
	call->outcome = outcome;
	call->error_code = sqlerrcode;
	call->reason = shown_text(call, message);
	call->error_detail = shown_text(call, detail);
	call->error_hint = shown_text(call, hint);
	call->elapsed_ms = qc_call_elapsed_ms(call);
}

void
qc_call_set_refusal(QcCall *call, const QcVerdict *verdict)
{
	qc_call_set_failure(call, QC_OUTCOME_REFUSED, verdict->sqlerrcode,
						verdict->message, verdict->detail, verdict->hint);
	call->retry_at = verdict->retry_at;
}

char *
qc_call_error_text(const QcCall *call)
{
	if (call->error_code == 0)
		return NULL;
	return call->error_detail ? psprintf("%s: %s", call->reason, call->error_detail) :
		pstrdup(call->reason);
}

const QcUrl *
qc_call_first_url(QcCall *call, char **error)
{
	if (call->first_url == NULL && call->first_url_error == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(call));
		QcUrl	   *url = palloc(sizeof(QcUrl));
		char	   *why;

		if (qc_url_parse(call->url, url, &why))
			call->first_url = url;
		else
			call->first_url_error = why;
		MemoryContextSwitchTo(old);
	}
	*error = call->first_url_error;
	return call->first_url;
}

void
qc_call_set_url(QcCall *call, const char *url)
{
	call->url = url;
	call->first_url = NULL;
	call->first_url_error = NULL;
}

const char *
qc_call_host(QcCall *call)
{
	char	   *error;
	const QcUrl *url = qc_call_first_url(call, &error);

	return url ? url->host : "";
}
