/*-------------------------------------------------------------------------
 *
 * clustergrant.c
 *	  GRANT and REVOKE on the extension's objects, given on a Citus
 *	  coordinator, made on every worker too: what took effect on the
 *	  coordinator, as the role that ran it, on the objects it named there.
 *
 * Citus sends the DDL of the objects it distributes to every node, but an
 * extension's members are not among them (Citus refuses to distribute
 * them, the extension being created on every node), so a role granted
 * EXECUTE on api_call on the coordinator would be refused by every worker
 * a query is pushed down to.  Citus does send GRANTs on the extension's
 * schema (a distributed object), on the foreign-data wrapper queryclaw (a
 * distributed extension's) and on foreign servers: those are left to it,
 * and this file sends those on the extension's routines, tables, views and
 * sequences.
 *
 * The ProcessUtility hook works out, before the statement runs, what it
 * will change on each object, as PostgreSQL does: the privileges named
 * that the current role may grant or revoke there, by its grant options
 * (select_best_grantor()).  An object where that is nothing (the
 * statement's WARNING "no privileges were granted") is left out, and a
 * statement that changes nothing is not sent at all.  Once the statement
 * has run here, it keeps a statement of its own: the objects by their
 * qualified names, as the coordinator resolved them (the workers'
 * search_path plays no part), the privileges that took effect, the
 * grantees by name, and the role that ran it, GetUserId(): inside a
 * SECURITY DEFINER function, a materialized view's query or SET ROLE that
 * is the function's owner, the view's owner, the role set, never the role
 * that commits.
 *
 * Just before the transaction commits (or is prepared), each kept
 * statement is run on every worker by run_command_on_workers as DO 'BEGIN
 * SET LOCAL ROLE r; GRANT ...; END', so that the worker grants as r, with
 * r's grant options there.  One statement, since run_command_on_workers
 * reports the first result of a string of them, which would be the SET's
 * even where the GRANT failed.  Citus connects as the current role: that
 * is made the session's (the role that logged in) when it may become r,
 * else r.  An error on a worker aborts the commit: a GRANT rolled back (or
 * in a subtransaction rolled back) is sent nowhere, and one that failed on
 * a worker is not kept on the coordinator either.  (Each worker commits on
 * its own: a coordinator that failed after them would leave the workers
 * granted.)  A statement naming this extension's objects and others is
 * refused, the others possibly missing on the workers, and so are column
 * privileges on the extension's tables, which are not sent.
 *
 * The same forwarding runs other statements of the extension's on every
 * worker, as the current role: qc_cluster_forward_at_commit keeps one for
 * the commit, as a GRANT's, and qc_cluster_run_on_workers runs one at once
 * (the enrichments of distributed tables, enrichcitus.c).
 *
 * A node added later copies the privileges from the coordinator as it
 * joins (clusterjoin.c).  So that a GRANT is not missed by both, as Citus
 * does for the DDL it sends, a statement to forward takes pg_dist_node in
 * ROW SHARE mode, which a node's activation takes exclusively: the node is
 * added before the statement runs (and is sent it at commit), or after
 * the transaction commits (and copies it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "cluster.h"
#include "compat.h"

#define QC_EXTENSION_NAME "queryclaw_ext"

static ProcessUtility_hook_type prev_utility_hook = NULL;

/*
 * A statement to run on every worker at commit, in TopTransactionContext,
 * with the transaction nesting level that ran it (a subtransaction rolled
 * back takes its own with it).
 */
typedef struct ForwardedGrant
{
	Oid			role;			/* the role that ran it */
	char	   *role_name;		/* its name then, quoted */
	char	   *sql;			/* the statement, names qualified */
	const char *hint;			/* what a refusal on a worker means */
	int			nest_level;
} ForwardedGrant;
static List *to_forward = NIL;

/* The privileges a forwarded statement may name, and their keywords. */
static const struct
{
	const char *name;
	AclMode		mode;
}			privilege_names[] =
{
	{"SELECT", ACL_SELECT},
	{"INSERT", ACL_INSERT},
	{"UPDATE", ACL_UPDATE},
	{"DELETE", ACL_DELETE},
	{"TRUNCATE", ACL_TRUNCATE},
	{"REFERENCES", ACL_REFERENCES},
	{"TRIGGER", ACL_TRIGGER},
#ifdef ACL_MAINTAIN
	{"MAINTAIN", ACL_MAINTAIN},
#endif
	{"EXECUTE", ACL_EXECUTE},
	{"USAGE", ACL_USAGE},
};

/*
 * The statements to send for one GRANT or REVOKE: the objects whose
 * change is the same, grouped.
 */
typedef struct GrantGroup
{
	const char *kind;			/* ROUTINE, TABLE or SEQUENCE */
	AclMode		privileges;
	StringInfoData objects;		/* their qualified names, comma-separated */
} GrantGroup;

/* Is the object (classid, objid) a member of this extension? */
static bool
ours(Oid classid, Oid objid, Oid extension)
{
	return OidIsValid(objid) && getExtensionOfObject(classid, objid) == extension;
}

/* The extension's schema (pg_extension.extnamespace). */
static Oid
extension_schema(Oid extension)
{
	Oid			types[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(extension)};
	bool		isnull = true;
	Oid			found = InvalidOid;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT extnamespace FROM pg_catalog.pg_extension"
							  " WHERE oid OPERATOR(pg_catalog.=) $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_extension");
	if (SPI_processed == 1)
		found = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	SPI_finish();
	return isnull ? InvalidOid : found;
}

/*
 * The extension's members in schema nsp that GRANT ... ON ALL <objtype>S
 * IN SCHEMA names (the kinds of routine or relation PostgreSQL takes for
 * it), appended to targets as (classid, objid) pairs.
 */
static List *
members_in_schema(ObjectType objtype, Oid nsp, Oid extension, List *targets)
{
	bool		routines = objtype != OBJECT_TABLE && objtype != OBJECT_SEQUENCE;
	Oid			types[3] = {OIDOID, OIDOID, TEXTOID};
	Datum		args[3];
	const char *kinds;

	if (routines)
		kinds = objtype == OBJECT_FUNCTION ? "faw" : objtype == OBJECT_PROCEDURE ? "p" : "fawp";
	else
		kinds = objtype == OBJECT_TABLE ? "rvmfp" : "S";
	args[0] = ObjectIdGetDatum(extension);
	args[1] = ObjectIdGetDatum(nsp);
	args[2] = CStringGetTextDatum(kinds);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(routines ?
							  "SELECT o.oid FROM pg_catalog.pg_depend d"
							  " JOIN pg_catalog.pg_proc o ON o.oid OPERATOR(pg_catalog.=) d.objid"
							  " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass"
							  " AND o.pronamespace OPERATOR(pg_catalog.=) $2"
							  " AND pg_catalog.strpos($3, o.prokind::pg_catalog.text) OPERATOR(pg_catalog.>) 0"
							  " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass"
							  " AND d.refobjid OPERATOR(pg_catalog.=) $1 AND d.deptype OPERATOR(pg_catalog.=) 'e'" :
							  "SELECT o.oid FROM pg_catalog.pg_depend d"
							  " JOIN pg_catalog.pg_class o ON o.oid OPERATOR(pg_catalog.=) d.objid"
							  " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
							  " AND o.relnamespace OPERATOR(pg_catalog.=) $2"
							  " AND pg_catalog.strpos($3, o.relkind::pg_catalog.text) OPERATOR(pg_catalog.>) 0"
							  " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass"
							  " AND d.refobjid OPERATOR(pg_catalog.=) $1 AND d.deptype OPERATOR(pg_catalog.=) 'e'",
							  3, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the extension's members");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			oid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														 SPI_tuptable->tupdesc, 1, &isnull));

		targets = lappend_oid(targets, routines ? ProcedureRelationId : RelationRelationId);
		targets = lappend_oid(targets, oid);
	}
	SPI_finish();
	return targets;
}

/*
 * The extension's objects the statement names, as (classid, objid) pairs
 * resolved as PostgreSQL resolves them here (search_path, argument
 * types); *named: how many names it gives, *ours: how many are the
 * extension's.  Objects that do not exist count as not ours (the
 * statement then fails on its own).
 */
static List *
grant_targets(GrantStmt *stmt, Oid extension, int *named, int *ours_count)
{
	bool		routines = stmt->objtype == OBJECT_FUNCTION ||
		stmt->objtype == OBJECT_PROCEDURE || stmt->objtype == OBJECT_ROUTINE;
	bool		relations = stmt->objtype == OBJECT_TABLE || stmt->objtype == OBJECT_SEQUENCE;
	Oid			schema = InvalidOid;
	List	   *targets = NIL;
	ListCell   *lc;

	*named = list_length(stmt->objects);
	*ours_count = 0;
	if (!routines && !relations)
		return NIL;
	if (stmt->targtype == ACL_TARGET_ALL_IN_SCHEMA)
		schema = extension_schema(extension);
	foreach(lc, stmt->objects)
	{
		Node	   *obj = lfirst(lc);
		Oid			classid = routines ? ProcedureRelationId : RelationRelationId;
		Oid			objid;

		if (stmt->targtype == ACL_TARGET_ALL_IN_SCHEMA)
		{
			if (get_namespace_oid(strVal(obj), true) != schema || !OidIsValid(schema))
				continue;
			(*ours_count)++;
			targets = members_in_schema(stmt->objtype, schema, extension, targets);
			continue;
		}
		if (routines)
			objid = LookupFuncWithArgs(stmt->objtype, (ObjectWithArgs *) obj, true);
		else
			objid = RangeVarGetRelid((RangeVar *) obj, NoLock, true);
		if (!ours(classid, objid, extension))
			continue;
		(*ours_count)++;
		targets = lappend_oid(targets, classid);
		targets = lappend_oid(targets, objid);
	}
	return targets;
}

/*
 * The privileges the statement names (all for ALL PRIVILEGES); false for
 * a name none of the extension's objects takes (PostgreSQL then refuses
 * the statement).  Raises for column privileges, which are not sent.
 */
static bool
named_privileges(GrantStmt *stmt, AclMode *mode)
{
	ListCell   *lc;

	*mode = ACL_NO_RIGHTS;
	if (stmt->privileges == NIL)
	{
		for (int i = 0; i < lengthof(privilege_names); i++)
			*mode |= privilege_names[i].mode;
		return true;
	}
	foreach(lc, stmt->privileges)
	{
		AccessPriv *priv = lfirst(lc);
		bool		known = false;

		if (priv->cols != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot %s column privileges on tables of extension \"%s\" on a Citus coordinator",
							stmt->is_grant ? "GRANT" : "REVOKE", QC_EXTENSION_NAME),
					 errdetail("Privileges on the extension's objects given on the coordinator are given on every worker too, and column privileges are not."),
					 errhint("Grant on the whole table, or on a view of its columns.")));
		for (int i = 0; i < lengthof(privilege_names) && priv->priv_name; i++)
			if (pg_strcasecmp(priv->priv_name, privilege_names[i].name) == 0)
			{
				*mode |= privilege_names[i].mode;
				known = true;
			}
		if (!known)
			return false;
	}
	return true;
}

/*
 * What the statement changes on the object (classid, objid), as
 * PostgreSQL works it out when it runs: the privileges named that apply
 * to the object and that the current role holds the grant option of
 * there, through the grantor select_best_grantor() picks; nothing where
 * the statement warns that no privileges were granted (or revoked).
 * *kind: the object's keyword in a GRANT, *name: its qualified name.
 */
static AclMode
effective_privileges(Oid classid, Oid objid, AclMode named, const char **kind, char **name)
{
	HeapTuple	tuple;
	Datum		datum;
	bool		isnull;
	Oid			owner;
	ObjectType	objtype = OBJECT_FUNCTION;
	AclMode		applies = ACL_ALL_RIGHTS_FUNCTION;
	Acl		   *acl;
	Oid			grantor;
	AclMode		options;

	*kind = "ROUTINE";
	tuple = SearchSysCache1(classid == ProcedureRelationId ? PROCOID : RELOID,
							ObjectIdGetDatum(objid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for object %u of catalog %u", objid, classid);
	if (classid == ProcedureRelationId)
	{
		owner = ((Form_pg_proc) GETSTRUCT(tuple))->proowner;
		datum = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_proacl, &isnull);
		*name = format_procedure_qualified(objid);
	}
	else
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);
		bool		sequence = form->relkind == RELKIND_SEQUENCE;

		owner = form->relowner;
		datum = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relacl, &isnull);
		objtype = sequence ? OBJECT_SEQUENCE : OBJECT_TABLE;
		applies = sequence ? ACL_ALL_RIGHTS_SEQUENCE : ACL_ALL_RIGHTS_RELATION;
		*kind = sequence ? "SEQUENCE" : "TABLE";
		*name = quote_qualified_identifier(get_namespace_name(form->relnamespace),
										   NameStr(form->relname));
	}
	acl = isnull ? acldefault(objtype, owner) : DatumGetAclPCopy(datum);
	ReleaseSysCache(tuple);
	select_best_grantor(GetUserId(), named & applies, acl, owner, &grantor, &options);
	return named & applies & ACL_OPTION_TO_PRIVS(options);
}

/*
 * The role named by spec, quoted, as it is now (CURRENT_USER and the
 * like resolved here); NULL for one that does not exist (the statement
 * then fails on its own).
 */
static char *
role_name(RoleSpec *spec)
{
	Oid			role;

	if (spec->roletype == ROLESPEC_PUBLIC)
		return pstrdup("PUBLIC");
	role = get_rolespec_oid(spec, true);
	return OidIsValid(role) ? pstrdup(quote_identifier(GetUserNameFromId(role, false))) : NULL;
}

/*
 * The statement's text for the objects of group g: a GRANT or REVOKE of
 * g's privileges alone, with the statement's grantees, options and
 * grantor; NULL if a role it names does not exist.
 */
static char *
deparse(GrantStmt *stmt, GrantGroup *g)
{
	StringInfoData s;
	const char *sep = "";
	ListCell   *lc;

	initStringInfo(&s);
	appendStringInfoString(&s, stmt->is_grant ? "GRANT " : "REVOKE ");
	if (!stmt->is_grant && stmt->grant_option)
		appendStringInfoString(&s, "GRANT OPTION FOR ");
	for (int i = 0; i < lengthof(privilege_names); i++)
		if (g->privileges & privilege_names[i].mode)
		{
			appendStringInfo(&s, "%s%s", sep, privilege_names[i].name);
			sep = ", ";
		}
	appendStringInfo(&s, " ON %s %s %s ", g->kind, g->objects.data,
					 stmt->is_grant ? "TO" : "FROM");
	sep = "";
	foreach(lc, stmt->grantees)
	{
		char	   *grantee = role_name(lfirst(lc));

		if (grantee == NULL)
			return NULL;
		appendStringInfo(&s, "%s%s", sep, grantee);
		sep = ", ";
	}
	if (stmt->is_grant && stmt->grant_option)
		appendStringInfoString(&s, " WITH GRANT OPTION");
	if (stmt->grantor)
	{
		char	   *grantor = role_name(stmt->grantor);

		if (grantor == NULL)
			return NULL;
		appendStringInfo(&s, " GRANTED BY %s", grantor);
	}
	if (!stmt->is_grant && stmt->behavior == DROP_CASCADE)
		appendStringInfoString(&s, " CASCADE");
	return s.data;
}

/*
 * The objects of targets that the statement changes, grouped by kind and
 * change (a GRANT the grantor may give on some objects only is sent for
 * those), as statements to send.
 */
static List *
deparse_groups(GrantStmt *stmt, List *targets, AclMode named)
{
	List	   *groups = NIL;
	List	   *statements = NIL;
	ListCell   *lc;

	for (int i = 0; i + 1 < list_length(targets); i += 2)
	{
		const char *kind;
		char	   *name;
		AclMode		change = effective_privileges(list_nth_oid(targets, i),
												  list_nth_oid(targets, i + 1),
												  named, &kind, &name);
		GrantGroup *g = NULL;

		if (change == ACL_NO_RIGHTS)
			continue;
		foreach(lc, groups)
			if (((GrantGroup *) lfirst(lc))->privileges == change &&
				strcmp(((GrantGroup *) lfirst(lc))->kind, kind) == 0)
				g = lfirst(lc);
		if (g == NULL)
		{
			g = palloc0(sizeof(GrantGroup));
			g->kind = kind;
			g->privileges = change;
			initStringInfo(&g->objects);
			groups = lappend(groups, g);
		}
		appendStringInfo(&g->objects, "%s%s", g->objects.len > 0 ? ", " : "", name);
	}
	foreach(lc, groups)
	{
		char	   *sql = deparse(stmt, lfirst(lc));

		if (sql == NULL)
			return NIL;
		statements = lappend(statements, sql);
	}
	return statements;
}

/*
 * The statements to send to the workers for this GRANT or REVOKE, worked
 * out before it runs (what it changes depends on the privileges as they
 * are before it); NIL when there is nothing to send.  Raises for a
 * statement on the extension's objects and others, on the coordinator.
 */
static List *
statements_to_forward(GrantStmt *stmt)
{
	Oid			extension;
	List	   *targets;
	AclMode		named;
	int			total;
	int			n;
	Oid			dist_node;

	/* an extension script's own GRANTs run on every node with the script */
	if (!IsTransactionState() || creating_extension || !qc_cluster_active())
		return NIL;
	extension = get_extension_oid(QC_EXTENSION_NAME, true);
	if (!OidIsValid(extension))
		return NIL;
	targets = grant_targets(stmt, extension, &total, &n);
	if (n == 0 || !qc_cluster_is_coordinator())
		return NIL;
	if (n < total)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s on objects of extension \"%s\" and other objects in one statement on a Citus coordinator",
						stmt->is_grant ? "GRANT" : "REVOKE", QC_EXTENSION_NAME),
				 errdetail("The statement is sent to every worker for the extension's objects, which the other objects may not exist on."),
				 errhint("Name the extension's objects in a statement of their own.")));

	/* a node being added joins before this statement, or after it commits */
	dist_node = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
	if (OidIsValid(dist_node))
		LockRelationOid(dist_node, RowShareLock);
	if (!named_privileges(stmt, &named))
		return NIL;
	return deparse_groups(stmt, targets, named);
}

/* Keep a statement of role's to run on every worker at commit. */
static void
keep_to_forward(Oid role, const char *sql, const char *hint)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	ForwardedGrant *f = palloc(sizeof(ForwardedGrant));

	f->role = role;
	f->role_name = pstrdup(quote_identifier(GetUserNameFromId(role, false)));
	f->sql = pstrdup(sql);
	f->hint = hint;
	f->nest_level = GetCurrentTransactionNestLevel();
	to_forward = lappend(to_forward, f);
	MemoryContextSwitchTo(old);
}

static void
grant_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			  ProcessUtilityContext context, ParamListInfo params,
			  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	List	   *statements = IsA(parsetree, GrantStmt) ?
		statements_to_forward((GrantStmt *) parsetree) : NIL;
	Oid			role = GetUserId();
	ListCell   *lc;

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	/* the extension created: a node that joins copies the privileges */
	if (IsA(parsetree, CreateExtensionStmt))
		qc_cluster_join_created(((CreateExtensionStmt *) parsetree)->extname);
	foreach(lc, statements)
		keep_to_forward(role, lfirst(lc),
						"The extension's privileges must be the same on every node; the transaction is rolled back.");
}

void
qc_cluster_forward_at_commit(const char *plpgsql, const char *hint)
{
	keep_to_forward(GetUserId(), plpgsql, hint);
}

/*
 * The role the workers' connections for a statement of role are made as
 * (Citus connects as the current role): the session's, which logged in,
 * when it may become role (SET ROLE), else role itself.
 */
static Oid
connecting_role(Oid role)
{
	Oid			session = GetSessionUserId();

	if (session == role || superuser_arg(session) || qc_can_set_role(session, role))
		return session;
	return role;
}

/* Run f on every worker, as its role; an error aborts the commit. */
static void
forward_one(ForwardedGrant *f, Oid user, int sec_context)
{
	Oid			types[1] = {TEXTOID};
	char	   *body = psprintf("BEGIN SET LOCAL ROLE %s; %s; END", f->role_name, f->sql);
	Datum		args[1] = {CStringGetTextDatum(psprintf("DO %s", quote_literal_cstr(body)))};
	int			rc;

	SetUserIdAndSecContext(connecting_role(f->role), sec_context | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute_with_args("SELECT w.nodename, w.nodeport, w.result"
							   " FROM pg_catalog.run_command_on_workers($1) w"
							   " WHERE NOT w.success",
							   1, types, args, NULL, false, 0);
	SetUserIdAndSecContext(user, sec_context);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not call run_command_on_workers()");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not run \"%s\" as role %s on worker %s:%s", f->sql, f->role_name,
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errdetail_internal("%s", SPI_getvalue(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 3)),
				 errhint("%s", f->hint)));
}

void
qc_cluster_run_on_workers(const char *plpgsql, const char *hint)
{
	ForwardedGrant f = {GetUserId(), pstrdup(quote_identifier(GetUserNameFromId(GetUserId(), false))),
	pstrdup(plpgsql), hint, GetCurrentTransactionNestLevel()};
	Oid			user;
	int			sec_context;

	GetUserIdAndSecContext(&user, &sec_context);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	forward_one(&f, user, sec_context);
	SPI_finish();
}

/* Run the statements kept on every worker. */
static void
forward_to_workers(void)
{
	Oid			user;
	int			sec_context;
	ListCell   *lc;

	GetUserIdAndSecContext(&user, &sec_context);
	/* a statement of its own at commit: it needs a snapshot */
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, to_forward)
		forward_one(lfirst(lc), user, sec_context);
	SPI_finish();
	PopActiveSnapshot();
}

static void
grant_xact_callback(XactEvent event, void *arg)
{
	if ((event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE) && to_forward != NIL)
		forward_to_workers();
	if (qc_cluster_xact_ended(event))
		to_forward = NIL;
}

/*
 * A subtransaction rolled back: its statements are not sent.  One
 * committed: its statements are its parent's now (a later subtransaction
 * of the same level rolled back leaves them).
 */
static void
grant_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old;

	if ((event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB) ||
		to_forward == NIL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	foreach(lc, to_forward)
	{
		ForwardedGrant *f = lfirst(lc);

		if (f->nest_level < level)
			kept = lappend(kept, f);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			f->nest_level = level - 1;
			kept = lappend(kept, f);
		}
	}
	MemoryContextSwitchTo(old);
	to_forward = kept;
}

void
qc_cluster_grant_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = grant_utility;
	RegisterXactCallback(grant_xact_callback, NULL);
	RegisterSubXactCallback(grant_subxact_callback, NULL);
}
