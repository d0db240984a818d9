/*-------------------------------------------------------------------------
 *
 * audit.c
 *	  One queryclaw.audit_log row for every attempted call.
 *
 * The row is inserted through SPI in the caller's transaction, as the
 * owner of the audit table: ordinary roles have no privilege on the table
 * itself (they read their own rows through queryclaw.my_audit), so the
 * insert switches to the owner in a security-restricted context for the
 * duration of one statement.  Secrets are removed before anything is
 * stored (redact.c).
 *
 * Because the row shares the caller's transaction, a call that raises an
 * error (a refusal, a timeout) loses its row when the transaction aborts,
 * unless the caller catches the error; the README says so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/syscache.h"

#include "audit.h"
#include "queryclaw.h"
#include "redact.h"

#define AUDIT_NARGS 15

static SPIPlanPtr insert_plan = NULL;

static const char *const insert_sql =
"INSERT INTO queryclaw.audit_log"
" (role, pid, func, method, url, final_url, status, outcome, reason,"
"  bytes, chars, truncated, elapsed_ms, query, detail)"
" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";

/* The owner of queryclaw.audit_log, as whom rows are inserted. */
static Oid
audit_table_owner(void)
{
	Oid			relid = RangeVarGetRelid(makeRangeVar("queryclaw", "audit_log", -1),
										 AccessShareLock, false);
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * detail: the request headers (secrets redacted), the redirect count, and
 * what the caller added (the LLM round, model and tokens).
 */
static char *
audit_detail(const QcCall *call)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"redirects\": %d, \"request_headers\": {", call->redirects);
	foreach(lc, call->headers)
	{
		QcHeader   *h = lfirst(lc);

		if (!first)
			appendStringInfoString(&buf, ", ");
		first = false;
		escape_json(&buf, h->name);
		appendStringInfoString(&buf, ": ");
		escape_json(&buf, qc_name_is_secret(h->name, true) ? "REDACTED" : h->value);
	}
	appendStringInfoChar(&buf, '}');
	if (call->audit_extra)
		appendStringInfo(&buf, ", %s", call->audit_extra);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

static void
prepare_insert(void)
{
	Oid			types[AUDIT_NARGS] = {
		TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID,
		TEXTOID, INT8OID, INT4OID, BOOLOID, FLOAT8OID, TEXTOID, JSONBOID
	};

	insert_plan = SPI_prepare(insert_sql, AUDIT_NARGS, types);
	if (insert_plan == NULL)
		elog(ERROR, "could not prepare audit insert: %s",
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(insert_plan);
}

#define TEXT_OR_NULL(i, s) \
	(values[i] = (s) ? CStringGetTextDatum(s) : (Datum) 0, nulls[i] = (s) ? ' ' : 'n')

void
qc_audit_call(const QcCall *call)
{
	Datum		values[AUDIT_NARGS];
	char		nulls[AUDIT_NARGS];
	Oid			save_userid;
	int			save_sec_context;
	const char *query = qc_audit_query ? debug_query_string : NULL;
	int			rc;

	if (!qc_audit)
		return;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
	values[1] = Int32GetDatum(MyProcPid);
	values[2] = CStringGetTextDatum(call->func);
	values[3] = CStringGetTextDatum(call->method);
	values[4] = CStringGetTextDatum(qc_redact_url(call->url));
	TEXT_OR_NULL(5, call->final_url ? qc_redact_url(call->final_url) : NULL);
	values[6] = Int32GetDatum((int32) call->status);
	nulls[6] = call->status ? ' ' : 'n';
	values[7] = CStringGetTextDatum(call->outcome);
	TEXT_OR_NULL(8, call->reason);
	values[9] = Int64GetDatum((int64) call->data_len);
	values[10] = Int32GetDatum(call->chars);
	nulls[10] = call->chars >= 0 ? ' ' : 'n';
	values[11] = BoolGetDatum(call->truncated || call->data_cut);
	values[12] = Float8GetDatum(call->elapsed_ms);
	TEXT_OR_NULL(13, query ? qc_redact_keys(query) : NULL);
	values[14] = DirectFunctionCall1(jsonb_in, CStringGetDatum(audit_detail(call)));

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(audit_table_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (insert_plan == NULL)
		prepare_insert();
	rc = SPI_execute_plan(insert_plan, values, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not write audit row: %s", SPI_result_code_string(rc));
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
}
