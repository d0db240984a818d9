/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The life of a QcCall outside the transport: its creation, and how a
 *	  failure is recorded (audited) and, for single calls, raised.
 *
 * Failures are values first: qc_call_record() audits a failure and keeps
 * its message on the call, so that a batch can report it in a row and go
 * on; a single call then raises it with qc_call_raise().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "audit.h"
#include "call.h"
#include "content.h"
#include "guc.h"
#include "redact.h"

QcCall *
qc_call_new(const char *func, const char *method, const char *url)
{
	QcCall	   *call = palloc0(sizeof(QcCall));

	call->func = func;
	call->method = method;
	call->url = url;
	call->max_chars = qc_max_chars;
	call->chars = -1;
	call->started = GetCurrentTimestamp();
	call->timeout_ms = qc_timeout;
	call->timeout_setting = "queryclaw.timeout";
	call->max_bytes = QC_MAX_BYTES();
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
	return qc_redact_echo(qc_valid_text(text), call->url, call->final_url, call->headers);
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
qc_call_record(QcCall *call, const char *outcome, int sqlerrcode,
			   const char *message, const char *detail, const char *hint)
{
	qc_call_set_failure(call, outcome, sqlerrcode, message, detail, hint);
	qc_audit_call(call);
}

void
qc_call_raise(const QcCall *call)
{
	ereport(ERROR,
			(errcode(call->error_code),
			 errmsg_internal("%s", call->reason),
			 call->error_detail ? errdetail_internal("%s", call->error_detail) : 0,
			 call->error_hint ? errhint("%s", call->error_hint) : 0));
	pg_unreachable();
}

void
qc_call_fail(QcCall *call, const char *outcome, int sqlerrcode,
			 const char *message, const char *detail, const char *hint)
{
	qc_call_record(call, outcome, sqlerrcode, message, detail, hint);
	qc_call_raise(call);
}

const char *
qc_call_api_reply(QcCall *call, const char *what, const char *key_hint,
				  const char *note)
{
	const char *text = qc_redact_keys(qc_to_server_text(call->response_body, call->response_len,
														qc_content_type_charset(call->content_type)));

	if (!qc_call_status_ok(call))
	{
		char	   *quote = qc_text_quote(text);

		qc_call_fail(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
					 psprintf("HTTP status %ld from %s", call->status, what),
					 note[0] ? psprintf("%s %s", note, quote ? quote : "") : quote,
					 call->status == 401 || call->status == 403 ? key_hint : NULL);
	}
	return text;
}

void
qc_call_drop_response(QcCall *call)
{
	if (call->response_body != NULL)
		pfree(call->response_body);
	if (call->response_headers != NULL)
		pfree(call->response_headers);
	call->response_body = call->response_headers = NULL;
}

char *
qc_call_error_text(const QcCall *call)
{
	if (call->error_code == 0)
		return NULL;
	return call->error_detail ? psprintf("%s: %s", call->reason, call->error_detail) :
		pstrdup(call->reason);
}
