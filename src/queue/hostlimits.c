/*-------------------------------------------------------------------------
 *
 * hostlimits.c
 *	  SQL entry point that says which limits the queue applies to a host:
 *	  host_limits(host), which the queue_hosts view shows beside each
 *	  host's requests.
 *
 * The rate is the queryclaw.host_rate_limit entry that applies to the
 * host, found as the workers find it (qc_rate_list_match on the host as
 * policy.c maps it: IDNA, case, a final dot, IPv4 forms); the cap is
 * queryclaw.max_host_concurrency.  Both are the values of the calling
 * session, and on a Citus cluster this node's shares of them (cluster.c),
 * what the node's workers apply.  Neither setting is hidden from ordinary
 * roles (SHOW shows them), so every role may call this.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "cluster.h"
#include "guc.h"
#include "hostname.h"
#include "hostrate.h"

PG_FUNCTION_INFO_V1(host_limits);

/* The host of "host", "host:port" or "[IPv6]:port". */
static char *
host_of(const char *text)
{
	const char *colon = strchr(text, ':');

	if (text[0] == '[')
	{
		const char *end = strchr(text, ']');

		return end ? pnstrdup(text + 1, end - text - 1) : pstrdup(text);
	}
	/* more than one colon: an IPv6 address without brackets, no port */
	if (colon != NULL && strchr(colon + 1, ':') == NULL)
		return pnstrdup(text, colon - text);
	return pstrdup(text);
}

/*
 * host_limits(host text, OUT rate_limit text, OUT max_concurrency int)
 *	returns record: rate_limit NULL when no host_rate_limit entry applies
 *	(or host is no host name)
 */
Datum
host_limits(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {true, false};
	QcHostName	name;
	char		why[256];

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (qc_host_to_ascii(host_of(text_to_cstring(PG_GETARG_TEXT_PP(0))), &name, why, sizeof(why)))
	{
		char	   *rate = qc_hostrate_limit_text(name.name);

		if (rate != NULL)
		{
			values[0] = CStringGetTextDatum(rate);
			nulls[0] = false;
		}
	}
	values[1] = Int32GetDatum(qc_cluster_share(qc_max_host_concurrency));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
