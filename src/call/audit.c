/*-------------------------------------------------------------------------
 *
 * audit.c
 *	  One queryclaw.audit_log row for every attempted call.
 *
 * A call's row is an audit record (QcAuditRecord): secrets removed
 * (redact.c; from the statement text also the values of the secrets its
 * calls send, however it built them) and every text bounded, so that a
 * record fits in a known room.  Where it goes depends on the database:
 *
 * - Durable: with shared_preload_libraries, in the database named by
 *   queryclaw.database, the record goes into the shared-memory queue
 *   (auditq.c) and the audit worker (worker.c) commits it in a transaction
 *   of its own.  The caller's transaction may then abort, a PL/pgSQL block
 *   may catch the error, the statement may be cancelled or the backend
 *   terminated mid-transfer: the row is written all the same.
 * - Transactional: elsewhere (no preload, another database, a hot standby)
 *   the row is inserted through SPI in the caller's transaction, as the
 *   owner of the audit table, and goes with it if that transaction aborts.
 *
 * For the durable case, a call that begins (qc_audit_begin, before any
 * request) reserves room in the queue and stays "pending" until its row is
 * queued: the call holds its reservation (QcCall.audit_pending), and the
 * list of them is there for the ends that no longer reach the call.  A caller never waits for room while calls of its own are in
 * flight (their end is what frees room); a batch defers its next call
 * instead.  Whatever ends it then still queues a row, without ever waiting
 * for room and without catalog access:
 *
 * - its owner (call.c) audits it, once, when it is over (qc_audit_call);
 * - an error during the transfer, a query cancel included:
 *   qc_audit_interrupted, called on the error path of the transport;
 * - an error after the response arrived (say a cancel while HTML is
 *   converted): the transaction or subtransaction abort callback queues the
 *   record qc_audit_response prepared when the response arrived;
 * - termination (pg_terminate_backend, a fast shutdown): FATAL does not
 *   unwind through PG_CATCH, so a before_shmem_exit callback queues it.
 *
 * Bounds (the README documents them): URLs, the query text and the detail
 * JSON at most 4 kB each, the reason 1 kB; a text cut there ends with
 * QC_AUDIT_CUT_MARK, cut on a character boundary.  JSON cannot be cut: a
 * detail too long leaves out the request headers, then what the caller
 * added, and keeps the redirect count.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/ilist.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "audit.h"
#include "auditq.h"
#include "content.h"
#include "guc.h"
#include "redact.h"
#include "serversadmit.h"

/* Longest stored texts, in bytes; longer ones are cut and marked. */
#define QC_AUDIT_MAX_SHORT	64		/* func, method, outcome */
#define QC_AUDIT_MAX_URL	4096
#define QC_AUDIT_MAX_REASON 1024
#define QC_AUDIT_MAX_QUERY	4096
#define QC_AUDIT_MAX_DETAIL 4096
#define QC_AUDIT_CUT_MARK	"...[truncated]"

static const int text_limit[QC_AUDIT_NTEXT] = {
	[QC_AT_ROLE] = NAMEDATALEN,
	[QC_AT_FUNC] = QC_AUDIT_MAX_SHORT,
	[QC_AT_METHOD] = QC_AUDIT_MAX_SHORT,
	[QC_AT_URL] = QC_AUDIT_MAX_URL,
	[QC_AT_FINAL_URL] = QC_AUDIT_MAX_URL,
	[QC_AT_OUTCOME] = QC_AUDIT_MAX_SHORT,
	[QC_AT_REASON] = QC_AUDIT_MAX_REASON,
	[QC_AT_QUERY] = QC_AUDIT_MAX_QUERY,
	[QC_AT_DETAIL] = QC_AUDIT_MAX_DETAIL,	/* see audit_detail */
};

/* The fixed part of an encoded record; the texts follow, NUL-terminated. */
typedef struct EncodedRecord
{
	Oid			dboid;
	Oid			roleid;
	int32		pid;
	int32		status;
	int32		chars;
	TimestampTz at;
	int64		bytes;
	double		elapsed_ms;
	bool		truncated;
	int32		len[QC_AUDIT_NTEXT];	/* -1 for NULL */
} EncodedRecord;

/* The largest encoding, its length word included, fits the reserved room. */
StaticAssertDecl(sizeof(uint32) + sizeof(EncodedRecord) + QC_AUDIT_NTEXT +
				 NAMEDATALEN + 3 * QC_AUDIT_MAX_SHORT + 2 * QC_AUDIT_MAX_URL +
				 QC_AUDIT_MAX_REASON + QC_AUDIT_MAX_QUERY + QC_AUDIT_MAX_DETAIL
				 <= QC_AUDIT_MAX_RECORD,
				 "QC_AUDIT_MAX_RECORD is too small for the text limits");

/* A durable call between qc_audit_begin() and its queued record. */
typedef struct QcAuditPending
{
	dlist_node	node;
	QcCall	   *call;
	Oid			roleid;
	char		role[NAMEDATALEN];	/* looked up while catalogs are safe */
	int			nest_level;		/* of the (sub)transaction it began in; -1
								 * once detached from it */
	StringInfoData fallback;	/* record for an unexpected end, once the
								 * response arrived; data NULL until then */
} PendingCall;

/*
 * In TopMemoryContext; each entry holds one reservation in the queue.  Only
 * the ends of a transaction and of the backend walk it: a call finds its
 * own entry through QcCall.audit_pending.
 */
static dlist_head pending_calls = DLIST_STATIC_INIT(pending_calls);

/*
 * The transactional rows held (qc_audit_hold), encoded, in
 * TopTransactionContext: they outlive the subtransaction that made them,
 * and go with the transaction.
 */
static int	hold_depth = 0;
static List *held_rows = NIL;

#define AUDIT_NARGS 17
#define AUDIT_COLUMNS_0_1 \
	"at, role, pid, func, method, url, final_url, status, outcome, reason, " \
	"bytes, chars, truncated, elapsed_ms, query, detail"
#define AUDIT_COLUMNS AUDIT_COLUMNS_0_1 ", role_id"
#define AUDIT_PARAMS_0_1 \
	"$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16"
#define AUDIT_PARAMS AUDIT_PARAMS_0_1 ", $17"

#define AUDIT_UNNEST(n) "pg_catalog.unnest($" #n ")"
#define AUDIT_UNNESTS_0_1 \
	AUDIT_UNNEST(1) ", " AUDIT_UNNEST(2) ", " AUDIT_UNNEST(3) ", " \
	AUDIT_UNNEST(4) ", " AUDIT_UNNEST(5) ", " AUDIT_UNNEST(6) ", " \
	AUDIT_UNNEST(7) ", " AUDIT_UNNEST(8) ", " AUDIT_UNNEST(9) ", " \
	AUDIT_UNNEST(10) ", " AUDIT_UNNEST(11) ", " AUDIT_UNNEST(12) ", " \
	AUDIT_UNNEST(13) ", " AUDIT_UNNEST(14) ", " AUDIT_UNNEST(15) ", " \
	AUDIT_UNNEST(16)
#define AUDIT_UNNESTS AUDIT_UNNESTS_0_1 ", " AUDIT_UNNEST(17)

#define INSERT_ONE(columns, params) \
	"INSERT INTO queryclaw.audit_log (" columns ") VALUES (" params ")"
#define INSERT_MANY(columns, unnests) \
	"INSERT INTO queryclaw.audit_log (" columns ")" \
	" SELECT " columns " FROM ROWS FROM (" unnests ") AS r(" columns ")"

/*
 * Two statements: one row from one value per column, for a call audited in
 * its caller's transaction, and many rows from one array per column, so that
 * a batch of the audit writer's is one statement, not an executor run per
 * row.  The same values serve both (see qc_audit_insert).
 *
 * Both run under a search_path that others chose (the caller's, or, for
 * the worker, a pinned one as a second fence: bgsession.c), so every name
 * in them is schema-qualified and no value needs a cast.  The arrays are
 * unnested with ROWS FROM and a qualified unnest each, which is what an
 * unnest of many arrays stands for.
 *
 * Each comes in two shapes: release 0.1's table, which has no role_id,
 * until ALTER EXTENSION ... UPDATE adds it (the last parameter is then left
 * out), and the current one (see audit_table_shape).
 */
typedef enum AuditShape
{
	AUDIT_SHAPE_0_1,
	AUDIT_SHAPE_CURRENT,
	AUDIT_NSHAPES
} AuditShape;

static const char *const insert_one_sql[AUDIT_NSHAPES] = {
	INSERT_ONE(AUDIT_COLUMNS_0_1, AUDIT_PARAMS_0_1),
	INSERT_ONE(AUDIT_COLUMNS, AUDIT_PARAMS),
};
static const char *const insert_many_sql[AUDIT_NSHAPES] = {
	INSERT_MANY(AUDIT_COLUMNS_0_1, AUDIT_UNNESTS_0_1),
	INSERT_MANY(AUDIT_COLUMNS, AUDIT_UNNESTS),
};
static const int insert_nargs[AUDIT_NSHAPES] = {AUDIT_NARGS - 1, AUDIT_NARGS};
static SPIPlanPtr insert_one_plan[AUDIT_NSHAPES];
static SPIPlanPtr insert_many_plan[AUDIT_NSHAPES];

/* The type of each column's elements, in the order of the statement */
static const Oid insert_types[AUDIT_NARGS] = {
	TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	INT4OID, TEXTOID, TEXTOID, INT8OID, INT4OID, BOOLOID, FLOAT8OID,
	TEXTOID, JSONBOID, OIDOID
};

/*
 * The outcome of an allowed check_url: "checked"; but "ok" while this
 * database still has release 0.1's audit_log, whose CHECK constraint does
 * not know "checked" (until ALTER EXTENSION queryclaw_ext UPDATE).
 */
static const char *
checked_outcome(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		release_0_1 = false;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("queryclaw_ext"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		version = heap_getattr(tuple, Anum_pg_extension_extversion,
										   RelationGetDescr(rel), &isnull);

		release_0_1 = !isnull && strcmp(TextDatumGetCString(version), "0.1") == 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return release_0_1 ? QC_OUTCOME_OK : QC_OUTCOME_CHECKED;
}

/* s, or a copy cut to at most limit bytes that ends with the mark. */
static const char *
bounded(const char *s, int limit)
{
	int			len;
	int			keep;

	if (s == NULL || (len = strlen(s)) <= limit)
		return s;
	keep = pg_mbcliplen(s, len, limit - (int) strlen(QC_AUDIT_CUT_MARK));
	return psprintf("%.*s%s", keep, s, QC_AUDIT_CUT_MARK);
}

/*
 * detail: the request headers (secrets redacted), the redirect count, the
 * foreign server, and what the caller added (the LLM round, model and
 * tokens).  JSON cannot be
 * cut: when it would be too long, the headers are left out, then the
 * caller's additions.
 */
static char *
audit_detail(const QcCall *call)
{
	StringInfoData headers;
	ListCell   *lc;
	bool		first = true;
	const char *extra = call->audit_extra;
	const char *server = qc_server_audit_name(call);
	char	   *detail;

	/* the foreign server the call was made under (servers.h) */
	if (server != NULL)
	{
		StringInfoData s;

		initStringInfo(&s);
		appendStringInfoString(&s, "\"server\": ");
		escape_json(&s, server);
		if (extra != NULL)
			appendStringInfo(&s, ", %s", extra);
		extra = s.data;
	}
	initStringInfo(&headers);
	appendStringInfoChar(&headers, '{');
	foreach(lc, call->headers)
	{
		QcHeader   *h = lfirst(lc);

		if (!first)
			appendStringInfoString(&headers, ", ");
		first = false;
		escape_json(&headers, h->name);
		appendStringInfoString(&headers, ": ");
		escape_json(&headers, qc_redact_header(h->name, h->value));
	}
	appendStringInfoChar(&headers, '}');

	detail = psprintf("{\"redirects\": %d, \"request_headers\": %s%s%s}", call->redirects,
					  headers.data, extra ? ", " : "", extra ? extra : "");
	if (strlen(detail) > QC_AUDIT_MAX_DETAIL)
		detail = psprintf("{\"redirects\": %d, \"request_headers\": \"omitted: too long\"%s%s}",
						  call->redirects, extra ? ", " : "", extra ? extra : "");
	if (strlen(detail) > QC_AUDIT_MAX_DETAIL)
		detail = psprintf("{\"redirects\": %d, \"request_headers\": \"omitted: too long\"}",
						  call->redirects);
	return detail;
}

/*
 * The parts of a call's record that its end decides: when, the outcome and
 * reason (already redacted), what was returned, and the detail (the caller
 * may add to it up to the end).  Uses no catalog.
 */
static void
audit_record_end(const QcCall *call, const char *outcome, const char *reason,
				 QcAuditRecord *rec)
{
	rec->at = GetCurrentTimestamp();
	rec->status = (int32) call->status;
	rec->chars = call->chars;
	rec->truncated = call->truncated || call->response_cut;
	rec->bytes = (int64) call->response_len;
	rec->elapsed_ms = call->elapsed_ms;
	rec->text[QC_AT_OUTCOME] = bounded(qc_valid_text(outcome), text_limit[QC_AT_OUTCOME]);
	rec->text[QC_AT_REASON] = bounded(qc_valid_text(reason), text_limit[QC_AT_REASON]);
	/* JSON cannot be cut: audit_detail keeps it within its bound itself */
	rec->text[QC_AT_DETAIL] = qc_valid_text(audit_detail(call));
}

/*
 * How much of the statement text is redacted: twice what is kept, so that
 * a secret cut at the bound is still recognised, not a statement of
 * megabytes once for every row of a batch.  0 when none is stored.
 */
static int
statement_length(void)
{
	const char *query = qc_audit_query ? debug_query_string : NULL;
	int			room = 2 * text_limit[QC_AT_QUERY];
	int			len;

	if (query == NULL)
		return 0;
	len = strnlen(query, room + 1);
	return len > room ? pg_mbcliplen(query, len, room) : len;
}

/*
 * The secrets the calls of the statement under way send that its text
 * holds: one statement may build those of many calls (a batch's requests,
 * the rows of a VALUES list), and each call's row carries the whole text.
 * Kept for the last statement (its first len bytes), in TopMemoryContext.
 */
static struct
{
	char	   *sql;
	int			len;
	List	   *secrets;
}			statement_secrets;

/*
 * Note the secrets call sends (none when it is NULL) that the statement
 * text holds (the first len bytes of debug_query_string), with those of
 * the statement's other calls.
 */
static void
note_statement_secrets(const QcCall *call, int len)
{
	const char *sql = debug_query_string;
	List	   *secrets;
	MemoryContext old;
	ListCell   *lc;

	secrets = call ? qc_call_secret_set(call) : NIL;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (statement_secrets.sql == NULL || statement_secrets.len != len ||
		memcmp(statement_secrets.sql, sql, len) != 0)
	{
		/* forget the last one first: an error while copying leaves none */
		if (statement_secrets.sql != NULL)
			pfree(statement_secrets.sql);
		statement_secrets.sql = NULL;
		list_free_deep(statement_secrets.secrets);
		statement_secrets.secrets = NIL;
		statement_secrets.sql = pnstrdup(sql, len);
		statement_secrets.len = len;
	}
	foreach(lc, secrets)
	{
		const char *secret = lfirst(lc);
		ListCell   *known;
		bool		found = false;

		if (memmem(sql, len, secret, strlen(secret)) == NULL)
			continue;
		foreach(known, statement_secrets.secrets)
			found |= strcmp(lfirst(known), secret) == 0;
		if (!found)
			statement_secrets.secrets = lappend(statement_secrets.secrets,
												pstrdup(secret));
	}
	MemoryContextSwitchTo(old);
}

char *
qc_audit_statement(const QcCall *call)
{
	int			len = statement_length();
	char	   *text;

	if (len == 0)
		return NULL;

	/*
	 * Secrets a caller wrote into the statement are never stored either,
	 * nor the values of the secrets its calls send, however it built them.
	 */
	note_statement_secrets(call, len);
	text = qc_redact_statement(qc_redact_secrets(pnstrdup(debug_query_string, len),
												 statement_secrets.secrets));
	return unconstify(char *, bounded(qc_valid_text(text), text_limit[QC_AT_QUERY]));
}

/*
 * The record of a call; reason is already redacted.  Uses no catalog: the
 * role and its name are passed in, so this also serves on the error and exit paths.
 */
static void
audit_record(const QcCall *call, Oid roleid, const char *role, const char *outcome,
			 const char *reason, QcAuditRecord *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->dboid = MyDatabaseId;
	rec->roleid = roleid;
	rec->pid = MyProcPid;
	rec->text[QC_AT_ROLE] = role;
	rec->text[QC_AT_FUNC] = call->func;
	rec->text[QC_AT_METHOD] = call->method;
	rec->text[QC_AT_URL] = qc_redact_url(call->url);
	/* most calls end where they began: that URL is redacted once */
	if (call->final_url != NULL)
		rec->text[QC_AT_FINAL_URL] = strcmp(call->final_url, call->url) == 0 ?
			rec->text[QC_AT_URL] : qc_redact_url(call->final_url);

	/* a queued request's attempt: its enqueuing statement, redacted then */
	if (call->query != NULL)
		rec->text[QC_AT_QUERY] = qc_audit_query ? call->query : NULL;
	else
		rec->text[QC_AT_QUERY] = qc_audit_statement(call);
	/* nothing that is not valid text is stored, whoever built it */
	for (int i = 0; i < QC_AUDIT_NTEXT; i++)
		rec->text[i] = bounded(qc_valid_text(rec->text[i]), text_limit[i]);
	audit_record_end(call, outcome, reason, rec);
}

/*
 * The record of a call that ends now, made from the one prepared when its
 * response arrived (qc_audit_response): only what the end decides is made
 * again.  The texts of rec point into p's fallback.
 */
static void
audit_record_from_fallback(const QcCall *call, const PendingCall *p,
						   const char *outcome, const char *reason,
						   QcAuditRecord *rec)
{
	qc_audit_record_decode(p->fallback.data, rec);
	audit_record_end(call, outcome, reason, rec);
}

void
qc_audit_record_encode(const QcAuditRecord *rec, StringInfo buf)
{
	EncodedRecord head;

	memset(&head, 0, sizeof(head));
	head.dboid = rec->dboid;
	head.roleid = rec->roleid;
	head.pid = rec->pid;
	head.status = rec->status;
	head.chars = rec->chars;
	head.at = rec->at;
	head.bytes = rec->bytes;
	head.elapsed_ms = rec->elapsed_ms;
	head.truncated = rec->truncated;
	for (int i = 0; i < QC_AUDIT_NTEXT; i++)
		head.len[i] = rec->text[i] ? (int32) strlen(rec->text[i]) : -1;
	appendBinaryStringInfo(buf, (char *) &head, sizeof(head));
	for (int i = 0; i < QC_AUDIT_NTEXT; i++)
		if (head.len[i] >= 0)
			appendBinaryStringInfo(buf, rec->text[i], head.len[i] + 1);
	Assert(buf->len + sizeof(uint32) <= QC_AUDIT_MAX_RECORD);
}

/* The texts of rec point into data, which must outlive it. */
void
qc_audit_record_decode(const char *data, QcAuditRecord *rec)
{
	EncodedRecord head;
	const char *p = data + sizeof(head);

	memcpy(&head, data, sizeof(head));
	rec->dboid = head.dboid;
	rec->roleid = head.roleid;
	rec->pid = head.pid;
	rec->status = head.status;
	rec->chars = head.chars;
	rec->at = head.at;
	rec->bytes = head.bytes;
	rec->elapsed_ms = head.elapsed_ms;
	rec->truncated = head.truncated;
	for (int i = 0; i < QC_AUDIT_NTEXT; i++)
	{
		rec->text[i] = head.len[i] >= 0 ? p : NULL;
		if (head.len[i] >= 0)
			p += head.len[i] + 1;
	}
}

/*
 * The shape of this database's audit_log: whether it has role_id yet.  Read
 * at each insert, not once: ALTER EXTENSION ... UPDATE may add it while a
 * session or the audit worker keeps its plans.
 */
static AuditShape
audit_table_shape(void)
{
	Oid			relid = get_relname_relid("audit_log", get_namespace_oid("queryclaw", false));

	return get_attnum(relid, "role_id") == InvalidAttrNumber ?
		AUDIT_SHAPE_0_1 : AUDIT_SHAPE_CURRENT;
}

/* Prepare and keep a statement whose parameters are of the given types. */
static SPIPlanPtr
prepare_kept(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		elog(ERROR, "could not prepare audit insert: %s",
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/* Insert one row from the values of set_row() with n = 1. */
static int
insert_one(AuditShape shape, Datum *values, bool *isnull)
{
	char		nulls[AUDIT_NARGS];

	if (insert_one_plan[shape] == NULL)
		insert_one_plan[shape] = prepare_kept(insert_one_sql[shape], insert_nargs[shape],
											  unconstify(Oid *, &insert_types[0]));
	for (int col = 0; col < AUDIT_NARGS; col++)
		nulls[col] = isnull[col] ? 'n' : ' ';
	return SPI_execute_plan(insert_one_plan[shape], values, nulls, false, 0);
}

/* Insert n rows from the values of set_row(), one array per column. */
static int
insert_many(AuditShape shape, Datum *values, bool *isnull, int n)
{
	/* the storage of each column's elements, looked up with the plan */
	static int16 typlen[AUDIT_NARGS];
	static bool typbyval[AUDIT_NARGS];
	static char typalign[AUDIT_NARGS];
	Datum		arrays[AUDIT_NARGS];
	int			dims[1] = {n};
	int			lbs[1] = {1};

	if (insert_many_plan[shape] == NULL)
	{
		Oid			types[AUDIT_NARGS];

		for (int col = 0; col < AUDIT_NARGS; col++)
		{
			types[col] = get_array_type(insert_types[col]);
			get_typlenbyvalalign(insert_types[col], &typlen[col],
								 &typbyval[col], &typalign[col]);
		}
		insert_many_plan[shape] = prepare_kept(insert_many_sql[shape],
											   insert_nargs[shape], types);
	}
	for (int col = 0; col < insert_nargs[shape]; col++)
		arrays[col] = PointerGetDatum(construct_md_array(&values[col * n],
														 &isnull[col * n],
														 1, dims, lbs,
														 insert_types[col],
														 typlen[col],
														 typbyval[col],
														 typalign[col]));
	return SPI_execute_plan(insert_many_plan[shape], arrays, NULL, false, 0);
}

/* Record rec's values as row i of the n rows in values and nulls. */
static void
set_row(const QcAuditRecord *rec, int i, int n, Datum *values, bool *nulls)
{
	/* where each text goes among the statement's parameters (0-based) */
	static const int text_arg[QC_AUDIT_NTEXT] = {
		[QC_AT_ROLE] = 1,[QC_AT_FUNC] = 3,[QC_AT_METHOD] = 4,[QC_AT_URL] = 5,
		[QC_AT_FINAL_URL] = 6,[QC_AT_OUTCOME] = 8,[QC_AT_REASON] = 9,
		[QC_AT_QUERY] = 14,[QC_AT_DETAIL] = 15
	};

#define CELL(col) ((col) * n + i)
	for (int t = 0; t < QC_AUDIT_NTEXT; t++)
	{
		nulls[CELL(text_arg[t])] = rec->text[t] == NULL;
		if (rec->text[t] == NULL)
			continue;
		if (t == QC_AT_DETAIL)
			values[CELL(text_arg[t])] =
				DirectFunctionCall1(jsonb_in, CStringGetDatum(rec->text[t]));
		else
			values[CELL(text_arg[t])] = CStringGetTextDatum(rec->text[t]);
	}
	values[CELL(0)] = TimestampTzGetDatum(rec->at);
	values[CELL(2)] = Int32GetDatum(rec->pid);
	values[CELL(7)] = Int32GetDatum(rec->status);
	nulls[CELL(7)] = rec->status == 0;
	values[CELL(10)] = Int64GetDatum(rec->bytes);
	values[CELL(11)] = Int32GetDatum(rec->chars);
	nulls[CELL(11)] = rec->chars < 0;
	values[CELL(12)] = BoolGetDatum(rec->truncated);
	values[CELL(13)] = Float8GetDatum(rec->elapsed_ms);
	values[CELL(16)] = ObjectIdGetDatum(rec->roleid);
	nulls[CELL(16)] = !OidIsValid(rec->roleid);
#undef CELL
}

/*
 * Insert the n records recs in one statement (SPI connected).  Their values
 * are laid out column by column, so that with n = 1 they are the one-row
 * statement's parameters as they are.
 */
void
qc_audit_insert(const QcAuditRecord *recs, int n)
{
	Datum	   *values;
	bool	   *isnull;
	AuditShape	shape;
	int			rc;

	if (n <= 0)
		return;
	values = palloc0(sizeof(Datum) * AUDIT_NARGS * n);
	isnull = palloc0(sizeof(bool) * AUDIT_NARGS * n);
	for (int i = 0; i < n; i++)
		set_row(&recs[i], i, n, values, isnull);
	shape = audit_table_shape();
	rc = n == 1 ? insert_one(shape, values, isnull) : insert_many(shape, values, isnull, n);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not write audit rows: %s", SPI_result_code_string(rc));
}

/* The owner of queryclaw.audit_log, as whom callers' rows are inserted. */
Oid
qc_audit_table_owner(void)
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
 * The transactional path.  Ordinary roles have no privilege on the table,
 * so the insert runs as its owner in a security-restricted context for the
 * duration of one statement.
 */
static void
insert_in_caller_transaction(const QcAuditRecord *rec)
{
	Oid			save_userid;
	int			save_sec_context;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(qc_audit_table_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	qc_audit_insert(rec, 1);
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/* The end of the transaction takes what was held with it. */
static void
hold_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT)
	{
		hold_depth = 0;
		held_rows = NIL;
	}
}

void
qc_audit_hold(void)
{
	static bool callback_registered = false;

	if (!callback_registered)
	{
		RegisterXactCallback(hold_xact_callback, NULL);
		callback_registered = true;
	}
	hold_depth++;
}

void
qc_audit_release(bool write)
{
	List	   *rows = held_rows;
	ListCell   *lc;

	if (hold_depth > 0)
		hold_depth--;
	if (hold_depth > 0 || rows == NIL)
		return;
	held_rows = NIL;
	if (!write)
		return;
	foreach(lc, rows)
	{
		QcAuditRecord rec;

		qc_audit_record_decode(lfirst(lc), &rec);
		insert_in_caller_transaction(&rec);
	}
}

/* A row for the caller's transaction: now, or when the hold ends. */
static void
write_or_hold(const QcAuditRecord *rec)
{
	MemoryContext old;
	StringInfoData buf;

	if (hold_depth == 0)
	{
		insert_in_caller_transaction(rec);
		return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	initStringInfo(&buf);
	qc_audit_record_encode(rec, &buf);
	held_rows = lappend(held_rows, buf.data);
	MemoryContextSwitchTo(old);
}

void
qc_audit_queue_full(int waited_ms, const char *setting, const char **message,
					char **detail, const char **hint)
{
	*message = "audit queue is full";
	*detail = psprintf("No room came free in the audit queue (queryclaw.audit_queue_size is %d kB) within %s (%d ms); the request was not sent.",
					   qc_audit_queue_size, setting, waited_ms);
	*hint = "Check that the audit worker is running (queryclaw.audit_status()), or raise queryclaw.audit_queue_size.";
}

/* Queue data as a pending call's record (NULL: give its room back); forget it. */
static void
finish_pending(PendingCall *p, const char *data, int len)
{
	if (data != NULL)
		qc_auditq_push(data, len);
	else
		qc_auditq_release();
	dlist_delete(&p->node);
	if (p->fallback.data)
		pfree(p->fallback.data);
	pfree(p);
}

/* Queue the record of a pending call that ends now. */
static void
finish_pending_with(PendingCall *p, const QcAuditRecord *rec)
{
	StringInfoData buf;

	initStringInfo(&buf);
	qc_audit_record_encode(rec, &buf);
	finish_pending(p, buf.data, buf.len);
	pfree(buf.data);
}

/*
 * Every pending call begun at nest_level or deeper ended without its row
 * (a detached one is not of any).
 * Its QcCall is not touched (after an abort its memory may be gone); such
 * a call is never used again.
 */
static void
flush_pending(int nest_level)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &pending_calls)
	{
		PendingCall *p = dlist_container(PendingCall, node, iter.cur);

		if (p->nest_level >= nest_level)
			finish_pending(p, p->fallback.data, p->fallback.len);
	}
}

/*
 * Any end of the transaction.  After an abort the call's memory may be gone,
 * so the record prepared when the response arrived is used.  (At commit
 * nothing should be pending: every function records its calls.)
 */
static void
audit_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT)
		flush_pending(0);
}

static void
audit_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		flush_pending(GetCurrentTransactionNestLevel());
}

/*
 * The backend is exiting during a call: FATAL (pg_terminate_backend, a fast
 * shutdown) calls proc_exit() without unwinding, so the call's memory is
 * still there and its record is made from it.
 */
static void
audit_exit_callback(int code, Datum arg)
{
	dlist_mutable_iter iter;

	MemoryContextSwitchTo(TopMemoryContext);
	dlist_foreach_modify(iter, &pending_calls)
	{
		PendingCall *p = dlist_container(PendingCall, node, iter.cur);
		QcAuditRecord rec;

		QcCall	   *call = p->call;

		call->elapsed_ms = qc_call_elapsed_ms(call);
		audit_record(call, p->roleid, p->role, QC_OUTCOME_CANCELLED,
					 "the session was terminated during the call", &rec);
		finish_pending_with(p, &rec);
		call->audit_pending = NULL;
	}
}

QcAuditRoom
qc_audit_begin(QcCall *call, bool may_defer)
{
	static bool callbacks_registered = false;
	char	   *role;
	PendingCall *p;
	int			len;

	/* the calls of a batch in flight together are known before one ends */
	if (qc_audit && (len = statement_length()) > 0)
		note_statement_secrets(call, len);
	if (!qc_audit || !qc_auditq_durable())
		return QC_AUDIT_ROOM;
	if (!callbacks_registered)
	{
		RegisterXactCallback(audit_xact_callback, NULL);
		RegisterSubXactCallback(audit_subxact_callback, NULL);
		before_shmem_exit(audit_exit_callback, (Datum) 0);
		callbacks_registered = true;
	}
	role = GetUserNameFromId(GetUserId(), false);

	/* nothing below may fail without giving the room back */
	if (!qc_auditq_reserve(may_defer ? 0 : call->timeout_ms))
		return may_defer ? QC_AUDIT_DEFER : QC_AUDIT_NO_ROOM;
	p = MemoryContextAllocExtended(TopMemoryContext, sizeof(PendingCall),
								   MCXT_ALLOC_ZERO | MCXT_ALLOC_NO_OOM);
	if (p == NULL)
	{
		qc_auditq_release();
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	p->call = call;
	p->roleid = GetUserId();
	strlcpy(p->role, role, NAMEDATALEN);
	p->nest_level = GetCurrentTransactionNestLevel();
	dlist_push_tail(&pending_calls, &p->node);
	call->audit_pending = p;
	return QC_AUDIT_ROOM;
}

void
qc_audit_detach(QcCall *call)
{
	if (call->audit_pending != NULL)
		call->audit_pending->nest_level = -1;
}

void
qc_audit_abandon(QcCall *call)
{
	PendingCall *p = call->audit_pending;

	if (p == NULL)
		return;
	call->audit_pending = NULL;
	call->audited = true;
	finish_pending(p, p->fallback.data, p->fallback.len);
}

void
qc_audit_response(QcCall *call)
{
	PendingCall *p = call->audit_pending;
	QcAuditRecord rec;
	MemoryContext old;

	if (p == NULL)
		return;
	audit_record(call, p->roleid, p->role, QC_OUTCOME_ERROR,
				 "the statement ended before the call's result was recorded", &rec);
	old = MemoryContextSwitchTo(TopMemoryContext);
	initStringInfo(&p->fallback);
	MemoryContextSwitchTo(old);
	qc_audit_record_encode(&rec, &p->fallback);
}

void
qc_audit_interrupted(QcCall *call)
{
	PendingCall *p = call->audit_pending;
	MemoryContext old;
	ErrorData  *edata;
	QcAuditRecord rec;

	if (p == NULL)
		return;					/* not durable */
	/* out of ErrorContext, into the call's own memory */
	old = MemoryContextSwitchTo(GetMemoryChunkContext(call));
	edata = CopyErrorData();
	call->elapsed_ms = qc_call_elapsed_ms(call);
	/* on the transport's error path: a second cancel must not cut it short */
	HOLD_INTERRUPTS();
	audit_record(call, p->roleid, p->role,
				 edata->sqlerrcode == ERRCODE_QUERY_CANCELED ?
				 QC_OUTCOME_CANCELLED : QC_OUTCOME_ERROR,
				 edata->message ? qc_redact_text(edata->message) : NULL, &rec);
	RESUME_INTERRUPTS();
	finish_pending_with(p, &rec);
	call->audit_pending = NULL;
	FreeErrorData(edata);
	MemoryContextSwitchTo(old);
}

void
qc_audit_call(QcCall *call)
{
	PendingCall *p = call->audit_pending;
	const char *outcome = call->outcome;
	const char *reason;
	QcAuditRecord rec;
	StringInfoData buf;

	call->audit_pending = NULL;
	if (p != NULL && (!qc_audit || !qc_auditq_durable()))
		finish_pending(p, NULL, 0); /* audit switched off mid-call */
	if (!qc_audit)
		return;
	reason = call->reason ? qc_redact_text(call->reason) : NULL;
	if (strcmp(outcome, QC_OUTCOME_CHECKED) == 0)
		outcome = checked_outcome();
	if (!qc_auditq_durable())
	{
		audit_record(call, GetUserId(), GetUserNameFromId(GetUserId(), false),
					 outcome, reason, &rec);
		write_or_hold(&rec);
		return;
	}
	if (p != NULL)
	{
		if (p->fallback.data != NULL)
			audit_record_from_fallback(call, p, outcome, reason, &rec);
		else
			audit_record(call, p->roleid, p->role, outcome, reason, &rec);
		finish_pending_with(p, &rec);
		return;
	}
	audit_record(call, GetUserId(), GetUserNameFromId(GetUserId(), false), outcome, reason, &rec);
	/* a call that did not go through the transport */
	initStringInfo(&buf);
	qc_audit_record_encode(&rec, &buf);
	if (!qc_auditq_reserve(call->timeout_ms))
	{
		const char *message;
		char	   *detail;
		const char *hint;

		qc_audit_queue_full(call->timeout_ms, call->timeout_setting,
							&message, &detail, &hint);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg_internal("%s", message),
				 errdetail_internal("%s", detail),
				 errhint("%s", hint)));
	}
	qc_auditq_push(buf.data, buf.len);
}
