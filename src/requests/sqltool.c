/*-------------------------------------------------------------------------
 *
 * sqltool.c
 *	  The database as a read-only tool: sql_query() (also a SQL function),
 *	  and the list_tables and describe_table tools of the LLM loop.
 *
 * A model reads its surroundings before it answers; in a database they are
 * tables.  These tools let it, as the calling role, and cannot change
 * anything, by these means together:
 *
 * - the statement must be one SELECT (or WITH ... SELECT, VALUES, TABLE):
 *   no other command, no SELECT INTO, no data-modifying WITH, no FOR
 *   UPDATE/SHARE (row locks), checked on the rewritten query tree, where
 *   views are already expanded;
 * - every function its planning and execution can run must be immutable
 *   or stable, checked on the same tree before the statement is planned:
 *   the functions and operators it names, views' and row security
 *   policies' expressions, and what runs unnamed: aggregates' support
 *   functions, domains' CHECK constraints, the I/O, comparison and hashing
 *   functions of its types and operators (sqlcheck.c lists them all).
 *   nextval, set_config, advisory locks, pg_cancel_backend, dblink,
 *   query_to_xml and our own network functions are all volatile.  A few
 *   volatile functions that change nothing (random(), clock_timestamp()...)
 *   are allowed; a few stable ones that assign a transaction id are not.
 *   While the statement is parsed (which reads its literals, and can check
 *   a domain's constraints), planned and run, such functions are refused
 *   as they are reached too, built-in ones included, so that a function
 *   claiming to be stable cannot call them;
 * - no call of this extension starts while it runs (qc_call_forbid),
 *   however it is reached;
 * - it runs in a subtransaction marked read-only, which is always rolled
 *   back, so even a mislabelled stable function cannot leave a write;
 * - it has a time limit of its own, queryclaw.sql_timeout (the caller's
 *   statement_timeout still bounds the whole statement).
 *
 * Results are rows of JSON (row_to_json), cut at queryclaw.sql_max_rows
 * rows and at the call's character limit, on a row boundary, with a note.
 * Every run is an audit row: func the tool's name, method "SQL", url empty,
 * the statement (redacted as a calling statement is) in detail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timeout.h"

#include "call.h"
#include "content.h"
#include "guc.h"
#include "http.h"
#include "redact.h"
#include "sqlcheck.h"
#include "sqltool.h"

PG_FUNCTION_INFO_V1(sql_query);

/* list_tables shows at most this many tables (the character cap too) */
#define QC_LIST_TABLES_MAX	1000
/* statement text kept in an audit row's detail */
#define QC_SQL_AUDIT_CHARS	1000

/* One run of a read-only statement. */
typedef struct SqlRun
{
	const char *func;			/* the tool's name, for the audit row */
	const char *sql;			/* the statement */
	bool		check;			/* a caller's statement: check it first */
	bool		has_param;		/* the statement has $1 (text) */
	const char *param;			/* its value, or NULL for SQL NULL */
	bool		whole;			/* one row, whose first column is the JSON */
	int			max_rows;
	int			max_chars;
	const char *audit_extra;	/* more detail members, or NULL */
	/* the result, in the caller's memory */
	StringInfoData rows;		/* the rows kept, as JSON objects separated by
								 * commas; with whole, the JSON itself */
	int			nrows;
	bool		more_rows;		/* cut at max_rows */
	bool		cut_chars;		/* cut at max_chars */
} SqlRun;

static volatile sig_atomic_t sql_timed_out = false;
static TimeoutId sql_timeout_id = MAX_TIMEOUTS;

/* queryclaw.sql_timeout passed: cancel the query as a cancel request does. */
static void
sql_timeout_handler(void)
{
	sql_timed_out = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

/* Append the rows SPI returned, within the row and character caps. */
static void
collect_rows(SqlRun *run)
{
	SPITupleTable *tt = SPI_tuptable;
	TupleDesc	desc = CreateTupleDescCopy(tt->tupdesc);
	int			chars = 2;

	BlessTupleDesc(desc);
	run->more_rows = SPI_processed > (uint64) run->max_rows;
	for (uint64 i = 0; i < SPI_processed && i < (uint64) run->max_rows; i++)
	{
		char	   *row;
		int			len;

		CHECK_FOR_INTERRUPTS();
		row = text_to_cstring(DatumGetTextPP(
			DirectFunctionCall1(row_to_json,
								heap_copy_tuple_as_datum(tt->vals[i], desc))));
		len = pg_mbstrlen(row) + (run->nrows > 0 ? 2 : 0);
		if (chars + len > run->max_chars)
		{
			run->cut_chars = true;
			run->more_rows = false;
			break;
		}
		chars += len;
		appendStringInfo(&run->rows, "%s%s", run->nrows > 0 ? ", " : "", row);
		run->nrows++;
		pfree(row);
	}
}

/* Inside the read-only subtransaction: prepare, check, run, collect. */
static void
execute(SqlRun *run)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	SPIPlanPtr volatile plan;
	int			rc;

	SPI_connect();
	/*
	 * parsing a caller's statement can run code: see sqlcheck.c; on an
	 * error, sql_run turns the guard off, or it would refuse the session's
	 * later calls
	 */
	if (run->check)
		qc_sql_guard(QC_GUARD_PARSE);
	plan = SPI_prepare(run->sql, run->has_param ? 1 : 0, argtypes);
	qc_sql_guard(QC_GUARD_OFF);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (run->check)
		qc_sql_check_statement(plan);
	values[0] = run->param ? CStringGetTextDatum(run->param) : (Datum) 0;

	sql_timed_out = false;
	enable_timeout_after(sql_timeout_id, qc_sql_timeout);
	/* what it runs may claim to be stable and not be: checked as reached */
	if (run->check)
		qc_sql_guard(QC_GUARD_RUN);
	rc = SPI_execute_plan(plan, values, run->param ? NULL : "n", true,
						  run->whole ? 1 : run->max_rows + 1);
	qc_sql_guard(QC_GUARD_OFF);
	disable_timeout(sql_timeout_id, false);
	if (sql_timed_out)
	{
		/* it fired as the query ended: the result is whole, keep it */
		sql_timed_out = false;
		QueryCancelPending = false;
	}
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan returned %s", SPI_result_code_string(rc));

	if (run->whole)
	{
		char	   *v = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 1) : NULL;

		if (v != NULL)
			appendStringInfoString(&run->rows, v);
		run->nrows = v != NULL ? 1 : 0;
	}
	else
		collect_rows(run);
	SPI_finish();
}

/* The audit row of a run; call->outcome and reason are set. */
static void
audit_run(QcCall *call, SqlRun *run)
{
	StringInfoData extra;
	char	   *statement = qc_redact_statement(run->sql);

	qc_clip_chars(statement, QC_SQL_AUDIT_CHARS);
	initStringInfo(&extra);
	if (run->check)
	{
		appendStringInfoString(&extra, "\"statement\": ");
		escape_json(&extra, statement);
		appendStringInfo(&extra, ", \"rows\": %d", run->nrows);
	}
	else
		appendStringInfo(&extra, "\"rows\": %d", run->nrows);
	if (run->audit_extra)
		appendStringInfo(&extra, ", %s", run->audit_extra);
	call->audit_extra = extra.data;
	call->elapsed_ms = qc_call_elapsed_ms(call);
	qc_call_end(call);
}

/*
 * The error a run ended with, as the caller will see it: a cancel caused
 * by queryclaw.sql_timeout becomes 54000, so that the tool loop hands it
 * to the model (which can try a narrower query) instead of ending.
 */
static const char *
classify_error(ErrorData *edata, bool timed_out)
{
	if (timed_out && edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
	{
		edata->sqlerrcode = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		edata->message = pstrdup("the query ran longer than queryclaw.sql_timeout");
		edata->detail = psprintf("queryclaw.sql_timeout is %d ms; the query was stopped and changed nothing.",
								 qc_sql_timeout);
		edata->hint = pstrdup("Narrow the query: add a WHERE clause or a LIMIT, or aggregate.");
		return QC_OUTCOME_TIMEOUT;
	}
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		return QC_OUTCOME_CANCELLED;
	if (edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		return QC_OUTCOME_REFUSED;
	return QC_OUTCOME_ERROR;
}

/* Run the statement read-only, always rolled back; audits; raises errors. */
static void
sql_run(SqlRun *run)
{
	MemoryContext callercxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		read_only = XactReadOnly;
	QcCall	   *call = qc_call_new(run->func, "SQL", "");
	bool		calls_forbidden;

	/* registered before anything can fail: the error path disables it */
	if (sql_timeout_id == MAX_TIMEOUTS)
		sql_timeout_id = RegisterTimeout(USER_TIMEOUT, sql_timeout_handler);
	initStringInfo(&run->rows);
	BeginInternalSubTransaction(NULL);
	XactReadOnly = true;
	MemoryContextSwitchTo(callercxt);
	/*
	 * a function that claims to be stable may reach ours: no call of this
	 * extension starts until the statement is over (this run's own call
	 * was made above)
	 */
	calls_forbidden = qc_call_forbid(true);
	PG_TRY();
	{
		execute(run);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out = sql_timed_out;

		disable_timeout(sql_timeout_id, false);
		sql_timed_out = false;
		qc_sql_guard(QC_GUARD_OFF);
		qc_call_forbid(calls_forbidden);
		MemoryContextSwitchTo(callercxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		XactReadOnly = read_only;
		MemoryContextSwitchTo(callercxt);
		CurrentResourceOwner = owner;

		call->outcome = classify_error(edata, timed_out);
		call->reason = edata->message;
		audit_run(call, run);
		ReThrowError(edata);
	}
	PG_END_TRY();
	qc_call_forbid(calls_forbidden);
	/* whatever the statement did, it is undone */
	RollbackAndReleaseCurrentSubTransaction();
	XactReadOnly = read_only;
	MemoryContextSwitchTo(callercxt);
	CurrentResourceOwner = owner;

	call->outcome = QC_OUTCOME_OK;
	call->chars = pg_mbstrlen(run->rows.data);
	call->truncated = run->more_rows || run->cut_chars;
	audit_run(call, run);
}

/* {"<key>": [rows], "row_count": n, "truncated": b[, "note": ...]} */
static char *
rows_result(SqlRun *run, const char *key, const char *limit_name)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfo(&s, "{\"%s\": [%s], \"row_count\": %d, \"truncated\": %s",
					 key, run->rows.data, run->nrows,
					 run->more_rows || run->cut_chars ? "true" : "false");
	if (run->more_rows)
		appendStringInfo(&s, ", \"note\": \"only the first %d rows are shown (%s); narrow the query or aggregate\"",
						 run->nrows, limit_name);
	else if (run->cut_chars)
		appendStringInfo(&s, ", \"note\": \"only the first %d rows are shown: more would exceed %d characters; select fewer columns or rows\"",
						 run->nrows, run->max_chars);
	appendStringInfoChar(&s, '}');
	return s.data;
}

static void
run_init(SqlRun *run, const char *func, const char *sql, int max_rows,
		 int max_chars, const char *audit_extra)
{
	memset(run, 0, sizeof(*run));
	run->func = func;
	run->sql = sql;
	run->max_rows = max_rows;
	run->max_chars = max_chars;
	run->audit_extra = audit_extra;
}

/* A relation's kind, as the model is told it. */
#define RELKIND_SQL \
	" CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'" \
	" WHEN 'f' THEN 'foreign table' ELSE 'table' END"
/* The relations the role may read. */
#define READABLE_SQL \
	" c.relkind IN ('r', 'p', 'v', 'm', 'f')" \
	" AND pg_catalog.has_schema_privilege(c.relnamespace, 'USAGE')" \
	" AND (pg_catalog.has_table_privilege(c.oid, 'SELECT')" \
	" OR pg_catalog.has_any_column_privilege(c.oid, 'SELECT'))"

char *
qc_sql_query(const char *sql, int max_chars, const char *audit_extra)
{
	SqlRun		run;

	run_init(&run, "sql_query", sql, qc_sql_max_rows, max_chars, audit_extra);
	run.check = true;
	sql_run(&run);
	return rows_result(&run, "rows", "queryclaw.sql_max_rows");
}

char *
qc_sql_list_tables(const char *schema, int max_chars, const char *audit_extra)
{
	SqlRun		run;

	run_init(&run, "list_tables",
			 "SELECT n.nspname AS schema, c.relname AS name," RELKIND_SQL " AS kind,"
			 " CASE WHEN c.reltuples >= 0 THEN c.reltuples::pg_catalog.int8 END AS estimated_rows,"
			 " pg_catalog.obj_description(c.oid, 'pg_class') AS comment"
			 " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
			 " WHERE" READABLE_SQL " AND NOT c.relispartition"
			 " AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'"
			 " AND ($1 IS NULL OR n.nspname = $1)"
			 " ORDER BY 1, 2",
			 QC_LIST_TABLES_MAX, max_chars, audit_extra);
	run.has_param = true;
	run.param = schema;
	sql_run(&run);
	return rows_result(&run, "tables", "the most list_tables shows");
}

char *
qc_sql_describe_table(const char *table, int max_chars, const char *audit_extra)
{
	SqlRun		run;

	run_init(&run, "describe_table",
			 "SELECT pg_catalog.json_build_object("
			 " 'table', c.oid::pg_catalog.regclass::pg_catalog.text,"
			 " 'kind'," RELKIND_SQL ","
			 " 'comment', pg_catalog.obj_description(c.oid, 'pg_class'),"
			 " 'columns', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object("
			 " 'name', a.attname, 'type', pg_catalog.format_type(a.atttypid, a.atttypmod),"
			 " 'not_null', a.attnotnull, 'comment', pg_catalog.col_description(c.oid, a.attnum))"
			 " ORDER BY a.attnum)"
			 " FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0"
			 " AND NOT a.attisdropped"
			 " AND pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')))"
			 " FROM pg_catalog.pg_class c"
			 " WHERE c.oid = pg_catalog.to_regclass($1) AND" READABLE_SQL,
			 1, max_chars, audit_extra);
	run.has_param = true;
	run.param = table;
	run.whole = true;
	sql_run(&run);
	if (run.nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("no table \"%s\" that the role may read", table),
				 errhint("list_tables shows the tables the role may read; name one as schema.table.")));
	return run.rows.data;
}

/*
 * sql_query(query text) returns jsonb
 *	{rows: [{column: value, ...}], row_count, truncated[, note]}
 */
Datum
sql_query(PG_FUNCTION_ARGS)
{
	char	   *result = qc_sql_query(text_to_cstring(PG_GETARG_TEXT_PP(0)),
									  qc_max_chars, NULL);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(result)));
}
