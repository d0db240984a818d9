/*-------------------------------------------------------------------------
 *
 * enrichcitus.c
 *	  Enrichments of Citus tables: the write-back Citus can route to a
 *	  row's shard, and the calls that give the workers an enrichment made
 *	  on the coordinator.
 *
 * An enrichment of a distributed table lives on every node, with the same
 * id: the coordinator's definition is the one its owner manages; each
 * worker has a copy (enrichment_citus_accept, in the update script) with
 * its own views and write-back, and keeps the states of the rows of its
 * own shards in its own queryclaw.enrichment_rows.  Citus copies the
 * enrichment's triggers onto every shard, so a row inserted or changed is
 * made stale on its shard's node, whose async workers ask for it and write
 * the result back through Citus (docs/citus.md, "Enrichments").
 *
 * Citus cannot plan a SQL function's statement that has parameters, nor an
 * UPDATE of a distributed table whose WHERE calls a STABLE function on a
 * column (the inputs' hash, md5(ROW(...)::text), is one).  So here the
 * single-row write-back, enrichment_<id>_apply(result, key, inputs_hash),
 * is a PL/pgSQL function: it locks the row by its key while its inputs
 * still hash as when it was asked (SELECT ... FOR UPDATE, which Citus
 * routes to the shard), then runs the UPDATE of enrichment_<id>_write, a
 * SQL function made from apply only to resolve its names at creation (as
 * a view's are): its statement, as PostgreSQL deparses it with every name
 * qualified, is the one the PL/pgSQL function runs.  The row lock keeps a
 * change of the row's inputs from slipping between the check and the
 * write: such a change waits for the write-back's commit, then makes the
 * row stale again.  enrichment_<id>_apply_request writes the rows of
 * requests one by one through it.
 *
 * A reference or Citus local table is enriched on the coordinator alone,
 * from its own copy of the rows (its placement), written back through
 * Citus the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "cluster.h"
#include "enrichcitus.h"

PG_FUNCTION_INFO_V1(enrichment_citus_node);
PG_FUNCTION_INFO_V1(enrichment_citus_run);

/* What a worker's refusal of an enrichment's call means. */
#define QC_ENRICH_CITUS_HINT \
	"Every node must have the extension at the same version and the enrichment's owner with the same privileges; the transaction is rolled back."

bool
qc_enrich_citus_managed(Oid source)
{
	return qc_cluster_table_method(source) != 0;
}

static void
run(const char *sql)
{
	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "could not run: %s", sql);
}

/* Given to the enrichment's owner, and to nobody else. */
static void
to_owner(const char *function, Oid owner)
{
	run(psprintf("ALTER FUNCTION %s OWNER TO %s", function,
				 quote_identifier(GetUserNameFromId(owner, false))));
	run(psprintf("REVOKE ALL ON FUNCTION %s FROM PUBLIC", function));
}

/*
 * The statement of the SQL function queryclaw.<name> as PostgreSQL
 * deparses it with only pg_catalog on the search_path: every other name
 * qualified, so it names the objects the function resolved at creation.
 */
static char *
deparsed_statement(const char *name)
{
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	int			nest = NewGUCNestLevel();
	char	   *body;
	char	   *start;
	char	   *end;

	CommandCounterIncrement();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_execute_with_args("SELECT pg_catalog.pg_get_function_sqlbody(p.oid) FROM pg_catalog.pg_proc p"
							  " WHERE p.proname OPERATOR(pg_catalog.=) $1"
							  " AND p.pronamespace OPERATOR(pg_catalog.=) 'queryclaw'::pg_catalog.regnamespace",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the body of %s", name);
	body = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	AtEOXact_GUC(true, nest);
	start = body == NULL ? NULL : strstr(body, "BEGIN ATOMIC");
	end = body == NULL ? NULL : strrchr(body, ';');
	if (start == NULL || end == NULL || end < start)
		elog(ERROR, "unexpected body of %s: %s", name, body ? body : "NULL");
	*end = '\0';
	return start + strlen("BEGIN ATOMIC");
}

void
qc_enrich_citus_make(int64 id, Oid source, const char *source_name, const char *apply,
					 List *keys, List *inputs, Oid owner)
{
	char	   *write_name = psprintf("enrichment_" INT64_FORMAT "_write", id);
	char	   *apply_fn = psprintf("queryclaw.enrichment_" INT64_FORMAT "_apply", id);
	StringInfoData params,
				match,
				decls,
				hashed,
				body;
	int			i = 0;
	ListCell   *lc;

	initStringInfo(&params);
	initStringInfo(&match);
	initStringInfo(&decls);
	initStringInfo(&hashed);
	foreach(lc, keys)
	{
		const char *key = quote_identifier(lfirst(lc));
		AttrNumber	att = get_attnum(source, lfirst(lc));
		Oid			typid;
		int32		typmod;
		Oid			collation;
		char	   *type;

		get_atttypetypmodcoll(source, att, &typid, &typmod, &collation);
		type = format_type_with_typemod(typid, typmod);
		i++;
		appendStringInfo(&params, ", qc_key_%d %s", i, type);
		appendStringInfo(&match, "%s%s OPERATOR(pg_catalog.=) qc_key_%d", i > 1 ? " AND " : "", key, i);
		appendStringInfo(&decls, "\tqc_key_%d %s := (pg_catalog.jsonb_populate_record(NULL::%s, $2)).%s;\n",
						 i, type, source_name, key);
	}
	foreach(lc, inputs)
		appendStringInfo(&hashed, "%s%s", hashed.len > 0 ? ", " : "", quote_identifier(lfirst(lc)));

	/* apply, its names resolved now, as the UPDATE of one row by its key */
	run(psprintf("CREATE FUNCTION queryclaw.%s(result pg_catalog.jsonb%s) RETURNS void"
				 " LANGUAGE sql SECURITY INVOKER BEGIN ATOMIC UPDATE %s SET %s\n WHERE %s; END",
				 write_name, params.data, source_name, apply, match.data));
	to_owner(psprintf("queryclaw.%s", write_name), owner);

	initStringInfo(&body);
	appendStringInfo(&body,
					 "#variable_conflict use_column\n<<%s>>\nDECLARE\n"
					 "\tresult pg_catalog.jsonb := $1;\n%s\tqc_n pg_catalog.int8;\nBEGIN\n"
					 "\tPERFORM FROM %s WHERE %s AND pg_catalog.md5(ROW(%s)::pg_catalog.text)"
					 " OPERATOR(pg_catalog.=) $3 FOR UPDATE;\n"
					 "\tIF NOT FOUND THEN\n\t\tRETURN 0;\n\tEND IF;\n"
					 "%s;\n\tGET DIAGNOSTICS qc_n = ROW_COUNT;\n\tRETURN qc_n;\nEND",
					 write_name, decls.data, source_name, match.data, hashed.data,
					 deparsed_statement(write_name));
	run(psprintf("DROP FUNCTION %s(pg_catalog.jsonb, pg_catalog.jsonb, pg_catalog.text)", apply_fn));
	run(psprintf("CREATE FUNCTION %s(result pg_catalog.jsonb, key pg_catalog.jsonb, inputs_hash pg_catalog.text)"
				 " RETURNS pg_catalog.int8 LANGUAGE plpgsql SECURITY INVOKER"
				 " SET search_path = pg_catalog, pg_temp AS %s",
				 apply_fn, quote_literal_cstr(body.data)));
	to_owner(psprintf("%s(pg_catalog.jsonb, pg_catalog.jsonb, pg_catalog.text)", apply_fn), owner);

	/* a request's rows, one by one through it */
	run(psprintf("DROP FUNCTION %s_request(pg_catalog.jsonb[], pg_catalog.int8[], pg_catalog.bool)", apply_fn));
	run(psprintf("CREATE FUNCTION %s_request(results pg_catalog.jsonb[], request_ids pg_catalog.int8[],"
				 " planned pg_catalog.bool) RETURNS pg_catalog.int8 LANGUAGE sql SECURITY INVOKER"
				 " SET search_path = pg_catalog, pg_temp"
				 " AS 'SELECT queryclaw.enrichment_citus_apply_request(" INT64_FORMAT ", $1, $2)'",
				 apply_fn, id));
	to_owner(psprintf("%s_request(pg_catalog.jsonb[], pg_catalog.int8[], pg_catalog.bool)", apply_fn), owner);
}

/*
 * enrichment_citus_node(source regclass) returns text: NULL unless source
 * is a distributed table; then 'coordinator' or 'worker', as this node is.
 */
Datum
enrichment_citus_node(PG_FUNCTION_ARGS)
{
	if (qc_cluster_table_method(PG_GETARG_OID(0)) != 'h')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(qc_cluster_is_coordinator() ? "coordinator" : "worker"));
}

/*
 * enrichment_citus_run(plpgsql text, at_commit boolean): run a PL/pgSQL
 * statement on every worker as the calling role, now (the feeder gives the
 * workers an enrichment made on the coordinator once that has committed)
 * or just before this transaction commits (pause, resume, retry, drop).
 */
Datum
enrichment_citus_run(PG_FUNCTION_ARGS)
{
	char	   *plpgsql = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (PG_GETARG_BOOL(1))
		qc_cluster_forward_at_commit(plpgsql, QC_ENRICH_CITUS_HINT);
	else
		qc_cluster_run_on_workers(plpgsql, QC_ENRICH_CITUS_HINT);
	PG_RETURN_VOID();
}
