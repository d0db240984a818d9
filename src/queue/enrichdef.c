/*-------------------------------------------------------------------------
 *
 * enrichdef.c
 *	  An enrichment's request and write-back, kept as parsed at creation:
 *	  the checks of the texts a role gives, and the view and function the
 *	  extension's owner makes of them.
 *
 * create_enrichment and alter_enrichment (SQL, in the update script) keep
 * the definition as given in queryclaw.enrichment_definitions, then call
 * enrichment_define(), which
 *
 * - checks that request is one expression and apply one SET list, by the
 *   raw parser (so neither can carry a second statement into what is built
 *   from it), and which columns apply writes;
 * - as the owner of the extension's tables (the calling role cannot create
 *   objects in schema queryclaw), with the calling role's search_path (its
 *   own schemas, never a temporary one), makes the view
 *   enrichment_<id>_request (the source's key columns, the hash of the
 *   inputs and the request) and enrichment_<id>_inputs (the same without
 *   the request, which the backfill reads without evaluating requests),
 *   and the function enrichment_<id>_apply(result, key, inputs_hash), the
 *   UPDATE of one row applied only while its inputs hash the same.  Names
 *   are resolved then, once, as a view's are; both views run with the
 *   reader's privileges (security_invoker) and the function is SECURITY
 *   INVOKER; then they are given to the enrichment's owner, and nobody
 *   else may use them, so whatever they run, they run as that owner;
 * - finds the inputs: the source's columns the request reads, from the
 *   view's query (a whole-row reference reads them all); a column
 *   apply writes may not be one (the write would make its own row stale);
 * - checks that the request is a call of a request constructor (or a CASE
 *   choosing between such calls and NULL), and turns target into apply:
 *   the function's natural value cast to the column's type.
 *
 * A text that does not parse, names an unknown column or gives a column a
 * value of the wrong type is refused here, when the enrichment is created,
 * never at its first result.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "parser/parser.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cluster.h"
#include "compat.h"
#include "enrichcitus.h"
#include "queue.h"

PG_FUNCTION_INFO_V1(enrichment_define);
PG_FUNCTION_INFO_V1(enrichment_undefine);
PG_FUNCTION_INFO_V1(enrichment_wake);
PG_FUNCTION_INFO_V1(enrichment_me);

/* The request constructors, by the name of the function each stands for. */
typedef enum RequestKind
{
	KIND_WEB_FETCH = 1 << 0,
	KIND_API_CALL = 1 << 1,
	KIND_LLM = 1 << 2,
	KIND_EMBED = 1 << 3
} RequestKind;

static const struct
{
	const char *constructor;
	RequestKind kind;
	const char *sends;			/* the asynchronous function that queues it */
}			constructors[] =
{
	{"web_fetch_request", KIND_WEB_FETCH,
	"queryclaw.web_fetch_async(text,text,integer,regprocedure,jsonb)"},
	{"api_call_request", KIND_API_CALL,
	"queryclaw.api_call_async(text,text,jsonb,text,integer,regprocedure,jsonb,text)"},
	{"llm_request", KIND_LLM,
	"queryclaw.llm_chat_tools_async(text,text[],text,text,integer,jsonb,regprocedure,jsonb)"},
	/* queued by enrichment_embed_async, which needs this of its caller */
	{"llm_embed_request", KIND_EMBED, "queryclaw.llm_embed_request(text,text)"},
};

/*
 * The owner queues the requests of kinds: 42501 now, not at the first
 * row, unless it may run the asynchronous function behind each.
 */
static void
check_may_send(int kinds, Oid owner)
{
	for (int i = 0; i < lengthof(constructors); i++)
	{
		Oid			fn;

		if (!(kinds & constructors[i].kind))
			continue;
		fn = DatumGetObjectId(DirectFunctionCall1(regprocedurein,
												  CStringGetDatum(constructors[i].sends)));
		if (qc_proc_aclcheck(fn, owner, ACL_EXECUTE) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for function %s", constructors[i].sends),
					 errdetail("An enrichment's requests are queued as its owner."),
					 errhint("The function's owner or a superuser can grant EXECUTE on it.")));
	}
}

/* An enrichment's definition as the role gave it. */
typedef struct Definition
{
	int64		id;
	Oid			owner;
	Oid			source;
	char	   *request;
	char	   *apply;			/* NULL when target is given */
	char	   *target;
	List	   *keys;			/* the primary key's column names */
	List	   *inputs;			/* found from the request */
	List	   *writes;			/* the columns apply writes */
	MemoryContext cxt;			/* the caller's, where all of it lives */
} Definition;

static bool
has_name(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/* ---- the texts, as the raw parser reads them ---- */

static Node *
parse_one(const char *sql, const char *what)
{
	List	   *stmts = raw_parser(sql, RAW_PARSE_DEFAULT);

	if (list_length(stmts) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a single %s", what,
						strcmp(what, "apply") == 0 ? "SET list" : "expression")));
	return ((RawStmt *) linitial(stmts))->stmt;
}

/* request: one expression, nothing around it. */
static void
check_request_text(const char *request)
{
	SelectStmt *s = (SelectStmt *) parse_one(psprintf("SELECT %s\n", request), "request");

	if (!IsA(s, SelectStmt) || s->op != SETOP_NONE || list_length(s->targetList) != 1 ||
		s->fromClause != NIL || s->whereClause != NULL || s->groupClause != NIL ||
		s->havingClause != NULL || s->windowClause != NIL || s->sortClause != NIL ||
		s->limitCount != NULL || s->limitOffset != NULL || s->lockingClause != NIL ||
		s->withClause != NULL || s->distinctClause != NIL || s->intoClause != NULL ||
		((ResTarget *) linitial(s->targetList))->name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("request must be a single expression"),
				 errdetail("The request is an expression over the source row's columns, such as queryclaw.web_fetch_request(url)."),
				 errhint("Leave out SELECT, FROM, WHERE and AS: the row is the source table's.")));
}

/* apply: one SET list; the names of the columns it writes. */
static List *
check_apply_text(const char *apply)
{
	UpdateStmt *u = (UpdateStmt *) parse_one(psprintf("UPDATE qc_source SET %s\n", apply), "apply");
	List	   *writes = NIL;
	ListCell   *lc;

	if (!IsA(u, UpdateStmt) || u->whereClause != NULL || u->fromClause != NIL ||
		QC_UPDATE_RETURNING(u) != NULL || u->withClause != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("apply must be a single SET list"),
				 errdetail("apply is what follows SET in an UPDATE of the row, with result in scope."),
				 errhint("For example: city = result #>> '{answer,city}', country = result #>> '{answer,country}'.")));
	foreach(lc, u->targetList)
		writes = lappend(writes, ((ResTarget *) lfirst(lc))->name);
	return writes;
}

/*
 * apply with every reference to result (an unqualified column reference of
 * that one name) written as qualifier.result: in the write-back, result is
 * a column of the rows being written, each row's own, and a column of the
 * source that happens to be called result must neither hide it nor make
 * it ambiguous.  The raw parser gives each reference's place in the text.
 */
typedef struct ResultRefs
{
	List	   *places;			/* byte offsets in the parsed text */
} ResultRefs;

static bool
find_result_refs(Node *node, ResultRefs *refs)
{
	if (node == NULL)
		return false;
	if (IsA(node, ColumnRef))
	{
		ColumnRef  *ref = (ColumnRef *) node;

		if (list_length(ref->fields) == 1 && IsA(linitial(ref->fields), String) &&
			strcmp(strVal(linitial(ref->fields)), "result") == 0 && ref->location >= 0)
			refs->places = lappend_int(refs->places, ref->location);
		return false;
	}
	return raw_expression_tree_walker(node, find_result_refs, refs);
}

static int
compare_places(const ListCell *a, const ListCell *b)
{
	return lfirst_int(a) - lfirst_int(b);
}

static char *
qualify_result(const char *apply, const char *qualifier)
{
	const char *prefix = "UPDATE qc_source SET ";
	char	   *sql = psprintf("%s%s\n", prefix, apply);
	UpdateStmt *u = (UpdateStmt *) parse_one(sql, "apply");
	ResultRefs	refs = {NIL};
	StringInfoData s;
	int			from = strlen(prefix);
	ListCell   *lc;

	(void) find_result_refs((Node *) u->targetList, &refs);
	list_sort(refs.places, compare_places);
	initStringInfo(&s);
	foreach(lc, refs.places)
	{
		appendBinaryStringInfo(&s, sql + from, lfirst_int(lc) - from);
		appendStringInfo(&s, "%s.", qualifier);
		from = lfirst_int(lc);
	}
	appendStringInfoString(&s, sql + from);
	return s.data;
}

/* ---- the source table ---- */

/* The source's primary key columns; 22023 unless it has one. */
static List *
primary_key(Relation rel)
{
	Oid			pk;
	HeapTuple	tuple;
	Form_pg_index index;
	List	   *keys = NIL;

	(void) RelationGetIndexList(rel);
	pk = rel->rd_pkindex;
	if (!OidIsValid(pk))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table %s has no primary key", RelationGetRelationName(rel)),
				 errdetail("An enrichment keeps each row's state by the row's primary key."),
				 errhint("Add one with ALTER TABLE ... ADD PRIMARY KEY.")));
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pk));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for index %u", pk);
	index = (Form_pg_index) GETSTRUCT(tuple);
	for (int i = 0; i < index->indnkeyatts; i++)
		keys = lappend(keys, pstrdup(get_attname(RelationGetRelid(rel),
												 index->indkey.values[i], false)));
	ReleaseSysCache(tuple);
	return keys;
}

/* "a, b, c": names quoted, each prefixed. */
static char *
column_list(List *names, const char *prefix)
{
	StringInfoData s;
	ListCell   *lc;

	initStringInfo(&s);
	foreach(lc, names)
		appendStringInfo(&s, "%s%s%s", s.len > 0 ? ", " : "", prefix,
						 quote_identifier(lfirst(lc)));
	return s.data;
}

/* "qc_key.a AS qc_k1, qc_key.b AS qc_k2", or with as NULL "p.qc_k1, p.qc_k2". */
static char *
key_aliases(List *names, const char *prefix, bool as)
{
	StringInfoData s;
	ListCell   *lc;

	initStringInfo(&s);
	foreach(lc, names)
	{
		if (s.len > 0)
			appendStringInfoString(&s, ", ");
		if (as)
			appendStringInfo(&s, "%s%s AS ", prefix, quote_identifier(lfirst(lc)));
		appendStringInfo(&s, "%sqc_k%d", as ? "" : prefix, foreach_current_index(lc) + 1);
	}
	return s.data;
}

/* ---- what the request reads and calls ---- */

/*
 * The source's columns the request reads (every one for a whole-row
 * reference), in the order of the table, from the view's query: the Vars of
 * the source's range table entry at its own level, sublinks' outer
 * references to it included.
 */
static List *
request_inputs(Query *query, Node *expr, Oid source, MemoryContext cxt)
{
	Relation	rel = table_open(source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	Bitmapset  *read = NULL;
	int			rti = 0;
	ListCell   *lc;
	List	   *inputs = NIL;
	bool		whole = false;

	foreach(lc, query->rtable)
		if (lfirst_node(RangeTblEntry, lc)->rtekind == RTE_RELATION &&
			lfirst_node(RangeTblEntry, lc)->relid == source)
			rti = foreach_current_index(lc) + 1;
	foreach(lc, pull_vars_of_level(expr, 0))
	{
		Var		   *var = lfirst(lc);

		if (!IsA(var, Var) || var->varno != rti)
			continue;
		if (var->varattno == 0)
			whole = true;
		else if (var->varattno > 0)
			read = bms_add_member(read, var->varattno);
	}
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && (whole || bms_is_member(att->attnum, read)))
			inputs = lappend(inputs, MemoryContextStrdup(cxt, NameStr(att->attname)));
	}
	table_close(rel, AccessShareLock);
	return inputs;
}

static bool
is_null_const(Node *node)
{
	return node == NULL || (IsA(node, Const) && ((Const *) node)->constisnull);
}

/*
 * The kinds of request expr can return: a constructor's call, or a CASE
 * between such calls and NULL.  Anything else is refused, so that what the
 * feeder queues is always a request the constructors checked.
 */
static int
request_kinds(Node *expr)
{
	if (IsA(expr, CaseExpr))
	{
		CaseExpr   *c = (CaseExpr *) expr;
		ListCell   *lc;
		int			kinds = is_null_const((Node *) c->defresult) ? 0 :
			request_kinds((Node *) c->defresult);

		foreach(lc, c->args)
		{
			Node	   *result = (Node *) ((CaseWhen *) lfirst(lc))->result;

			if (!is_null_const(result))
				kinds |= request_kinds(result);
		}
		return kinds;
	}
	if (IsA(expr, FuncExpr) &&
		get_func_namespace(((FuncExpr *) expr)->funcid) == get_namespace_oid("queryclaw", false))
	{
		char	   *name = get_func_name(((FuncExpr *) expr)->funcid);

		for (int i = 0; i < lengthof(constructors); i++)
			if (strcmp(name, constructors[i].constructor) == 0)
				return constructors[i].kind;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("request must be a call of a request constructor"),
			 errdetail("The request is queryclaw.web_fetch_request(), api_call_request(), llm_request() or llm_embed_request(), or a CASE choosing between such calls and NULL."),
			 errhint("NULL asks nothing for a row: CASE WHEN url IS NOT NULL THEN queryclaw.web_fetch_request(url) END.")));
	return 0;					/* keep the compiler quiet */
}

static int
view_request(Oid view, Definition *d)
{
	Relation	rel = table_open(view, AccessShareLock);
	Query	   *query = get_view_query(rel);
	TargetEntry *te = linitial_node(TargetEntry, query->targetList);
	int			kinds;

	if (exprType((Node *) te->expr) != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("request must return jsonb, not %s", format_type_be(exprType((Node *) te->expr))),
				 errhint("Use one of the request constructors, such as queryclaw.api_call_request(url).")));
	kinds = request_kinds((Node *) te->expr);
	d->inputs = request_inputs(query, (Node *) te->expr, d->source, d->cxt);
	table_close(rel, AccessShareLock);
	return kinds;
}

/* ---- target: the natural value, cast to the column's type ---- */

static char *
type_name(Oid type)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	char	   *name;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for type %u", type);
	name = pstrdup(NameStr(((Form_pg_type) GETSTRUCT(tuple))->typname));
	ReleaseSysCache(tuple);
	return name;
}

static char *
target_value(Oid source, const char *target, int kinds)
{
	AttrNumber	attnum = get_attnum(source, target);
	Oid			type;
	char		category;
	bool		preferred;
	char	   *typname;

	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", target, get_rel_name(source))));
	type = get_atttype(source, attnum);
	get_type_category_preferred(getBaseType(type), &category, &preferred);
	typname = format_type_be_qualified(type);
	if (kinds == KIND_WEB_FETCH && category == TYPCATEGORY_STRING)
		return psprintf("(result OPERATOR(pg_catalog.->>) 'content')::%s", typname);
	if ((kinds == KIND_API_CALL || kinds == KIND_LLM) &&
		(getBaseType(type) == JSONBOID || getBaseType(type) == JSONOID))
		return psprintf("%s::%s", kinds == KIND_API_CALL ? "result" :
						"(result OPERATOR(pg_catalog.->) 'answer')", typname);
	if (kinds == KIND_API_CALL && category == TYPCATEGORY_STRING)
		return psprintf("result::text::%s", typname);
	if (kinds == KIND_LLM && (category == TYPCATEGORY_STRING || category == TYPCATEGORY_NUMERIC ||
							  category == TYPCATEGORY_BOOLEAN || category == TYPCATEGORY_DATETIME))
		return psprintf("(result OPERATOR(pg_catalog.->>) 'answer')::%s", typname);
	if (kinds == KIND_EMBED && category == TYPCATEGORY_ARRAY &&
		(get_element_type(type) == FLOAT4OID || get_element_type(type) == FLOAT8OID ||
		 get_element_type(type) == NUMERICOID))
		return psprintf("ARRAY(SELECT pg_catalog.jsonb_array_elements_text(result OPERATOR(pg_catalog.->) 'embedding'))::%s",
						typname);
	/* pgvector's types read the JSON array's text as it is */
	if (kinds == KIND_EMBED && category == TYPCATEGORY_USER &&
		(strcmp(type_name(type), "vector") == 0 || strcmp(type_name(type), "halfvec") == 0))
		return psprintf("(result OPERATOR(pg_catalog.->>) 'embedding')::%s", typname);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("column \"%s\" of type %s cannot hold this request's result", target,
					format_type_be(type)),
			 errdetail("%s", (kinds & (kinds - 1)) ? "The request's CASE mixes functions whose results differ; give apply instead of target." :
					   kinds == KIND_WEB_FETCH ? "A web_fetch gives text." :
					   kinds == KIND_API_CALL ? "An api_call gives its result as jsonb (or its text)." :
					   kinds == KIND_LLM ? "A model gives its answer: jsonb with an output_schema, text otherwise." :
					   "An embedding gives real[] or pgvector's vector."),
			 errhint("Give apply to write the column from result yourself.")));
	return NULL;				/* keep the compiler quiet */
}

/* ---- making the objects ---- */

/* The calling role's search_path, made explicit (no temporary schema). */
static char *
caller_search_path(void)
{
	List	   *path = fetch_search_path(false);
	StringInfoData s;
	ListCell   *lc;

	initStringInfo(&s);
	foreach(lc, path)
	{
		Oid			ns = lfirst_oid(lc);

		if (isAnyTempNamespace(ns))
			continue;
		appendStringInfo(&s, "%s%s", s.len > 0 ? ", " : "", quote_identifier(get_namespace_name(ns)));
	}
	return s.len > 0 ? s.data : "pg_catalog";
}

static void
run(const char *sql)
{
	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "could not run: %s", sql);
}

static char *
object_name(const Definition *d, const char *what)
{
	return psprintf("queryclaw.enrichment_" INT64_FORMAT "_%s", d->id, what);
}

/*
 * What is made for the enrichment belongs to its owner, and only the owner
 * may use it: whatever it runs, it runs with the owner's privileges.
 */
static void
give_to_owner(const char *kind, const char *object, const Definition *d)
{
	run(psprintf("ALTER %s %s OWNER TO %s", kind, object,
				 quote_identifier(GetUserNameFromId(d->owner, false))));
	run(psprintf("REVOKE ALL ON %s%s FROM PUBLIC", strcmp(kind, "FUNCTION") == 0 ? "FUNCTION " : "",
				 object));
}

static void
drop_objects(const Definition *d)
{
	/* what is not there yet is no news */
	(void) set_config_option("client_min_messages", "warning", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	run(psprintf("DROP VIEW IF EXISTS %s, %s", object_name(d, "request"), object_name(d, "inputs")));
	run(psprintf("DROP FUNCTION IF EXISTS %s(pg_catalog.jsonb, pg_catalog.jsonb, pg_catalog.text)",
				 object_name(d, "apply")));
	run(psprintf("DROP FUNCTION IF EXISTS %s(pg_catalog.jsonb[], pg_catalog.int8[]), "
				 "%s(pg_catalog.jsonb[], pg_catalog.int8[], pg_catalog.bool)",
				 object_name(d, "apply_request"), object_name(d, "apply_request")));
	run(psprintf("DROP FUNCTION IF EXISTS %s", object_name(d, "write")));	/* enrichcitus.c */
}

/*
 * The request alone first, to find its type, kinds and inputs; then the
 * views with the key and the inputs' hash.
 */
static int
make_views(Definition *d, const char *source)
{
	char	   *request_view = object_name(d, "request");
	char	   *hash;
	int			kinds;
	Oid			view;

	run(psprintf("CREATE VIEW %s AS SELECT (%s\n) AS qc_request FROM %s", object_name(d, "probe"),
				 d->request, source));
	CommandCounterIncrement();
	view = get_relname_relid(psprintf("enrichment_" INT64_FORMAT "_probe", d->id),
							 get_namespace_oid("queryclaw", false));
	kinds = view_request(view, d);
	run(psprintf("DROP VIEW %s", object_name(d, "probe")));

	hash = psprintf("pg_catalog.md5(ROW(%s)::pg_catalog.text) AS qc_inputs_hash",
					column_list(d->inputs, ""));
	run(psprintf("CREATE VIEW %s WITH (security_invoker = true) AS SELECT %s, %s FROM %s",
				 object_name(d, "inputs"), column_list(d->keys, ""), hash, source));
	run(psprintf("CREATE VIEW %s WITH (security_invoker = true) AS SELECT %s, %s, (%s\n) AS qc_request FROM %s",
				 request_view, column_list(d->keys, ""), hash, d->request, source));
	give_to_owner("VIEW", object_name(d, "inputs"), d);
	give_to_owner("VIEW", request_view, d);
	return kinds;
}

/*
 * The write-back of a request runs once a result: as a SQL function its
 * statement would be planned again at every call.  Its twin,
 * enrichment_<id>_apply_request(results, request_ids, planned), is a PL/pgSQL
 * function whose statement is the SQL function's as PostgreSQL itself
 * deparses it with only pg_catalog on the search_path (every other name
 * qualified, as pg_dump writes it), run with that search_path: so it names
 * the very objects the SQL function resolved at creation, and the SQL
 * function's dependencies keep them from being dropped under it; its plan
 * is kept by the worker's session.
 */
static void
make_planned_twin(const Definition *d, const char *fn)
{
	Oid			sql_fn;
	char	   *body;
	char	   *start;
	char	   *end;
	char	   *written;

	CommandCounterIncrement();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	sql_fn = DatumGetObjectId(DirectFunctionCall1(regprocedurein,
												  CStringGetDatum(psprintf("%s(jsonb[],int8[])", fn))));
	body = TextDatumGetCString(DirectFunctionCall1(pg_get_function_sqlbody,
												   ObjectIdGetDatum(sql_fn)));
	start = strstr(body, "BEGIN ATOMIC");
	end = strrchr(body, ';');
	written = strstr(body, " AS qc_written");
	if (start == NULL || end == NULL || written == NULL || written > end)
		elog(ERROR, "unexpected body of %s: %s", fn, body);
	*end = '\0';
	written += strlen(" AS qc_written");
	start += strlen("BEGIN ATOMIC");
	run(psprintf("CREATE FUNCTION %s(results pg_catalog.jsonb[], request_ids pg_catalog.int8[],"
				 " planned pg_catalog.bool) RETURNS pg_catalog.int8 LANGUAGE plpgsql SECURITY INVOKER"
				 " SET search_path = pg_catalog, pg_temp AS %s",
				 fn, quote_literal_cstr(psprintf("#variable_conflict use_column\n"
												 "DECLARE qc_n pg_catalog.int8;\nBEGIN\n%.*s INTO qc_n%s;\n"
												 "RETURN qc_n;\nEND",
												 (int) (written - start), start, written))));
	give_to_owner("FUNCTION", psprintf("%s(pg_catalog.jsonb[], pg_catalog.int8[], pg_catalog.bool)", fn), d);
}

/*
 * The write-back, in two forms, each reading result as a column of
 * qc_pending (qualify_result).  enrichment_<id>_apply_request(results,
 * request_ids): every row waiting for those requests, each with its own
 * request's result, in one statement, each written only while its inputs
 * hash as when it was asked, then marked done (or stale again, when its
 * inputs changed meanwhile); returns the rows written.  Both its reads of
 * enrichment_rows find the rows by the request ids alone, as an array (a
 * request is one enrichment's), so that whatever the planner believes of the
 * enrichment's row count (a handful, for a new one, until ANALYZE), it can
 * only take the requests' index, never walk every row of the enrichment
 * by the primary key.  enrichment_<id>_apply(result, key, inputs_hash): one
 * row, for a kept result and for the rows of a result that apply raised
 * on, which are then tried one by one.  The row is found by its key
 * through jsonb_populate_record, so by the primary key's index.
 */
static void
make_apply(const Definition *d, const char *source)
{
	char	   *fn = object_name(d, "apply");
	char	   *keys = column_list(d->keys, "");
	char	   *hash = psprintf("pg_catalog.md5(ROW(%s)::pg_catalog.text)", column_list(d->inputs, ""));
	char	   *apply = qualify_result(d->apply, "qc_pending");

	run(psprintf("CREATE FUNCTION %s(result pg_catalog.jsonb, key pg_catalog.jsonb, inputs_hash pg_catalog.text)"
				 " RETURNS pg_catalog.int8 LANGUAGE sql SECURITY INVOKER BEGIN ATOMIC"
				 " WITH qc_applied AS (UPDATE %s SET %s\n"
				 " FROM (SELECT $1 AS result) qc_pending"
				 " WHERE (%s) OPERATOR(pg_catalog.=) (SELECT %s FROM pg_catalog.jsonb_populate_record(NULL::%s, $2) qc_key)"
				 " AND %s OPERATOR(pg_catalog.=) $3 RETURNING 1)"
				 " SELECT pg_catalog.count(*) FROM qc_applied; END",
				 fn, source, apply, keys, column_list(d->keys, "qc_key."), source, hash));
	give_to_owner("FUNCTION", psprintf("%s(pg_catalog.jsonb, pg_catalog.jsonb, pg_catalog.text)", fn), d);

	fn = object_name(d, "apply_request");
	run(psprintf("CREATE FUNCTION %s(results pg_catalog.jsonb[], request_ids pg_catalog.int8[])"
				 " RETURNS pg_catalog.int8 LANGUAGE sql SECURITY INVOKER BEGIN ATOMIC"
				 " WITH qc_pending AS (SELECT qc_r.key AS qc_row_key, qc_r.inputs_hash AS qc_row_hash,"
				 "        ($1)[pg_catalog.array_position($2, qc_r.request_id)] AS result, %s"
				 "   FROM queryclaw.enrichment_rows qc_r,"
				 "        pg_catalog.jsonb_populate_record(NULL::%s, qc_r.key) qc_key"
				 "  WHERE qc_r.request_id OPERATOR(pg_catalog.=) ANY ($2)"
				 "    AND qc_r.state OPERATOR(pg_catalog.=) 'running'),"
				 " qc_applied AS (UPDATE %s SET %s\n"
				 "   FROM qc_pending WHERE (%s) OPERATOR(pg_catalog.=) (%s)"
				 "    AND %s OPERATOR(pg_catalog.=) qc_pending.qc_row_hash"
				 "  RETURNING qc_pending.qc_row_key),"
				 " qc_marked AS (UPDATE queryclaw.enrichment_rows qc_r"
				 "   SET state = CASE WHEN qc_r.key IN (SELECT qc_row_key FROM qc_applied) THEN 'done' ELSE 'stale' END,"
				 "       request_id = NULL, error = NULL, sqlstate = NULL,"
				 "       attempts = qc_r.attempts OPERATOR(pg_catalog.+) 1,"
				 "       enriched_at = CASE WHEN qc_r.key IN (SELECT qc_row_key FROM qc_applied)"
				 "                     THEN pg_catalog.now() ELSE qc_r.enriched_at END"
				 "  WHERE qc_r.request_id OPERATOR(pg_catalog.=) ANY ($2)"
				 "    AND qc_r.state OPERATOR(pg_catalog.=) 'running' RETURNING 1)"
				 " SELECT pg_catalog.count(*) AS qc_written FROM qc_applied; END",
				 fn, key_aliases(d->keys, "qc_key.", true), source, source, apply,
				 column_list(d->keys, psprintf("%s.", source)), key_aliases(d->keys, "qc_pending.", false),
				 hash));
	give_to_owner("FUNCTION", psprintf("%s(pg_catalog.jsonb[], pg_catalog.int8[])", fn), d);
	make_planned_twin(d, fn);
}

/* apply must not write an input: its write would make its own row stale. */
static void
check_writes(const Definition *d)
{
	ListCell   *w;

	foreach(w, d->writes)
		if (has_name(d->inputs, lfirst(w)) || has_name(d->keys, lfirst(w)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("enrichment writes column \"%s\", which its request reads", (char *) lfirst(w)),
					 errdetail("A row whose inputs change is asked again: writing an input (or the key) would ask it for ever."),
					 errhint("Write the result into other columns.")));
}

static void
make_objects(Definition *d)
{
	char	   *source = psprintf("%s.%s",
								  quote_identifier(get_namespace_name(get_rel_namespace(d->source))),
								  quote_identifier(get_rel_name(d->source)));
	int			kinds;

	drop_objects(d);
	kinds = make_views(d, source);
	check_may_send(kinds, d->owner);
	if (d->target != NULL)
	{
		d->apply = psprintf("%s = %s", quote_identifier(d->target),
							target_value(d->source, d->target, kinds));
		d->writes = list_make1(d->target);
	}
	check_writes(d);
	make_apply(d, source);
	if (qc_enrich_citus_managed(d->source))
		qc_enrich_citus_make(d->id, d->source, source, d->apply, d->keys, d->inputs, d->owner);
}

/* ---- SQL entry points ---- */

/* The caller's definition row; 42704 unless the caller owns it. */
static Definition *
read_definition(int64 id, MemoryContext cxt)
{
	Oid			type = INT8OID;
	Datum		arg = Int64GetDatum(id);
	Definition *d;
	bool		isnull;
	TupleDesc	desc;
	HeapTuple	row;
	MemoryContext old;

	if (SPI_execute_with_args("SELECT owner::pg_catalog.oid, source::pg_catalog.oid, request, apply, target::text"
							  " FROM queryclaw.enrichment_definitions WHERE id OPERATOR(pg_catalog.=) $1",
							  1, &type, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the enrichment");
	if (SPI_processed != 1 ||
		DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) != GetUserId())
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("enrichment " INT64_FORMAT " does not exist", id)));
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(cxt);
	d = palloc0(sizeof(Definition));
	d->cxt = cxt;
	d->id = id;
	d->owner = GetUserId();
	d->source = DatumGetObjectId(SPI_getbinval(row, desc, 2, &isnull));
	d->request = SPI_getvalue(row, desc, 3);
	d->apply = SPI_getvalue(row, desc, 4);
	d->target = SPI_getvalue(row, desc, 5);
	MemoryContextSwitchTo(old);
	return d;
}

/* enrichment_define(enrichment bigint) returns name[]: the inputs */
Datum
enrichment_define(PG_FUNCTION_ARGS)
{
	Definition *d;
	Relation	rel;
	QcQueueAsOwner save;
	char	   *path = caller_search_path();
	int			nest;
	ArrayBuildState *inputs = initArrayResult(NAMEOID, CurrentMemoryContext, false);
	ListCell   *lc;

	MemoryContext cxt = CurrentMemoryContext;

	qc_queue_require("create_enrichment");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	d = read_definition(PG_GETARG_INT64(0), cxt);
	check_request_text(d->request);
	if (d->apply != NULL)
		d->writes = check_apply_text(d->apply);
	rel = table_open(d->source, AccessShareLock);
	d->keys = primary_key(rel);
	table_close(rel, AccessShareLock);

	qc_queue_begin_as_owner(&save);
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	qc_cluster_ddl_here();
	make_objects(d);
	AtEOXact_GUC(true, nest);
	qc_queue_end_as_owner(&save);
	SPI_finish();

	foreach(lc, d->inputs)
		accumArrayResult(inputs, DirectFunctionCall1(namein, CStringGetDatum(lfirst(lc))),
						 false, NAMEOID, CurrentMemoryContext);
	PG_RETURN_DATUM(makeArrayResult(inputs, CurrentMemoryContext));
}

/* enrichment_undefine(enrichment bigint): drops its view and function */
Datum
enrichment_undefine(PG_FUNCTION_ARGS)
{
	Definition *d;
	QcQueueAsOwner save;
	int			nest;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	d = read_definition(PG_GETARG_INT64(0), CurrentMemoryContext);
	qc_queue_begin_as_owner(&save);
	nest = NewGUCNestLevel();
	qc_cluster_ddl_here();
	drop_objects(d);
	AtEOXact_GUC(true, nest);
	qc_queue_end_as_owner(&save);
	SPI_finish();
	PG_RETURN_VOID();
}

/* enrichment_wake(): the enrichment worker looks for stale rows at commit */
Datum
enrichment_wake(PG_FUNCTION_ARGS)
{
	if (qc_queue_shared() != NULL)
		qc_queue_wake_enrich_worker_at_commit();
	PG_RETURN_VOID();
}

/*
 * enrichment_me() returns oid: the current user, as current_user names it,
 * for the enrichment tables' row-level security (evaluated for every row).
 */
Datum
enrichment_me(PG_FUNCTION_ARGS)
{
	PG_RETURN_OID(GetUserId());
}
