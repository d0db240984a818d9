/*-------------------------------------------------------------------------
 *
 * check.c
 *	  SQL entry point for the dry run: check_url().
 *
 * check_url() applies the same policy as a real call and resolves the host
 * name, but opens no connection and sends nothing: it lets a DBA or an
 * agent see whether, and why, a URL would be refused.  Its verdict is the
 * real call's: the host mapped the same way, every address it resolves to
 * checked.  The lookup is a message sent out all the same (a name server
 * can be told things in a name), so each check is audited and counts
 * against queryclaw.max_calls_per_hour like a call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "call.h"
#include "check.h"
#include "guc.h"
#include "json.h"
#include "resolve.h"
#include "response.h"
#include "serversadmit.h"

PG_FUNCTION_INFO_V1(check_url);

/* Append a JSON string, or null. */
static void
append_json_text(StringInfo out, const char *key, const char *value)
{
	appendStringInfo(out, ", \"%s\": ", key);
	qc_json_append_string(out, value);
}

/*
 * The addresses of the URL's host, as a JSON array in addresses: its
 * literal address, or the answer of a name lookup.  False (and *refusal)
 * when the lookup fails or, as a real call would be, when any address is
 * one the connect-time check refuses: libcurl may connect to any of them.
 * Through a proxy, a real call neither resolves the name nor checks its
 * addresses (the proxy does both), so neither does the check.
 */
static bool
resolve_and_check(const QcPolicy *policy, const QcUrl *url, StringInfo addresses,
				  QcVerdict *refusal)
{
	QcInetAddr	addrs[32];
	int			naddrs;

	naddrs = qc_url_literal_addresses(url, addrs);
	if (naddrs == 0 && policy->proxy[0] != '\0')
	{
		appendStringInfoString(addresses, "[]");
		return true;
	}
	if (naddrs == 0)
	{
		const char *error;

		naddrs = qc_resolve_host(url->host, addrs, lengthof(addrs), &error);
		if (naddrs < 0)
		{
			refusal->sqlerrcode = ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION;
			refusal->message = psprintf("could not resolve host \"%s\"", url->host);
			refusal->detail = pstrdup(error);
			refusal->hint = NULL;
			return false;
		}
	}

	appendStringInfoChar(addresses, '[');
	for (int i = 0; i < naddrs; i++)
	{
		char		text[64];
		QcAddrClass cls;

		qc_inet_format(&addrs[i], text, sizeof(text));
		appendStringInfoString(addresses, i ? ", " : "");
		escape_json(addresses, text);
		if (refusal->message == NULL &&
			!qc_policy_address_permitted(policy, &addrs[i], url->port, &cls))
			qc_policy_address_refusal(&addrs[i], url->port, &cls, refusal);
	}
	appendStringInfoChar(addresses, ']');
	return refusal->message == NULL;
}

/*
 * Audit the check as one row: the outcome a real call would have had, with
 * "checked" where it would have sent a request.
 */
static void
audit_check(QcCall *call, const QcUrl *url, bool allowed, const char *outcome,
			const QcVerdict *refusal, const char *addresses)
{
	if (url != NULL)
		call->final_url = url->url;
	if (addresses != NULL)
		call->audit_extra = call->audit_extra ?
			psprintf("%s, \"addresses\": %s", call->audit_extra, addresses) :
			psprintf("\"addresses\": %s", addresses);
	if (!allowed)
		qc_call_set_failure(call, outcome, refusal->sqlerrcode, refusal->message,
							refusal->detail, refusal->hint);
	else
	{
		call->outcome = QC_OUTCOME_CHECKED;
		call->elapsed_ms = qc_call_elapsed_ms(call);
	}
	qc_call_end(call);
}

char *
qc_check_url_json(const char *given, char *audit_extra)
{
	StringInfoData out;
	StringInfoData addresses;
	QcCall	   *call = qc_call_new("check_url", "GET", given);
	QcUrl		url;
	QcVerdict	refusal = {0};
	char	   *error;
	bool		allowed;
	bool		parsed;
	const char *outcome = QC_OUTCOME_REFUSED;

	/* a lookup goes out like a request: it counts, and over the limit, 53400 */
	call->audit_extra = audit_extra;
	if (!qc_call_admit(call))
		qc_call_raise(call);

	initStringInfo(&out);
	initStringInfo(&addresses);
	parsed = qc_url_parse(given, &url, &error);
	if (!parsed)
	{
		refusal.sqlerrcode = ERRCODE_INVALID_PARAMETER_VALUE;
		refusal.message = "invalid URL";
		refusal.detail = error;
		allowed = false;
		outcome = QC_OUTCOME_ERROR;
	}
	else
	{
		/*
		 * In the order a real call meets them: queryclaw.servers_only when
		 * it is admitted, then the URL's policy.
		 */
		const QcVerdict *off_servers = qc_server_refusal(call);

		if (off_servers != NULL)
		{
			refusal = *off_servers;
			allowed = false;
		}
		else
			allowed = qc_policy_check_url(call->policy, &url, "GET", &refusal);
		appendStringInfo(&out, ", \"port\": %d", url.port);
		append_json_text(&out, "host", url.host);
		if (allowed)
		{
			allowed = resolve_and_check(call->policy, &url, &addresses, &refusal);
			if (addresses.len > 0)
				appendStringInfo(&out, ", \"addresses\": %s", addresses.data);
			else
				outcome = QC_OUTCOME_ERROR;
		}
	}
	audit_check(call, parsed ? &url : NULL, allowed, outcome, &refusal,
				addresses.len > 0 ? addresses.data : NULL);

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
	char	   *json = qc_check_url_json(text_to_cstring(PG_GETARG_TEXT_PP(0)), NULL);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
}
