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
#include "utils/jsonb.h"

#include "http.h"

typedef enum QcFormat
{
	QC_FORMAT_TEXT,
	QC_FORMAT_RAW,
	QC_FORMAT_JSON
} QcFormat;

/* Parse a format name; raises 22023 for an unknown one. */
extern QcFormat qc_format_parse(const char *name);

/*
 * The effective character limit: the argument when given (it can only
 * narrow queryclaw.max_chars), else the setting.  Raises 22023 when the
 * argument is below 1.
 */
extern int	qc_effective_max_chars(FunctionCallInfo fcinfo, int argno);

/*
 * web_fetch's result: the body in the requested format, in the database
 * encoding, cut at the call's max_chars.  Sets call->chars and
 * call->truncated; raises (audited) when the body cannot be converted.
 */
extern char *qc_response_text(QcCall *call, QcFormat format);

/*
 * For an error detail: "The response began: ..." with the first
 * QC_QUOTE_CHARS characters of the body (or of text already converted to
 * the database encoding), or NULL when it is empty.
 */
#define QC_QUOTE_CHARS 200
extern char *qc_response_quote(const QcCall *call);
extern char *qc_text_quote(const char *text);

/* api_call's result object; sets call->chars and call->truncated. */
extern Jsonb *qc_response_jsonb(QcCall *call);

#endif							/* QC_RESPONSE_H */
