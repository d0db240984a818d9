/*-------------------------------------------------------------------------
 *
 * rolesession.c
 *	  A role's session inside an async worker: its stored settings and
 *	  identity around its requests and callbacks, and nothing of it left
 *	  for the next role.
 *
 * Requests of many roles share one worker process and its session.  What
 * one role's requests and callbacks see must be what a session of its own
 * would show it, and nothing one role does may reach another's (README,
 * "Security"):
 *
 * - Settings.  At a new GUC nest level, the worker's pinned settings go
 *   back to the server's values and the role's stored settings
 *   (pg_db_role_setting: for all, for this database, for the role, for
 *   the role in this database, the later winning, as at login) are applied
 *   over them.  A few are never applied (never_applied[]).  Leaving the
 *   level rolls back every setting made since, SET and set_config() of a
 *   callback included: as an abort would, not as a commit, which would
 *   keep a plain SET.  The worker's own statements run outside that level.
 * - Identity.  The role, inside a security-restricted operation: no SET
 *   ROLE, no temporary tables, no cursors WITH HOLD.
 * - Callbacks.  Read-only when the role's default_transaction_read_only
 *   is on; bounded by queryclaw.callback_timeout and the role's
 *   statement_timeout, whichever is shorter (57014, "canceling statement
 *   due to statement timeout"); the role's lock_timeout applies.  After
 *   each, whatever it left in the session is dropped: session advisory
 *   locks, prepared statements, cursors, LISTEN, temporary objects, the
 *   sequence values currval() and lastval() read.
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
#include "catalog/pg_db_role_setting.h"
#include "commands/async.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/portal.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#include "bgsession.h"
#include "guc.h"
#include "rolesession.h"

/*
 * Stored settings a role's requests never get:
 * - session_authorization and role would change who runs them.  A request
 *   runs as the role that queued it, whose privileges were checked.  (At
 *   login PostgreSQL applies them only where the role may take that
 *   identity; here they would be checked as the worker, which may take
 *   any, and a session_authorization set is not undone with its level.)
 * - transaction_read_only, transaction_isolation and transaction_deferrable
 *   shape only the transaction they are set in: at login, the one that
 *   reads them, so that no transaction of the role's sessions has them.
 *   Here that would be the worker's, where other roles' outcomes are
 *   recorded.
 */
static const char *const never_applied[] = {
	"session_authorization",
	"role",
	"transaction_read_only",
	"transaction_isolation",
	"transaction_deferrable",
};

struct QcRoleSettings
{
	Oid			role;
	List	   *names;			/* of char *, in the order they apply */
	List	   *values;
};

static bool
is_never_applied(const char *name)
{
	for (int i = 0; i < lengthof(never_applied); i++)
		if (pg_strcasecmp(name, never_applied[i]) == 0)
			return true;
	return false;
}

/*
 * Add one pg_db_role_setting entry's settings, if there is one.  A setting
 * that is no longer valid is skipped, as at login; so is one that may not
 * be stored for a role or a database (a secret, see guc.c), which only a
 * check as a stored value (PGC_S_TEST, as ALTER ROLE ... SET checks) sees:
 * the source it is applied with must outrank the worker's pins.  (A check
 * alone answers -1 when the value is good, 0 when it is not.)
 */
static void
add_stored_settings(QcRoleSettings *s, Relation rel, Oid database, Oid role)
{
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(database));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(role));
	scan = systable_beginscan(rel, DbRoleSettingDatidRolidIndexId, true, NULL, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig,
									 RelationGetDescr(rel), &isnull);
		Datum	   *items;
		int			nitems;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, NULL, &nitems);
		for (int i = 0; i < nitems; i++)
		{
			char	   *name;
			char	   *value;

			ParseLongOption(TextDatumGetCString(items[i]), &name, &value);
			if (value == NULL || is_never_applied(name) ||
				set_config_option(name, value, PGC_SUSET, PGC_S_TEST,
								  GUC_ACTION_SET, false, WARNING, false) == 0)
				continue;
			s->names = lappend(s->names, name);
			s->values = lappend(s->values, value);
		}
	}
	systable_endscan(scan);
}

QcRoleSettings *
qc_role_settings_load(Oid role)
{
	QcRoleSettings *s = palloc0(sizeof(QcRoleSettings));
	Relation	rel = table_open(DbRoleSettingRelationId, AccessShareLock);

	s->role = role;
	add_stored_settings(s, rel, InvalidOid, InvalidOid);
	add_stored_settings(s, rel, MyDatabaseId, InvalidOid);
	add_stored_settings(s, rel, InvalidOid, role);
	add_stored_settings(s, rel, MyDatabaseId, role);
	table_close(rel, AccessShareLock);
	return s;
}

void
qc_role_enter(const QcRoleSettings *settings, QcRoleScope *scope)
{
	ListCell   *name;
	ListCell   *value;

	scope->nest = NewGUCNestLevel();
	qc_bgsession_unpin();
	forboth(name, settings->names, value, settings->values)
		(void) set_config_option(lfirst(name), lfirst(value), PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, WARNING, false);
	GetUserIdAndSecContext(&scope->save_userid, &scope->save_sec_context);
	if (SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(settings->role)))
		SetUserIdAndSecContext(settings->role,
							   scope->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
}

void
qc_role_leave(const QcRoleScope *scope)
{
	SetUserIdAndSecContext(scope->save_userid, scope->save_sec_context);
	/* as an abort does: a plain SET made in the scope is not kept */
	AtEOXact_GUC(false, scope->nest);
}

bool
qc_role_paused(Oid role)
{
	QcRoleScope scope;
	bool		paused;

	qc_role_enter(qc_role_settings_load(role), &scope);
	paused = !qc_enabled;
	qc_role_leave(&scope);
	return paused;
}

/*
 * Stop the callback's timer.  A limit that passed as the callback returned
 * must not cancel the worker's next statement instead.
 */
static void
stop_callback_timer(void)
{
	disable_timeout(STATEMENT_TIMEOUT, true);
	if (get_timeout_indicator(STATEMENT_TIMEOUT, true))
		QueryCancelPending = false;
}

/* The callback's time limit: callback_timeout, or the role's statement_timeout. */
static int
callback_limit_ms(void)
{
	if (StatementTimeout > 0 && StatementTimeout < qc_callback_timeout)
		return StatementTimeout;
	return qc_callback_timeout;
}

void
qc_role_run_callback(const QcRoleSettings *settings, void (*fn) (void *arg), void *arg)
{
	QcRoleScope scope;

	bool		was_read_only = XactReadOnly;

	qc_role_enter(settings, &scope);

	/*
	 * as SET TRANSACTION READ ONLY would (the setting itself cannot be set
	 * at a nest level from PostgreSQL 17 on); the subtransaction the
	 * callback runs in gives the worker's value back if it raises
	 */
	if (DefaultXactReadOnly)
		XactReadOnly = true;
	/* the statement_timeout handler cancels as a cancel request does */
	enable_timeout_after(STATEMENT_TIMEOUT, callback_limit_ms());
	fn(arg);
	stop_callback_timer();
	XactReadOnly = was_read_only;
	qc_role_leave(&scope);
}

void
qc_role_forget_callback(void)
{
	stop_callback_timer();		/* a callback that raised left it running */
	LockReleaseSession(USER_LOCKMETHOD);
	DropAllPreparedStatements();
	PortalHashTableDeleteAll();
	Async_UnlistenAll();
	ResetTempTableNamespace();
	ResetSequenceCaches();
}
