/*-------------------------------------------------------------------------
 *
 * qinsert.c
 *	  The insert of a queued request: its row in queryclaw.requests, and
 *	  its arguments as given in queryclaw.request_secrets when redacting
 *	  them changed something.
 *
 * An INSERT statement run by SPI for each request started and ended an
 * executor every time: making its projection, opening, locking and
 * closing the table's five indexes and readying their predicates cost as
 * much as the insert itself, and a trigger or an INSERT ... SELECT queues
 * thousands in one statement.  The row is inserted as the executor's own
 * inserts are, by the table access method with the executor's constraint
 * checks and index insertion (ExecSimpleRelationInsert, as logical
 * replication applies a row), and what that needs is kept from one
 * request to the next in the transaction: the table and its indexes open,
 * the partial indexes' predicates and the columns' defaults ready to
 * evaluate.
 *
 * The row is the statement's row: its id the node's base plus the
 * sequence's next value (nextval()'s privilege check included), the
 * columns given, every other column its default evaluated for the row,
 * NOT NULL and CHECK constraints checked; it is written with the current
 * command id, so that the transaction's next statements see it, in the
 * current subtransaction, so that it vanishes if that rolls back.  A
 * read-only or parallel transaction is refused as INSERT is.
 *
 * What the direct insert would pass by sends the row through the
 * statement instead: a trigger, a rule, or row security forced on the
 * table (the extension has none of them; the table's owner may add them).
 * request_secrets is always written by a statement: only redacted
 * requests have a row there, and its foreign key is a trigger's check.
 *
 * What is kept is held by a resource owner of its own under the
 * transaction's, so that the end of a subtransaction does not take it.
 * It is closed at commit and prepare, and before any utility statement
 * (TRUNCATE, ALTER TABLE and DROP refuse a table that this session holds
 * open, and DDL may change what was read from it); at abort it is
 * forgotten, and the release of the transaction's resources closes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"

#include "qinsert.h"
#include "queue.h"

/* The columns an enqueue writes, in the order of the statement's list. */
enum
{
	COL_ID,
	COL_ROLE,
	COL_FUNC,
	COL_REQUEST,
	COL_CALLBACK,
	COL_CONTEXT,
	COL_IDEMPOTENCY_KEY,
	COL_REDACTED,
	COL_QUERY,
	COL_WAITING,
	NUM_COLS
};

static const struct
{
	const char *name;
	Oid			type;
}			columns[NUM_COLS] =
{
	{"id", INT8OID},
	{"role", REGROLEOID},
	{"func", TEXTOID},
	{"request", JSONBOID},
	{"callback", TEXTOID},
	{"context", JSONBOID},
	{"idempotency_key", TEXTOID},
	{"redacted", BOOLOID},
	{"query", TEXTOID},
	{"waiting", TEXTOID},
};

/* queryclaw.requests, kept open for this transaction's inserts. */
typedef struct Target
{
	ResourceOwner owner;		/* holds the relations and their locks */
	EState	   *estate;			/* its memory under TopTransactionContext */
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	Oid			table_owner;
	Oid			sequence;		/* requests_id_seq */
	int			attr[NUM_COLS]; /* each column's index in the slot */
	ExprState **defaults;		/* by attribute; NULL: none, or given */
	bool		busy;			/* an insert is under way */
	SubTransactionId busy_subid;	/* ... in this subtransaction */
} Target;

static Target *target = NULL;

/*
 * The table has what the direct insert would pass by: until the next
 * utility statement, this transaction's rows go through the statement.
 */
static bool by_statement = false;

static ProcessUtility_hook_type prev_utility_hook = NULL;

/* Close the target as a commit would; nothing of it is left. */
static void
close_target(void)
{
	Target	   *t = target;
	ResourceOwner save = CurrentResourceOwner;

	if (t == NULL)
		return;
	target = NULL;
	CurrentResourceOwner = t->owner;
	ExecCloseIndices(t->rri);
	/* the table's lock goes to the transaction, as a statement's does */
	table_close(t->rri->ri_RelationDesc, NoLock);
	CurrentResourceOwner = save;
	ResourceOwnerRelease(t->owner, RESOURCE_RELEASE_BEFORE_LOCKS, true, false);
	ResourceOwnerRelease(t->owner, RESOURCE_RELEASE_LOCKS, true, false);
	ResourceOwnerRelease(t->owner, RESOURCE_RELEASE_AFTER_LOCKS, true, false);
	ResourceOwnerDelete(t->owner);
	FreeExecutorState(t->estate);
	pfree(t);
}

static void
insert_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
		close_target();
	/* the transaction's release closes it: only forget it */
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		target = NULL;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		by_statement = false;
}

/* An insert cut short by an error in this subtransaction is over. */
static void
insert_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && target != NULL && target->busy &&
		target->busy_subid >= mySubid)
		target->busy = false;
}

/*
 * Before a utility statement: close what is kept, unless an insert is
 * under way (then the statement finds the table in use, as it would an
 * INSERT's).
 */
static void
insert_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			   ProcessUtilityContext context, ParamListInfo params,
			   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (target != NULL && !target->busy)
		close_target();
	by_statement = false;
	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
}

void
qc_queue_insert_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = insert_utility;
	RegisterXactCallback(insert_xact_callback, NULL);
	RegisterSubXactCallback(insert_subxact_callback, NULL);
}

/* May the row go in without the statement (see the header)? */
static bool
direct_insert_fits(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->rd_rules != NULL)
		return false;
	if (trig != NULL &&
		(trig->trig_insert_before_row || trig->trig_insert_after_row ||
		 trig->trig_insert_instead_row || trig->trig_insert_before_statement ||
		 trig->trig_insert_after_statement || trig->trig_insert_new_table))
		return false;
	return check_enable_rls(RelationGetRelid(rel), rel->rd_rel->relowner, true) != RLS_ENABLED;
}

/* Where each column the enqueue writes is; 55000 when one is missing. */
static void
find_columns(Target *t, TupleDesc desc)
{
	for (int c = 0; c < NUM_COLS; c++)
	{
		t->attr[c] = -1;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), columns[c].name) == 0 &&
				att->atttypid == columns[c].type)
				t->attr[c] = i;
		}
		if (t->attr[c] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table queryclaw.requests has no column \"%s\" of type %s",
							columns[c].name, format_type_be(columns[c].type)),
					 errhint("The extension's SQL objects are older than its library: run ALTER EXTENSION queryclaw_ext UPDATE.")));
	}
}

/* The defaults of the columns not given, ready to evaluate. */
static void
prepare_defaults(Target *t, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	t->defaults = palloc0(desc->natts * sizeof(ExprState *));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		given = false;
		Node	   *expr;

		for (int c = 0; c < NUM_COLS; c++)
			given |= t->attr[c] == i;
		/* stored generated columns are computed by the insert itself */
		if (given || att->attisdropped || att->attgenerated)
			continue;
		expr = build_column_default(rel, i + 1);
		if (expr != NULL)
			t->defaults[i] = ExecPrepareExpr((Expr *) expr, t->estate);
	}
}

/* Open the table and ready what its inserts need; NULL when it does not fit. */
static Target *
open_target(void)
{
	ResourceOwner save = CurrentResourceOwner;
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	Target	   *t = palloc0(sizeof(Target));
	Relation	rel;
	Oid			nsp = get_namespace_oid("queryclaw", false);

	/*
	 * Under the current owner while it opens, so that an error on the way
	 * (a lock timeout) releases what it opened; then the transaction's.
	 */
	t->owner = ResourceOwnerCreate(CurrentResourceOwner, "queryclaw enqueue");
	CurrentResourceOwner = t->owner;
	t->estate = CreateExecutorState();
	rel = table_open(get_relname_relid("requests", nsp), RowExclusiveLock);
	t->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(t->rri, rel, 0, NULL, 0);
	if (direct_insert_fits(rel))
	{
		ExecOpenIndices(t->rri, false);
		t->table_owner = rel->rd_rel->relowner;
		t->sequence = get_relname_relid("requests_id_seq", nsp);
		if (!OidIsValid(t->sequence))
			elog(ERROR, "sequence queryclaw.requests_id_seq does not exist");
		find_columns(t, RelationGetDescr(rel));
		prepare_defaults(t, rel);
		t->slot = ExecInitExtraTupleSlot(t->estate, CreateTupleDescCopy(RelationGetDescr(rel)),
										 &TTSOpsVirtual);
	}
	CurrentResourceOwner = save;
	ResourceOwnerNewParent(t->owner, TopTransactionResourceOwner);
	MemoryContextSwitchTo(old);
	target = t;
	if (t->slot == NULL)
	{
		close_target();
		by_statement = true;
		return NULL;
	}
	return t;
}

/* The node's base plus the sequence's next value, as the statement adds them. */
static int64
next_id(Oid sequence, int64 base)
{
	int64		id;

	if (pg_add_s64_overflow(base, nextval_internal(sequence, true), &id))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	return id;
}

static void
text_value(const char *text, Datum *value, bool *isnull)
{
	*isnull = text == NULL;
	*value = text == NULL ? (Datum) 0 : CStringGetTextDatum(text);
}

/* The columns of row but the id. */
static void
row_values(const QcRequestRow *row, Datum *values, bool *nulls)
{
	memset(nulls, 0, NUM_COLS * sizeof(bool));
	values[COL_ROLE] = ObjectIdGetDatum(row->role);
	values[COL_FUNC] = CStringGetTextDatum(row->func);
	values[COL_REQUEST] = JsonbPGetDatum(row->request);
	text_value(row->callback, &values[COL_CALLBACK], &nulls[COL_CALLBACK]);
	values[COL_CONTEXT] = PointerGetDatum(row->context);
	nulls[COL_CONTEXT] = row->context == NULL;
	text_value(row->idempotency_key, &values[COL_IDEMPOTENCY_KEY], &nulls[COL_IDEMPOTENCY_KEY]);
	values[COL_REDACTED] = BoolGetDatum(row->given != NULL);
	text_value(row->query, &values[COL_QUERY], &nulls[COL_QUERY]);
	text_value(row->waiting, &values[COL_WAITING], &nulls[COL_WAITING]);
}

static int64
insert_direct(Target *t, const QcRequestRow *row, int64 base)
{
	TupleTableSlot *slot = t->slot;
	ExprContext *econtext = GetPerTupleExprContext(t->estate);
	Datum		values[NUM_COLS];
	bool		nulls[NUM_COLS];
	MemoryContext old;

	PreventCommandIfReadOnly("INSERT");
	PreventCommandIfParallelMode("INSERT");
	row_values(row, values, nulls);
	values[COL_ID] = Int64GetDatum(next_id(t->sequence, base));

	/* the last row's defaults and index tuples go */
	ResetExprContext(econtext);
	ExecClearTuple(slot);
	for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		slot->tts_isnull[i] = true;
		if (t->defaults[i] != NULL)
			slot->tts_values[i] = ExecEvalExprSwitchContext(t->defaults[i], econtext,
															&slot->tts_isnull[i]);
	}
	for (int c = 0; c < NUM_COLS; c++)
	{
		slot->tts_values[t->attr[c]] = values[c];
		slot->tts_isnull[t->attr[c]] = nulls[c];
	}
	ExecStoreVirtualTuple(slot);

	t->busy = true;
	t->busy_subid = GetCurrentSubTransactionId();
	old = MemoryContextSwitchTo(GetPerTupleMemoryContext(t->estate));
	ExecSimpleRelationInsert(t->rri, t->estate, slot);
	MemoryContextSwitchTo(old);
	t->busy = false;
	return DatumGetInt64(values[COL_ID]);
}

/* The same row by the statement; connected to SPI. */
static int64
insert_by_statement(const QcRequestRow *row, int64 base)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[NUM_COLS];
	Datum		values[NUM_COLS];
	bool		nulls[NUM_COLS];
	char		spi_nulls[NUM_COLS];
	bool		isnull;

	for (int c = 0; c < NUM_COLS; c++)
		types[c] = columns[c].type;
	row_values(row, values, nulls);
	/* $1 is the base the sequence's value is added to */
	values[COL_ID] = Int64GetDatum(base);
	nulls[COL_ID] = false;
	for (int c = 0; c < NUM_COLS; c++)
		spi_nulls[c] = nulls[c] ? 'n' : ' ';
	qc_queue_plan(&plan,
				  "INSERT INTO queryclaw.requests"
				  " (id, role, func, request, callback, context, idempotency_key, redacted, query,"
				  " waiting) OVERRIDING SYSTEM VALUE"
				  " VALUES ($1 OPERATOR(pg_catalog.+)"
				  " pg_catalog.nextval('queryclaw.requests_id_seq'::pg_catalog.regclass),"
				  " $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id", NUM_COLS, types);
	if (SPI_execute_plan(plan, values, spi_nulls, false, 1) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not insert a request");
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* The arguments as given, under the request's id; connected to SPI. */
static void
insert_secrets(int64 id, Jsonb *given)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8OID, JSONBOID};
	Datum		values[2] = {Int64GetDatum(id), JsonbPGetDatum(given)};

	qc_queue_plan(&plan, "INSERT INTO queryclaw.request_secrets (id, request) VALUES ($1, $2)",
				  2, types);
	if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert a request");
}

int64
qc_queue_insert(const QcRequestRow *row)
{
	int64		base = qc_queue_id_base();
	Target	   *t = target;
	Oid			save_user;
	int			save_sec;
	int64		id = 0;

	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(t != NULL ? t->table_owner : qc_queue_table_owner(),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	qc_queue_admit(row->role);
	/* opened as the owner: planning a default may run its functions */
	if (t == NULL && !by_statement)
		t = open_target();
	if (t != NULL && !t->busy)
		id = insert_direct(t, row, base);
	else
		t = NULL;
	if (t == NULL || row->given != NULL)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (t == NULL)
			id = insert_by_statement(row, base);
		if (row->given != NULL)
			insert_secrets(id, row->given);
		SPI_finish();
	}
	SetUserIdAndSecContext(save_user, save_sec);
	return id;
}
