/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  SQL entry points that read pages: web_fetch() and html_to_text().
 *
 * web_fetch's extract_prompt hands the page text to the model (llm.c):
 * the page is converted and cut first, so the model sees only text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "call.h"
#include "content.h"
#include "guc.h"
#include "llm.h"
#include "onerror.h"
#include "redact.h"
#include "response.h"

PG_FUNCTION_INFO_V1(web_fetch);
PG_FUNCTION_INFO_V1(html_to_text);

/* Text in the database encoding as UTF-8, which the HTML code reads. */
static char *
server_to_utf8(char *s)
{
	return pg_server_to_any(s, strlen(s), PG_UTF8);
}

/* web_fetch's work, from the call to the text it returns. */
typedef struct FetchWork
{
	const char *url;
	QcFormat	format;
	int			max_chars;
	const char *extract;		/* extract_prompt, or NULL */
	char	   *result;			/* NULL: the function returns NULL */
} FetchWork;

static void
fetch_work(void *arg)
{
	FetchWork  *w = arg;
	QcCall	   *call = qc_call_new("web_fetch", "GET", w->url);
	char	   *result;

	call->max_chars = w->extract ? Min(qc_max_chars, qc_llm_tool_max_chars) : w->max_chars;
	qc_call_run(call);
	result = qc_fetch_result(call, w->format);
	if (result == NULL)
		qc_call_raise(call);
	qc_call_end(call);
	if (w->extract != NULL)
	{
		result = qc_llm_extract(call->final_url, result, call->truncated, w->extract);
		if (result != NULL)
			qc_clip_chars(result, w->max_chars);
	}
	w->result = result;
}

/*
 * web_fetch(url text, format text DEFAULT 'text', max_chars int DEFAULT NULL,
 *			 extract_prompt text DEFAULT NULL)
 *
 * GET a page and return it as text; a status other than 2xx is an error
 * (NULL with queryclaw.on_error = 'return', as any failure of the call).
 * With extract_prompt, the page text (cut at queryclaw.llm_tool_max_chars)
 * goes to the model with that instruction, and the model's answer is
 * returned instead, cut at max_chars.  (Not "extract": EXTRACT is an SQL
 * keyword, which cannot name an argument in a call.)
 */
Datum
web_fetch(PG_FUNCTION_ARGS)
{
	FetchWork	w = {0};
	ErrorData  *failure;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	w.url = text_to_cstring(PG_GETARG_TEXT_PP(0));
	w.format = qc_format_parse(PG_ARGISNULL(1) ? "text" :
							   text_to_cstring(PG_GETARG_TEXT_PP(1)));
	w.max_chars = qc_effective_max_chars(fcinfo, 2);
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
	{
		w.extract = text_to_cstring(PG_GETARG_TEXT_PP(3));
		qc_llm_check_extract(w.extract);
	}
	if (!qc_on_error_run(fetch_work, &w, &failure) || w.result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(w.result));
}

/*
 * html_to_text(html text, format text DEFAULT 'text', base_url text DEFAULT NULL)
 *
 * The conversion web_fetch uses, for HTML already in the database.  No
 * request is made, so no policy applies and nothing is audited.
 */
Datum
html_to_text(PG_FUNCTION_ARGS)
{
	char	   *html;
	const char *format = PG_ARGISNULL(1) ? "text" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	QcFormat	qc_format = qc_format_parse(format);
	char	   *base_url = NULL;
	char	   *utf8;
	char	   *metadata = NULL;
	char	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (qc_format == QC_FORMAT_RAW || qc_format == QC_FORMAT_JSON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("html_to_text does not support format \"%s\"", format),
				 errhint("Use 'text', 'article', 'markdown' or 'metadata'.")));
	html = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(2))
		base_url = server_to_utf8(text_to_cstring(PG_GETARG_TEXT_PP(2)));

	utf8 = server_to_utf8(html);
	result = qc_html_convert(utf8, strlen(utf8), "utf-8", qc_format_html(qc_format),
							 base_url,
							 qc_format == QC_FORMAT_METADATA ? &metadata : NULL);
	PG_RETURN_TEXT_P(cstring_to_text(metadata ? metadata : result));
}
