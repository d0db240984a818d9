/*-------------------------------------------------------------------------
 *
 * sqlcheck.c
 *	  What a statement given to sql_query() may run: the check of its
 *	  rewritten query tree before it is planned, and the guard while it is
 *	  parsed.
 *
 * The statement must be one SELECT (or WITH ... SELECT, VALUES, TABLE): no
 * other command, no SELECT INTO, no data-modifying WITH, no FOR
 * UPDATE/SHARE.  Every function the planner and the executor may run for
 * it must be immutable or stable (a few volatile functions that change
 * nothing are allowed; a few stable ones that assign a transaction ID are
 * not).  The rewritten tree has views expanded and row security policies
 * added, so their expressions are walked like the statement's own.  Beyond
 * the functions and operators an expression names, these run too, and are
 * checked:
 *
 * - an aggregate's support functions (transition, final, combine,
 *	 serialization, and the moving-aggregate ones), whether it is called
 *	 plainly, as a window function or as an ordered-set aggregate, and its
 *	 sort operator (MIN/MAX by an index): CREATE AGGREGATE marks the
 *	 aggregate itself immutable, whatever those are;
 * - for each type a value of the statement has (columns, results of
 *	 functions, casts, constants, column definition lists): its input,
 *	 output, send, receive, typmod and subscripting functions, its cast to
 *	 json (which row_to_json uses), the operator classes sorting, grouping,
 *	 GREATEST, array and row comparisons use (the default btree and hash
 *	 ones), and the types it is made of: a domain's base type and every
 *	 CHECK constraint's expression, walked as the statement's, an array's
 *	 elements, a row type's columns, a range's subtype and its canonical and
 *	 difference functions;
 * - for each operator (in expressions, ORDER BY, GROUP BY, DISTINCT, set
 *	 operations, row comparisons, window frames): its function, the
 *	 functions and operators of every operator family it belongs to (sort
 *	 comparison, hashing, in_range, index support), and for an operator
 *	 that is not built in, its commutator, negator and selectivity
 *	 estimators, which the planner may use instead;
 * - a TABLESAMPLE method that is not built in.
 *
 * Functions are judged by their volatility alone.  Types and operator
 * families created with the cluster (their OIDs are below
 * FirstNormalObjectId) are trusted, so the walk stops at them; of a
 * built-in operator, only the operator families made since are looked
 * into.  A domain is checked wherever the statement has a value of it,
 * even a column it only reads: casts, jsonb_populate_record and other
 * functions check values they make, and which would cannot be told from
 * the tree.
 *
 * Parsing the statement already runs code: a literal of an array or row
 * type is read by its input function, which checks the CHECK constraints
 * of a domain it is made of, whether the statement names the type or the
 * literal is compared with a column of it.  And a function may claim to be
 * stable and call volatile ones.  So while sql_query parses, plans and runs
 * a caller's statement, a guard refuses the functions the check would
 * refuse as they are reached:
 *
 * - the object access hook, which every expression made ready to run
 *	 (ExecInitExpr: a domain's CHECK, a PL/pgSQL statement, a SQL
 *	 function's body) calls for each function in it, built in or not;
 * - while parsing, also the function hook, for the functions called
 *	 without an expression (a type's input function).  Built-in functions
 *	 are called without it, and so are a foreign table's handler and other
 *	 planner calls, which is why it is off while the statement runs.
 *
 * The guard only adds to the check: a function called in a way neither
 * hook sees runs as its declared volatility says (see docs/security.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_range.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "nodes/nodeFuncs.h"
#include "tcop/cmdtag.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "compat.h"
#include "sqlcheck.h"

/* Volatile functions that change nothing and may be called all the same. */
static const char *const harmless_volatile[] = {
	"random", "random_normal", "clock_timestamp", "timeofday", "gen_random_uuid",
};

/* Stable functions that do change something: they assign a transaction id. */
static const char *const unsafe_stable[] = {
	"txid_current", "pg_current_xact_id",
};

/* What runs the functions being checked, for a refusal's detail. */
typedef enum CheckVia
{
	VIA_STATEMENT,				/* the statement names them */
	VIA_AGGREGATE,
	VIA_DOMAIN,
	VIA_TYPE,
	VIA_OPERATOR,
} CheckVia;

/* One check of a statement. */
typedef struct CheckContext
{
	CheckVia	via;
	Oid			via_oid;		/* the aggregate, domain, type or operator */
	List	   *types;			/* what was checked already */
	List	   *operators;
	List	   *families;
} CheckContext;

/* What an OID column of a catalog row names, to check. */
typedef enum ColumnKind
{
	COL_FUNCTION,
	COL_TYPE,
	COL_OPERATOR,
	COL_OPCLASS,
} ColumnKind;

typedef struct CatalogColumn
{
	AttrNumber	attnum;
	ColumnKind	kind;
} CatalogColumn;

/* An aggregate's support functions, transition types and sort operator */
static const CatalogColumn aggregate_columns[] = {
	{Anum_pg_aggregate_aggtransfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggfinalfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggcombinefn, COL_FUNCTION},
	{Anum_pg_aggregate_aggserialfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggdeserialfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggmtransfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggminvtransfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggmfinalfn, COL_FUNCTION},
	{Anum_pg_aggregate_aggtranstype, COL_TYPE},
	{Anum_pg_aggregate_aggmtranstype, COL_TYPE},
	{Anum_pg_aggregate_aggsortop, COL_OPERATOR},
};

/* A type's functions, and its element type and base type */
static const CatalogColumn type_columns[] = {
	{Anum_pg_type_typinput, COL_FUNCTION},
	{Anum_pg_type_typoutput, COL_FUNCTION},
	{Anum_pg_type_typreceive, COL_FUNCTION},
	{Anum_pg_type_typsend, COL_FUNCTION},
	{Anum_pg_type_typmodin, COL_FUNCTION},
	{Anum_pg_type_typmodout, COL_FUNCTION},
	{Anum_pg_type_typsubscript, COL_FUNCTION},
	{Anum_pg_type_typelem, COL_TYPE},
	{Anum_pg_type_typbasetype, COL_TYPE},
};

/* A range type's functions, and its subtype and the subtype's opclass */
static const CatalogColumn range_columns[] = {
	{Anum_pg_range_rngcanonical, COL_FUNCTION},
	{Anum_pg_range_rngsubdiff, COL_FUNCTION},
	{Anum_pg_range_rngsubtype, COL_TYPE},
	{Anum_pg_range_rngsubopc, COL_OPCLASS},
};

/* An operator's function */
static const CatalogColumn operator_columns[] = {
	{Anum_pg_operator_oprcode, COL_FUNCTION},
};

/*
 * What the planner may use in an operator's place: its selectivity
 * estimators, commutator and negator.
 */
static const CatalogColumn operator_stand_ins[] = {
	{Anum_pg_operator_oprrest, COL_FUNCTION},
	{Anum_pg_operator_oprjoin, COL_FUNCTION},
	{Anum_pg_operator_oprcom, COL_OPERATOR},
	{Anum_pg_operator_oprnegate, COL_OPERATOR},
};

static bool check_walker(Node *node, void *context);
static void check_type(CheckContext *cxt, Oid typid);
static void check_family(CheckContext *cxt, Oid opfamily);
static void check_operator(CheckContext *cxt, Oid opno);

/* sql_query is parsing or running a caller's statement: the hooks refuse */
static QcSqlGuard guard_mode = QC_GUARD_OFF;
static bool guard_installed = false;
static needs_fmgr_hook_type prev_needs_fmgr_hook = NULL;
static fmgr_hook_type prev_fmgr_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

static bool
name_in(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/*
 * A function the statement may not call: its name, else NULL; *why says
 * what it would do.
 */
static char *
forbidden_function(Oid fn, const char **why)
{
	char		vol = func_volatile(fn);
	char	   *name = get_func_name(fn);
	bool		builtin = get_func_namespace(fn) == PG_CATALOG_NAMESPACE;

	if (name == NULL)
		return NULL;
	*why = "is volatile: it may change something";
	if (vol == PROVOLATILE_VOLATILE &&
		!(builtin && name_in(name, harmless_volatile, lengthof(harmless_volatile))))
		return name;
	*why = "assigns a transaction ID";
	if (vol != PROVOLATILE_VOLATILE && builtin &&
		name_in(name, unsafe_stable, lengthof(unsafe_stable)))
		return name;
	return NULL;
}

pg_attribute_noreturn()
static void
refuse(const char *message, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", detail),
			 errhint("sql_query runs one read-only SELECT that calls only immutable or stable functions.")));
}

/* "Aggregate x", "Domain y"...: what runs the function refused. */
static char *
via_name(CheckContext *cxt)
{
	switch (cxt->via)
	{
		case VIA_AGGREGATE:
			return psprintf("Aggregate %s", format_procedure(cxt->via_oid));
		case VIA_DOMAIN:
			return psprintf("Domain %s", format_type_be(cxt->via_oid));
		case VIA_TYPE:
			return psprintf("Type %s", format_type_be(cxt->via_oid));
		case VIA_OPERATOR:
			return psprintf("Operator %s", format_operator(cxt->via_oid));
		case VIA_STATEMENT:
			break;
	}
	return NULL;
}

/*
 * Refuse the statement if it may not call fn (cxt NULL: a guard found it
 * as it was reached, with no via to name).
 */
static void
check_function(CheckContext *cxt, Oid fn)
{
	const char *why;
	char	   *name;
	char	   *via;
	char	   *detail;

	if (!OidIsValid(fn) || (name = forbidden_function(fn, &why)) == NULL)
		return;
	via = cxt ? via_name(cxt) : NULL;
	if (cxt == NULL && guard_mode == QC_GUARD_RUN)
		detail = psprintf("A function the statement calls runs function %s, which %s, so the statement is stopped and changes nothing.",
						  name, why);
	else if (via == NULL)
		detail = psprintf("%s %s, so the statement is not run.", name, why);
	else
		detail = psprintf("%s runs function %s, which %s, so the statement is not run.",
						  via, name, why);
	refuse(psprintf("sql_query cannot call function %s", quote_identifier(name)),
		   detail);
}

static bool
check_function_cb(Oid fn, void *context)
{
	check_function((CheckContext *) context, fn);
	return false;
}

/* Check what runs for an object: set cxt's via, and give back the old. */
static CheckContext
enter(CheckContext *cxt, CheckVia via, Oid oid)
{
	CheckContext saved = *cxt;

	cxt->via = via;
	cxt->via_oid = oid;
	return saved;
}

static void
leave(CheckContext *cxt, CheckContext saved)
{
	cxt->via = saved.via;
	cxt->via_oid = saved.via_oid;
}

/* Has it been checked (then true), or is it built in?  Else note it. */
static bool
seen(List **list, Oid oid)
{
	if (!OidIsValid(oid) || oid < FirstNormalObjectId ||
		list_member_oid(*list, oid))
		return true;
	*list = lappend_oid(*list, oid);
	return false;
}

/* One column of the rows a catalog cache lists for a key. */
static List *
cache_list_oids(int cacheid, Oid key, AttrNumber attnum)
{
	CatCList   *list = SearchSysCacheList1(cacheid, ObjectIdGetDatum(key));
	List	   *oids = NIL;

	for (int i = 0; i < list->n_members; i++)
	{
		bool		isnull;
		Datum		value = SysCacheGetAttr(cacheid, &list->members[i]->tuple,
											attnum, &isnull);

		if (!isnull)
			oids = lappend_oid(oids, DatumGetObjectId(value));
	}
	ReleaseSysCacheList(list);
	return oids;
}

/* Every support function and operator of an operator family. */
static void
check_family(CheckContext *cxt, Oid opfamily)
{
	ListCell   *lc;

	if (seen(&cxt->families, opfamily))
		return;
	foreach(lc, cache_list_oids(AMPROCNUM, opfamily, Anum_pg_amproc_amproc))
		check_function(cxt, lfirst_oid(lc));
	foreach(lc, cache_list_oids(AMOPSTRATEGY, opfamily, Anum_pg_amop_amopopr))
		check_operator(cxt, lfirst_oid(lc));
}

/*
 * Check the functions, types, operators and operator classes that columns
 * of the row a catalog cache has for key name; false when there is none.
 */
static bool
check_row(CheckContext *cxt, int cacheid, Oid key,
		  const CatalogColumn *columns, int ncolumns)
{
	HeapTuple	tup = SearchSysCache1(cacheid, ObjectIdGetDatum(key));
	Oid			oids[16];

	Assert(ncolumns <= lengthof(oids));
	if (!HeapTupleIsValid(tup))
		return false;
	for (int i = 0; i < ncolumns; i++)
	{
		bool		isnull;
		Datum		value = SysCacheGetAttr(cacheid, tup, columns[i].attnum, &isnull);

		oids[i] = isnull ? InvalidOid : DatumGetObjectId(value);
	}
	ReleaseSysCache(tup);

	for (int i = 0; i < ncolumns; i++)
	{
		if (!OidIsValid(oids[i]))
			continue;
		switch (columns[i].kind)
		{
			case COL_FUNCTION:
				check_function(cxt, oids[i]);
				break;
			case COL_TYPE:
				check_type(cxt, oids[i]);
				break;
			case COL_OPERATOR:
				check_operator(cxt, oids[i]);
				break;
			case COL_OPCLASS:
				check_family(cxt, get_opclass_family(oids[i]));
				break;
		}
	}
	return true;
}

/*
 * What may run for an operator: its function, its families' members and,
 * when it is not built in, what the planner may use in its place.
 */
static void
check_operator(CheckContext *cxt, Oid opno)
{
	CheckContext saved;
	ListCell   *lc;

	if (!OidIsValid(opno) || list_member_oid(cxt->operators, opno))
		return;
	cxt->operators = lappend_oid(cxt->operators, opno);
	saved = enter(cxt, VIA_OPERATOR, opno);
	check_row(cxt, OPEROID, opno, operator_columns, lengthof(operator_columns));
	if (opno >= FirstNormalObjectId)
		check_row(cxt, OPEROID, opno, operator_stand_ins,
				  lengthof(operator_stand_ins));
	foreach(lc, cache_list_oids(AMOPOPID, opno, Anum_pg_amop_amopfamily))
		check_family(cxt, lfirst_oid(lc));
	leave(cxt, saved);
}

/* The expressions of a domain's own CHECK constraints. */
static List *
domain_checks(Oid typid)
{
	Relation	rel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *exprs = NIL;

	ScanKeyInit(&key, Anum_pg_constraint_contypid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(typid));
	scan = systable_beginscan(rel, ConstraintTypidIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		bin;

		if (((Form_pg_constraint) GETSTRUCT(tup))->contype != CONSTRAINT_CHECK)
			continue;
		bin = heap_getattr(tup, Anum_pg_constraint_conbin,
						   RelationGetDescr(rel), &isnull);
		if (!isnull)
			exprs = lappend(exprs, stringToNode(TextDatumGetCString(bin)));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return exprs;
}

/* A row type's column types. */
static List *
column_types(Oid typid)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
	List	   *types = NIL;

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			types = lappend_oid(types, TupleDescAttr(desc, i)->atttypid);
	ReleaseTupleDesc(desc);
	return types;
}

/* A domain's constraints, a row type's columns, a range's parts. */
static void
check_type_parts(CheckContext *cxt, Oid typid)
{
	ListCell   *lc;

	switch (get_typtype(typid))
	{
		case TYPTYPE_DOMAIN:
			/* check_type gives its caller's via back */
			enter(cxt, VIA_DOMAIN, typid);
			foreach(lc, domain_checks(typid))
				check_walker(lfirst(lc), cxt);
			break;
		case TYPTYPE_COMPOSITE:
			foreach(lc, column_types(typid))
				check_type(cxt, lfirst_oid(lc));
			break;
		case TYPTYPE_RANGE:
			check_row(cxt, RANGETYPE, typid, range_columns,
					  lengthof(range_columns));
			break;
		case TYPTYPE_MULTIRANGE:
			check_type(cxt, get_multirange_range(typid));
			break;
		default:
			break;
	}
}

/* A type's cast to json or jsonb, which row_to_json and to_json use. */
static void
check_json_casts(CheckContext *cxt, Oid typid)
{
	Oid			targets[] = {JSONOID, JSONBOID};

	for (int i = 0; i < lengthof(targets); i++)
	{
		HeapTuple	tup = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(typid),
										  ObjectIdGetDatum(targets[i]));
		Oid			fn;

		if (!HeapTupleIsValid(tup))
			continue;
		fn = ((Form_pg_cast) GETSTRUCT(tup))->castfunc;
		ReleaseSysCache(tup);
		check_function(cxt, fn);
	}
}

/*
 * The default btree and hash operator classes of a type, which sorting,
 * grouping, hashing, GREATEST and array and row comparisons use.
 */
static void
check_default_opclasses(CheckContext *cxt, Oid typid)
{
	Oid			ams[] = {BTREE_AM_OID, HASH_AM_OID};

	if (get_typtype(typid) == TYPTYPE_PSEUDO)
		return;
	for (int i = 0; i < lengthof(ams); i++)
	{
		Oid			opclass = GetDefaultOpClass(typid, ams[i]);

		if (OidIsValid(opclass))
			check_family(cxt, get_opclass_family(opclass));
	}
}

/* Everything a value of the type may run: see the file's header. */
static void
check_type(CheckContext *cxt, Oid typid)
{
	CheckContext saved;

	if (seen(&cxt->types, typid))
		return;
	saved = enter(cxt, VIA_TYPE, typid);
	if (check_row(cxt, TYPEOID, typid, type_columns, lengthof(type_columns)))
	{
		check_json_casts(cxt, typid);
		check_default_opclasses(cxt, typid);
		check_type_parts(cxt, typid);
	}
	leave(cxt, saved);
}

static void
check_types(CheckContext *cxt, List *types)
{
	ListCell   *lc;

	foreach(lc, types)
		check_type(cxt, lfirst_oid(lc));
}

/* An aggregate's support functions, transition types and sort operator. */
static void
check_aggregate(CheckContext *cxt, Oid aggfnoid)
{
	CheckContext saved = enter(cxt, VIA_AGGREGATE, aggfnoid);

	/* a window function that is not an aggregate has no row */
	check_row(cxt, AGGFNOID, aggfnoid, aggregate_columns,
			  lengthof(aggregate_columns));
	leave(cxt, saved);
}

/*
 * A part of a query that is not an expression (its expressions are walked
 * next): check what it may run, and say whether it was one.
 */
static bool
check_clause(CheckContext *cxt, Node *node)
{
	switch (nodeTag(node))
	{
		case T_SortGroupClause:
			check_operator(cxt, ((SortGroupClause *) node)->sortop);
			check_operator(cxt, ((SortGroupClause *) node)->eqop);
			return true;
		case T_SetOperationStmt:
			check_walker((Node *) ((SetOperationStmt *) node)->groupClauses, cxt);
			return true;
		case T_CTECycleClause:
			check_operator(cxt, ((CTECycleClause *) node)->cycle_mark_neop);
			return true;
		case T_RangeTblFunction:
			check_types(cxt, ((RangeTblFunction *) node)->funccoltypes);
			return true;
		case T_TableFunc:
			check_types(cxt, ((TableFunc *) node)->coltypes);
			return true;
		case T_TableSampleClause:
			/* the built-in methods' handlers are volatile, and harmless */
			if (((TableSampleClause *) node)->tsmhandler >= FirstNormalObjectId)
				check_function(cxt, ((TableSampleClause *) node)->tsmhandler);
			return true;
		case T_List:
		case T_TargetEntry:
		case T_FromExpr:
		case T_JoinExpr:
		case T_RangeTblRef:
		case T_WindowClause:
		case T_CommonTableExpr:
		case T_CTESearchClause:
		case T_WithCheckOption:
		case T_OnConflictExpr:
		case T_MergeAction:
			return true;
		default:
			return false;
	}
}

/* An expression: the functions it names, its type, what it implies. */
static void
check_expression(CheckContext *cxt, Node *node)
{
	ListCell   *lc;

	check_functions_in_node(node, check_function_cb, cxt);
	check_type(cxt, exprType(node));
	switch (nodeTag(node))
	{
		case T_Aggref:
			check_aggregate(cxt, ((Aggref *) node)->aggfnoid);
			break;
		case T_WindowFunc:
			check_aggregate(cxt, ((WindowFunc *) node)->winfnoid);
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			check_operator(cxt, ((OpExpr *) node)->opno);
			break;
		case T_ScalarArrayOpExpr:
			check_operator(cxt, ((ScalarArrayOpExpr *) node)->opno);
			break;
		case T_RowCompareExpr:
			foreach(lc, ((RowCompareExpr *) node)->opnos)
				check_operator(cxt, lfirst_oid(lc));
			foreach(lc, ((RowCompareExpr *) node)->opfamilies)
				check_family(cxt, lfirst_oid(lc));
			break;
		default:
			break;
	}
}

/* Refuse a query that is not a plain SELECT. */
static void
check_query(Query *q)
{
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		refuse("sql_query runs only SELECT statements",
			   "The statement, or a WITH clause in it, would change data or run a command.");
	if (q->rowMarks != NIL)
		refuse("sql_query cannot lock rows",
			   "SELECT ... FOR UPDATE or FOR SHARE takes row locks.");
}

/*
 * Walk a rewritten query: every subquery, CTE, view, policy, expression
 * and clause, and the constraints of the domains they use.
 */
static bool
check_walker(Node *node, void *context)
{
	CheckContext *cxt = (CheckContext *) context;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		check_query((Query *) node);
		return query_tree_walker((Query *) node, check_walker, context,
								 QTW_EXAMINE_SORTGROUP);
	}
	if (!check_clause(cxt, node))
		check_expression(cxt, node);
	return expression_tree_walker(node, check_walker, context);
}

void
qc_sql_check_statement(SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *src;
	CheckContext cxt = {0};
	ListCell   *lc;

	if (list_length(sources) != 1)
		refuse(sources == NIL ? "sql_query needs a statement" :
			   "sql_query runs one statement at a time",
			   psprintf("The text holds %d statements.", list_length(sources)));
	src = linitial(sources);
	if (!IsA(src->raw_parse_tree->stmt, SelectStmt))
		refuse("sql_query runs only SELECT statements",
			   psprintf("The statement is %s.", GetCommandTagName(src->commandTag)));
	if (((SelectStmt *) src->raw_parse_tree->stmt)->intoClause != NULL)
		refuse("sql_query runs only SELECT statements",
			   "SELECT INTO creates a table.");
	foreach(lc, src->query_list)
		check_walker((Node *) lfirst(lc), &cxt);
}

/* While parsing, calls of the functions the check refuses fail. */
static bool
guard_needs_hook(Oid fn)
{
	const char *why;

	if (prev_needs_fmgr_hook && prev_needs_fmgr_hook(fn))
		return true;
	return guard_mode == QC_GUARD_PARSE && forbidden_function(fn, &why) != NULL;
}

static void
guard_hook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *arg)
{
	if (prev_fmgr_hook)
		prev_fmgr_hook(event, flinfo, arg);
	if (event == FHET_START && guard_mode != QC_GUARD_OFF)
		check_function(NULL, flinfo->fn_oid);
}

/*
 * An expression is made ready to run: each function in it is announced
 * here first, built-in ones too (the function hook never sees those).
 */
static void
guard_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_FUNCTION_EXECUTE && guard_mode != QC_GUARD_OFF)
		check_function(NULL, objectId);
}

void
qc_sql_guard(QcSqlGuard mode)
{
	if (!guard_installed)
	{
		prev_needs_fmgr_hook = needs_fmgr_hook;
		needs_fmgr_hook = guard_needs_hook;
		prev_fmgr_hook = fmgr_hook;
		fmgr_hook = guard_hook;
		prev_object_access_hook = object_access_hook;
		object_access_hook = guard_object_access;
		guard_installed = true;
	}
	guard_mode = mode;
}
