/*-------------------------------------------------------------------------
 *
 * response.h
 *	  Shaping a response for SQL: web_fetch's text formats and api_call's
 *	  result object.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_RESPONSE_H
#define QC_RESPONSE_H

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "content.h"
#include "callrec.h"

/* The formats of web_fetch, in the order of formats[] in response.c */
typedef enum QcFormat
{
	QC_FORMAT_TEXT,
	QC_FORMAT_ARTICLE,
	QC_FORMAT_MARKDOWN,
	QC_FORMAT_RAW,
	QC_FORMAT_JSON,
	QC_FORMAT_METADATA
} QcFormat;

/* Parse a format name; raises 22023 for an unknown one. */
extern QcFormat qc_format_parse(const char *name);

/* The HTML conversion a format asks for (QC_HTML_NONE for raw and json). */
extern QcHtmlFormat qc_format_html(QcFormat format);
extern const char *qc_format_name(QcFormat format);

/*
 * The effective character limit: the argument when given (it can only
 * narrow queryclaw.max_chars), else the setting.  Raises 22023 when the
 * argument is below 1.
 */
extern int	qc_effective_max_chars(FunctionCallInfo fcinfo, int argno);
extern int	qc_clamp_max_chars(bool given, int requested);

/*
 * The body in the requested format, in the database encoding, cut at the
 * call's max_chars.  Sets call->chars and call->truncated; returns NULL
 * (the failure recorded on the call) when the body cannot be converted.
 */
extern char *qc_response_text(QcCall *call, QcFormat format);

/*
 * web_fetch's result for a call that has run: NULL with the failure
 * recorded when the call failed, the status is not 2xx or the body cannot
 * be converted; else the text, the outcome "ok".  Audits nothing: the
 * call's owner (call.c) does.
 */
extern char *qc_fetch_result(QcCall *call, QcFormat format);

/*
 * Most names api_call's headers object keeps: a response with more gets
 * "headers_dropped" (how many header lines were left out) and "truncated"
 * true.
 */
#define QC_MAX_HEADERS_KEPT 1000

/* api_call's result object; sets call->chars and call->truncated. */
extern Jsonb *qc_response_jsonb(QcCall *call);

/*
 * A result of the queue (api_call's object, web_fetch's {"content"}, the
 * LLM loop's object) fit to store and to hand to a callback: every string
 * cleared of secrets (qc_redact_secrets), the keys too; outside what the
 * server or the model said ("body", "content", "answer", "metadata"),
 * members named "url" or "final_url" redacted as URLs, and the members of
 * a "headers" object as the audit log redacts headers (a secret-looking
 * name's value replaced, the others' as qc_redact_text()): Location,
 * Content-Location, Set-Cookie, the URLs and headers of an LLM's tool
 * calls.  result itself when nothing changes, which is found without
 * building anything.
 */
extern Jsonb *qc_response_redact(Jsonb *result, List *secrets);

/*
 * result with every string (keys too) cleared of secrets
 * (qc_redact_secrets), nothing else changed: what api_call returns under a
 * user mapping.  result itself when nothing changes.
 */
extern Jsonb *qc_response_clear(Jsonb *result, List *secrets);

#endif							/* QC_RESPONSE_H */
