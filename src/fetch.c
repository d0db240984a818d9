/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  SQL entry points that read pages: web_fetch() and html_to_text().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "audit.h"
#include "content.h"
#include "http.h"
#include "redact.h"
#include "response.h"

PG_FUNCTION_INFO_V1(web_fetch);
PG_FUNCTION_INFO_V1(html_to_text);

/*
 * web_fetch(url text, format text DEFAULT 'text', max_chars int DEFAULT NULL)
 *
 * GET a page and return it as text; a status other than 2xx is an error.
 */
Datum
web_fetch(PG_FUNCTION_ARGS)
{
	char	   *url;
	QcFormat	format;
	QcCall	   *call;
	char	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	url = text_to_cstring(PG_GETARG_TEXT_PP(0));
	format = qc_format_parse(PG_ARGISNULL(1) ? "text" :
							 text_to_cstring(PG_GETARG_TEXT_PP(1)));

	call = qc_call_new("web_fetch", "GET", url);
	call->max_chars = qc_effective_max_chars(fcinfo, 2);
	qc_http_run(call);
	result = qc_fetch_result(call, format);
	if (result == NULL)
		qc_call_raise(call);
	PG_RETURN_TEXT_P(cstring_to_text(result));
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
	char	   *utf8;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	html = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (qc_format_parse(format) != QC_FORMAT_TEXT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("html_to_text does not support format \"%s\"", format),
				 errhint("Use 'text'.")));
	utf8 = pg_server_to_any(html, strlen(html), PG_UTF8);
	PG_RETURN_TEXT_P(cstring_to_text(qc_html_to_text(utf8, strlen(utf8), "utf-8")));
}
