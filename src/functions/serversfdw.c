/*-------------------------------------------------------------------------
 *
 * serversfdw.c
 *	  The queryclaw foreign-data wrapper's validator, and the check that no
 *	  two of its servers have the same url (servers.h).
 *
 * PostgreSQL calls the validator with every option the object will have
 * once the statement is done (CREATE, or ALTER with its ADD, SET and DROP
 * applied), so a server's required url is checked at ALTER too.  The
 * parsing is serversopts.c's; here, also each header of a mapping is
 * checked as a caller's header is.
 *
 * The validator is not told which server it validates, so it cannot tell
 * a second server with a url from the same server altered.  An object
 * access hook can: once a server's row is written (CREATE SERVER, ALTER
 * SERVER), it compares that row's url with the other servers' of the
 * wrapper (qc_server_check_unique).  The library is loaded by then, in any
 * session: the validator ran first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "fmgr.h"

#include "http.h"
#include "servers.h"
#include "serversfdw.h"

PG_FUNCTION_INFO_V1(queryclaw_fdw_validator);

static object_access_hook_type prev_object_access_hook = NULL;

static void
check_mapping_options(List *options)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "headers") == 0)
		{
			ListCell   *h;

			foreach(h, qc_server_headers_parse(defGetString(def)))
				qc_http_validate_header(((QcHeader *) lfirst(h))->name,
										((QcHeader *) lfirst(h))->value);
		}
		else if (strcmp(def->defname, "query") == 0)
			qc_server_query_check(defGetString(def));
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid option \"%s\" for a queryclaw user mapping", def->defname),
					 errhint("Valid options are headers and query.")));
	}
}

/*
 * queryclaw_fdw_validator(options text[], catalog oid): servers and user
 * mappings have the options above; the wrapper itself and foreign tables
 * have none.
 */
Datum
queryclaw_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	QcServerOptions opts;

	if (catalog == ForeignServerRelationId)
		qc_server_options_parse(options, &opts);
	else if (catalog == UserMappingRelationId)
		check_mapping_options(options);
	else if (options != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid option \"%s\"", linitial_node(DefElem, options)->defname),
				 errdetail("Only queryclaw servers and user mappings take options.")));
	PG_RETURN_VOID();
}

/* A server was created or altered: its url must be its own. */
static void
servers_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (classId == ForeignServerRelationId &&
		(access == OAT_POST_CREATE || access == OAT_POST_ALTER))
		qc_server_check_unique(objectId);
}

void
qc_serversfdw_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = servers_object_access;
}
