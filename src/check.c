/*-------------------------------------------------------------------------
 *
 * check.c
 *	  SQL entry point for the dry run: check_url().
 *
 * check_url() applies the same policy as a real call and resolves the host
 * name, but opens no connection and sends nothing: it lets a DBA or an
 * agent see whether, and why, a URL would be refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "json.h"
#include "queryclaw.h"
#include "resolve.h"
#include "response.h"

PG_FUNCTION_INFO_V1(check_url);

/* Append a JSON string, or null. */
static void
append_json_text(StringInfo out, const char *key, const char *value)
{
	appendStringInfo(out, ", \"%s\": ", key);
	qc_json_append_string(out, value);
}

/*
 * Resolve the host into its addresses.  Returns the first refusal if no
 * address may be connected to, appending every address to out.
 */
static bool
resolve_and_check(const QcUrl *url, StringInfo out, QcRefusal *refusal)
{
	QcInetAddr	addrs[32];
	int			naddrs = 0;
	bool		any_allowed = false;

	if (url->host_is_ip)
		addrs[naddrs++] = url->addr;
	else
	{
		const char *error;

		naddrs = qc_resolve_host(url->host, addrs, lengthof(addrs), &error);
		if (naddrs < 0)
		{
			refusal->message = psprintf("could not resolve host \"%s\"", url->host);
			refusal->detail = pstrdup(error);
			refusal->hint = NULL;
			return false;
		}
	}

	appendStringInfoString(out, ", \"addresses\": [");
	for (int i = 0; i < naddrs; i++)
	{
		char		text[64];
		QcAddrClass cls;

		qc_inet_format(&addrs[i], text, sizeof(text));
		appendStringInfoString(out, i ? ", " : "");
		escape_json(out, text);
		if (qc_proxy[0] != '\0' ||
			qc_policy_address_permitted(&addrs[i], url->port, &cls))
			any_allowed = true;
		else if (!any_allowed && refusal->message == NULL)
			qc_policy_address_refusal(&addrs[i], url->port, &cls, refusal);
	}
	appendStringInfoChar(out, ']');
	return any_allowed;
}

char *
qc_check_url_json(const char *given)
{
	StringInfoData out;
	QcUrl		url;
	QcRefusal	refusal = {0};
	char	   *error;
	bool		allowed;

	initStringInfo(&out);
	if (!qc_url_parse(given, &url, &error))
	{
		refusal.message = "invalid URL";
		refusal.detail = error;
		allowed = false;
	}
	else
	{
		allowed = qc_policy_check_url(&url, "GET", &refusal);
		appendStringInfo(&out, ", \"port\": %d", url.port);
		append_json_text(&out, "host", url.host);
		if (allowed)
			allowed = resolve_and_check(&url, &out, &refusal);
	}
	append_json_text(&out, "reason", allowed ? NULL : refusal.message);
	append_json_text(&out, "detail", allowed ? NULL : refusal.detail);
	append_json_text(&out, "hint", allowed ? NULL : refusal.hint);

	return psprintf("{\"allowed\": %s%s}", allowed ? "true" : "false", out.data);
}

/*
 * check_url(url text) returns jsonb
 *	{allowed, reason, detail, hint, host, port, addresses}
 */
Datum
check_url(PG_FUNCTION_ARGS)
{
	char	   *json = qc_check_url_json(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
}
