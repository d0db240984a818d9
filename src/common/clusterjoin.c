/*-------------------------------------------------------------------------
 *
 * clusterjoin.c
 *	  A node that joins a Citus cluster after privileges were given on the
 *	  extension's objects gets them: as Citus creates the extension on it,
 *	  it copies from the coordinator the privileges on each of the
 *	  extension's routines and relations.
 *
 * Citus creates the extension on a node it activates (citus_add_node,
 * citus_activate_node) with CREATE EXTENSION IF NOT EXISTS, sent from the
 * coordinator in the transaction that activates the node, as a superuser;
 * the GRANTs on its own distributed objects (the schema, the wrapper and
 * its servers) and the roles' memberships go with it.  The privileges on
 * an extension's routines and relations do not: clustergrant.c sends a
 * GRANT on them to the nodes there are when it commits.  So when a
 * transaction that ran CREATE EXTENSION on a node that is not the
 * coordinator commits (or is prepared, as Citus commits an activation),
 * this file asks the coordinator (run_command_on_coordinator) for the
 * access control list of each of the extension's routines and relations
 * there, and makes each object's list here the same.  Not at the CREATE
 * EXTENSION itself: Citus creates the roles newer than the extension
 * after it, in the same transaction.
 *
 * The lists name the roles (grantees and grantors) and the objects as the
 * coordinator has them: what took effect there, granted by the role that
 * gave it, on the object the coordinator resolved, holds here too, and
 * what was revoked there is revoked here.  Each list is written as GRANT
 * writes one (the catalog row, the roles' shared dependencies); the
 * coordinator's owner of an object stands for its owner here, should
 * another superuser have created the extension on this node.  An object
 * this node lacks is left out, and an object that is not the extension's
 * here is never written.
 *
 * The coordinator's lists are read in a session of its own: a GRANT there
 * that has not committed is not among them, but the node is not added
 * before it commits (clustergrant.c takes pg_dist_node as Citus does for
 * its DDL, and activating a node holds it exclusively), and a GRANT run
 * after the node is added reaches it.  A coordinator Citus's metadata
 * does not list cannot be asked: the node's activation fails then, with a
 * hint, rather than leave the node with the extension's default
 * privileges (what was revoked on the coordinator granted there).  A
 * CREATE EXTENSION that activates no node (the coordinator's own, sent to
 * the workers it has) finds nothing to copy, and asks only where it can.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_shdepend.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "cluster.h"

#define QC_EXTENSION_NAME "queryclaw_ext"

/*
 * On the coordinator: the extension's routines and relations, as a JSON
 * array of {kind, identity, owner, acl}: f for a routine, r for a
 * relation; its qualified name (with a routine's argument types); its
 * owner; and its access control list, NULL for the default, else an
 * array of {grantee (NULL: PUBLIC), grantor, privilege, grantable}, roles
 * by name.
 */
#define COORDINATOR_LISTS \
	"SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(" \
	"  'kind', o.kind, 'identity', (pg_catalog.pg_identify_object(o.classid, o.objid, 0)).identity," \
	"  'owner', o.owner::pg_catalog.regrole::pg_catalog.text," \
	"  'acl', CASE WHEN o.acl IS NOT NULL THEN (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(" \
	"     'grantee', CASE WHEN a.grantee OPERATOR(pg_catalog.<>) 0 THEN a.grantee::pg_catalog.regrole::pg_catalog.text END," \
	"     'grantor', a.grantor::pg_catalog.regrole::pg_catalog.text," \
	"     'privilege', a.privilege_type, 'grantable', a.is_grantable)), '[]')" \
	"    FROM pg_catalog.aclexplode(o.acl) a) END)), '[]')" \
	" FROM (SELECT d.classid, d.objid, 'f' AS kind, p.proacl AS acl, p.proowner AS owner" \
	"   FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid" \
	"   JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.objid" \
	"  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass" \
	"    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass" \
	"    AND d.deptype OPERATOR(pg_catalog.=) 'e' AND x.extname OPERATOR(pg_catalog.=) '" QC_EXTENSION_NAME "'" \
	"  UNION ALL" \
	"  SELECT d.classid, d.objid, 'r', c.relacl, c.relowner" \
	"   FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid" \
	"   JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid" \
	"  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass" \
	"    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass" \
	"    AND d.deptype OPERATOR(pg_catalog.=) 'e' AND x.extname OPERATOR(pg_catalog.=) '" QC_EXTENSION_NAME "') o"

/*
 * Here, from the coordinator's lists ($1): a row for each item of each
 * object's list (one with no item for an empty or default list), in the
 * order of the objects: the object's place (1), its catalog's kind (2),
 * its oid here (3, NULL where it has none), whether its list is the
 * default (4), whether the row has an item (5), the item with the roles
 * of this node (6, NULL where one of them does not exist here), and the
 * oid here of the coordinator's owner of the object (7).
 */
#define RESOLVE_LISTS \
	"SELECT e.n, e.o->>'kind', CASE e.o->>'kind'" \
	"         WHEN 'f' THEN pg_catalog.to_regprocedure(e.o->>'identity')::pg_catalog.oid" \
	"         ELSE pg_catalog.to_regclass(e.o->>'identity')::pg_catalog.oid END," \
	"       pg_catalog.jsonb_typeof(e.o->'acl') OPERATOR(pg_catalog.=) 'null', i.item IS NOT NULL," \
	"       pg_catalog.makeaclitem(CASE WHEN i.item->>'grantee' IS NULL THEN 0::pg_catalog.oid" \
	"                                   ELSE pg_catalog.to_regrole(i.item->>'grantee')::pg_catalog.oid END," \
	"                              pg_catalog.to_regrole(i.item->>'grantor')::pg_catalog.oid," \
	"                              i.item->>'privilege', (i.item->>'grantable')::pg_catalog.bool)," \
	"       pg_catalog.to_regrole(e.o->>'owner')::pg_catalog.oid" \
	"  FROM pg_catalog.jsonb_array_elements($1::pg_catalog.jsonb) WITH ORDINALITY AS e(o, n)" \
	"  LEFT JOIN LATERAL pg_catalog.jsonb_array_elements(CASE pg_catalog.jsonb_typeof(e.o->'acl')" \
	"         WHEN 'array' THEN e.o->'acl' ELSE '[]' END) AS i(item) ON true" \
	" ORDER BY e.n"

/* SPI's result: column n of row i, and whether it is NULL. */
static Datum
column(uint64 i, int n, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, n, isnull);
}

/* ... as text, NULL for a NULL. */
static char *
value(uint64 i, int n)
{
	return SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, n);
}

/*
 * Does this transaction activate this node (did it set the node's group,
 * as Citus does first when it adds or activates a node)?
 */
static bool
activating_this_node(void)
{
	bool		isnull = true;
	Datum		xmin;

	if (SPI_execute("SELECT xmin FROM pg_catalog.pg_dist_local_group", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_local_group");
	if (SPI_processed != 1)
		return false;
	xmin = column(0, 1, &isnull);
	return !isnull && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin));
}

/*
 * The coordinator's lists, as the JSON text COORDINATOR_LISTS makes; NULL
 * when Citus's metadata here lists no coordinator.
 */
static char *
coordinator_lists(void)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(COORDINATOR_LISTS)};

	if (SPI_execute("SELECT FROM pg_catalog.pg_dist_node WHERE groupid OPERATOR(pg_catalog.=) 0"
					" AND isactive AND noderole OPERATOR(pg_catalog.=) 'primary'", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	if (SPI_processed == 0)
		return NULL;
	if (SPI_execute_with_args("SELECT success, result FROM pg_catalog.run_command_on_coordinator($1)",
							  1, types, args, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not call run_command_on_coordinator()");
	if (strcmp(value(0, 1), "t") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read the privileges on the objects of extension \"%s\" on the coordinator",
						QC_EXTENSION_NAME),
				 errdetail_internal("%s", value(0, 2)),
				 errhint("A node copies the privileges given on the coordinator as it joins the cluster, and does not join without them.")));
	return value(0, 2);
}

/* An access control list of n items, none set yet. */
static Acl *
new_acl(int n)
{
	Size		size = ACL_N_SIZE(n);
	Acl		   *acl = palloc0(size);

	SET_VARSIZE(acl, size);
	acl->ndim = 1;
	acl->dataoffset = 0;
	acl->elemtype = ACLITEMOID;
	ARR_LBOUND(acl)[0] = 1;
	ARR_DIMS(acl)[0] = n;
	return acl;
}

/*
 * The list of the object whose rows (RESOLVE_LISTS's) are first..end-1:
 * its items, a grantee's privileges from one grantor in one item, as
 * GRANT keeps them, the coordinator's owner of the object standing for
 * owner; NULL for the default.  *left_out counts the items whose roles do
 * not exist here.
 */
static Acl *
object_acl(uint64 first, uint64 end, Oid owner, int *left_out)
{
	bool		isnull;
	Acl		   *acl;
	AclItem    *items;
	int			n = 0;

	if (DatumGetBool(column(first, 4, &isnull)))
		return NULL;
	acl = new_acl(end - first);
	items = ACL_DAT(acl);
	for (uint64 i = first; i < end; i++)
	{
		Datum		item;
		Oid			owner_there;
		AclItem		add;
		int			j;

		if (!DatumGetBool(column(i, 5, &isnull)))
			continue;
		item = column(i, 6, &isnull);
		if (isnull)
		{
			(*left_out)++;
			continue;
		}
		add = *DatumGetAclItemP(item);
		owner_there = DatumGetObjectId(column(i, 7, &isnull));
		if (!isnull && OidIsValid(owner_there) && owner_there != owner)
		{
			if (add.ai_grantee == owner_there)
				add.ai_grantee = owner;
			if (add.ai_grantor == owner_there)
				add.ai_grantor = owner;
		}
		for (j = 0; j < n; j++)
			if (items[j].ai_grantee == add.ai_grantee && items[j].ai_grantor == add.ai_grantor)
				break;
		if (j == n)
			items[n++] = add;
		else
			items[j].ai_privs |= add.ai_privs;
	}
	ARR_DIMS(acl)[0] = n;
	SET_VARSIZE(acl, ACL_N_SIZE(n));
	return acl;
}

/*
 * Make the access control list of object (classid, objid) the
 * coordinator's, whose rows are first..end-1, as GRANT writes one: the
 * catalog row and the roles' dependencies on the object.
 */
static void
set_acl(Oid classid, Oid objid, uint64 first, uint64 end, int *left_out)
{
	bool		routine = classid == ProcedureRelationId;
	int			cacheid = routine ? PROCOID : RELOID;
	AttrNumber	acl_att = routine ? Anum_pg_proc_proacl : Anum_pg_class_relacl;
	Relation	catalog = table_open(classid, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(cacheid, ObjectIdGetDatum(objid));
	Datum		values[Natts_pg_class > Natts_pg_proc ? Natts_pg_class : Natts_pg_proc] = {0};
	bool		nulls[lengthof(values)] = {0};
	bool		replace[lengthof(values)] = {0};
	Oid			owner;
	Acl		   *acl;
	Datum		old;
	bool		isnull;
	Oid		   *old_members = NULL;
	Oid		   *new_members = NULL;
	int			n_old = 0;
	int			n_new = 0;
	HeapTuple	updated;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for object %u of catalog %u", objid, classid);
	owner = routine ? ((Form_pg_proc) GETSTRUCT(tuple))->proowner :
		((Form_pg_class) GETSTRUCT(tuple))->relowner;
	acl = object_acl(first, end, owner, left_out);
	old = SysCacheGetAttr(cacheid, tuple, acl_att, &isnull);
	if (!isnull)
		n_old = aclmembers(DatumGetAclP(old), &old_members);
	if (acl != NULL)
		n_new = aclmembers(acl, &new_members);
	values[acl_att - 1] = PointerGetDatum(acl);
	nulls[acl_att - 1] = acl == NULL;
	replace[acl_att - 1] = true;
	updated = heap_modify_tuple(tuple, RelationGetDescr(catalog), values, nulls, replace);
	CatalogTupleUpdate(catalog, &updated->t_self, updated);
	updateAclDependencies(classid, objid, 0, owner, n_old, old_members, n_new, new_members);
	heap_freetuple(updated);
	heap_freetuple(tuple);
	table_close(catalog, RowExclusiveLock);
}

/*
 * Give each of the extension's objects here the coordinator's list
 * (lists: COORDINATOR_LISTS's JSON).
 */
static void
copy_lists(const char *lists, Oid extension)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(lists)};
	int			left_out = 0;
	uint64		end;

	if (SPI_execute_with_args(RESOLVE_LISTS, 1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the coordinator's privileges");
	for (uint64 first = 0; first < SPI_processed; first = end)
	{
		bool		isnull;
		int64		place = DatumGetInt64(column(first, 1, &isnull));
		Oid			classid = strcmp(value(first, 2), "f") == 0 ? ProcedureRelationId : RelationRelationId;
		Datum		objid = column(first, 3, &isnull);

		for (end = first + 1; end < SPI_processed; end++)
			if (DatumGetInt64(column(end, 1, &isnull)) != place)
				break;
		/* an object this node lacks, or that is not the extension's here */
		if (isnull || getExtensionOfObject(classid, DatumGetObjectId(objid)) != extension)
			continue;
		set_acl(classid, DatumGetObjectId(objid), first, end, &left_out);
	}
	CommandCounterIncrement();
	if (left_out > 0)
		ereport(WARNING,
				(errmsg("%d privileges on the objects of extension \"%s\" were not copied from the coordinator",
						left_out, QC_EXTENSION_NAME),
				 errdetail("Their grantees or grantors do not exist on this node.")));
}

/*
 * The coordinator's privileges on the extension's objects, copied here
 * once the extension is created on this node, which is not the
 * coordinator.
 */
static void
copy_from_coordinator(void)
{
	Oid			extension = get_extension_oid(QC_EXTENSION_NAME, true);
	char	   *lists;

	/* only a superuser writes the lists, as Citus activates nodes as one */
	if (!OidIsValid(extension) || !superuser() || !qc_cluster_active() ||
		qc_cluster_is_coordinator())
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lists = coordinator_lists();
	if (lists == NULL && activating_this_node())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot copy the privileges on the objects of extension \"%s\" from the coordinator",
						QC_EXTENSION_NAME),
				 errdetail("A node that joins the cluster copies them, and Citus's metadata names no coordinator to copy them from."),
				 errhint("Run SELECT citus_set_coordinator_host('<host>', <port>) on the coordinator, then add the node again.")));
	if (lists != NULL)
		copy_lists(lists, extension);
	SPI_finish();
}

/* Has this transaction created the extension on this node? */
static bool copy_at_commit = false;

void
qc_cluster_join_created(const char *extname)
{
	if (strcmp(extname, QC_EXTENSION_NAME) == 0)
		copy_at_commit = true;
}

/* At commit (or prepare), the copy a CREATE EXTENSION asked for. */
static void
join_xact_callback(XactEvent event, void *arg)
{
	if ((event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE) && copy_at_commit)
	{
		copy_at_commit = false;
		PushActiveSnapshot(GetTransactionSnapshot());
		copy_from_coordinator();
		PopActiveSnapshot();
	}
	if (qc_cluster_xact_ended(event))
		copy_at_commit = false;
}

void
qc_cluster_join_init(void)
{
	RegisterXactCallback(join_xact_callback, NULL);
}
