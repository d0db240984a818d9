/*-------------------------------------------------------------------------
 *
 * bgsession.c
 *	  A background worker's connection that the database it connects to
 *	  cannot steer.
 *
 * A session starts with the settings stored for its database and role in
 * pg_db_role_setting (ALTER DATABASE/ROLE ... SET), and a database's owner
 * may store there any setting an ordinary role can SET.  A worker that runs
 * as a superuser in a database owned by someone else would take them on:
 * a search_path that puts the owner's schema first makes the worker's
 * statements call the owner's operators and functions as superuser (as in
 * CVE-2018-1058); default_transaction_read_only, statement_timeout or
 * lock_timeout make every statement of the worker fail.
 *
 * No flag of BackgroundWorkerInitializeConnection skips those settings.
 * So bgsession_connect takes the server's values of every setting a
 * database or role can hold (postgresql.conf, ALTER SYSTEM, the command
 * line: what a background worker has before it connects), connects, and
 * sets back each setting that pg_db_role_setting changed, logging their
 * names.  Then it pins the settings the worker's statements depend on to
 * values of its own, whatever the server's configuration says (see
 * pinned[]).  Both are set with source PGC_S_OVERRIDE, which outranks the
 * configuration file: a reload (SIGHUP) changes neither, so the pins need
 * no setting again after one (a setting set back keeps the server's value
 * of the start until the worker restarts); the other settings follow
 * reloads as in any session.
 *
 * The connection also ignores ALLOW_CONNECTIONS false, which the owner may
 * set too: calls queued before it still get their audit rows.
 *
 * A database that does not exist (yet: queryclaw.database is set before it
 * is created) makes the connection fail with FATAL, and the postmaster
 * restarts the worker bgw_restart_time later: a FATAL line and an exit
 * line every few seconds, for as long as it is missing.  So a start whose
 * connection failed is remembered in shared memory (connect_failed, one
 * flag per registered worker, its index in bgw_extra), and the next start
 * of that worker does not try again: it connects to no database (shared
 * catalogs only, as the logical replication launcher does), looks for the
 * database in pg_database with a growing pause (up to a minute, SIGTERM
 * honoured), logging at most a line a minute, and once the database is
 * there (and valid) exits so that the postmaster starts it again, to
 * connect: a process connects once.  The first start tries at once, so
 * that a server whose database exists loses no time.
 *
 * Statements must still name their schema and operators: the pinned
 * search_path is a second fence, not the only one.
 *
 * The asynchronous workers run requests on behalf of roles, with the
 * settings each role would have in a session of its own: inside a GUC nest
 * level, qc_bgsession_unpin() gives the pinned settings the server's values
 * again (kept from before connecting), the role's own are applied over
 * them, and qc_bgsession_repin() pins them again, in a nest level of its
 * own, around the worker's statements.  Both set with source
 * PGC_S_SESSION, which outranks the pins' PGC_S_OVERRIDE, and
 * GUC_ACTION_SAVE, so that leaving the nest level undoes them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "lib/stringinfo.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "bgsession.h"
#include "compat.h"

/* The pause between two looks for a missing database: growing, up to a minute. */
#define QC_DATABASE_PAUSE_MIN_MS	1000
#define QC_DATABASE_PAUSE_MAX_MS	60000
/* At most one line a minute while it is missing. */
#define QC_DATABASE_LOG_MS			60000

/* The settings a worker's own statements rely on, and their values. */
static const struct
{
	const char *name;
	const char *value;
}			pinned[] =
{
	/* operators, functions and types from the system catalog only */
	{"search_path", "pg_catalog, pg_temp"},
	/* the worker writes, in plain transactions */
	{"default_transaction_read_only", "off"},
	{"default_transaction_isolation", "read committed"},
	/* a statement waits for a lock rather than failing: a batch is bounded */
	{"statement_timeout", "0"},
	{"lock_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
#if PG_VERSION_NUM >= 170000
	{"transaction_timeout", "0"},
#endif
	/* triggers a DBA put on the worker's tables fire */
	{"session_replication_role", "origin"},
	/* the policies of row-level security apply, never an error instead */
	{"row_security", "on"},

	/*
	 * Plans that stay right whatever the statistics say (README, "How the
	 * queue runs"): the worker's statements are planned once (a generic
	 * plan), when the queue may be empty, freshly vacuumed or a million rows
	 * long.  With these, a scan in an index's order is chosen wherever one
	 * fits, never a scan of a role's every request and a sort because the
	 * statistics of a drained queue promise one row (nor another index's
	 * rows in an incremental sort: the look for roles with due requests read
	 * a paused role's every waiting request through 0.2's index of open requests
	 * and sorted them on the second key); and no JIT compilation of a
	 * statement that reads a few rows.
	 */
	{"enable_seqscan", "off"},
	{"enable_bitmapscan", "off"},
	{"enable_sort", "off"},
	{"enable_incremental_sort", "off"},
	{"jit", "off"},
};

/* One setting's value before connecting. */
typedef struct ServerSetting
{
	const char *name;
	char	   *value;
} ServerSetting;

typedef struct ServerSettings
{
	int			n;
	ServerSetting *settings;
} ServerSettings;

/* The server's values of the pinned settings, kept for qc_bgsession_unpin. */
static char *server_pinned[lengthof(pinned)];
/* and whether each came from the configuration files then */
static bool pinned_from_file[lengthof(pinned)];

static struct config_generic **
guc_variables(int *n)
{
#if PG_VERSION_NUM >= 160000
	return get_guc_variables(n);
#else
	*n = GetNumConfigOptions();
	return get_guc_variables();
#endif
}

/* Can pg_db_role_setting hold this setting? */
static bool
settable_per_role(const struct config_generic *conf)
{
	return conf->context == PGC_SUSET || conf->context == PGC_USERSET ||
		conf->context == PGC_SU_BACKEND || conf->context == PGC_BACKEND;
}

/* Did pg_db_role_setting set it? */
static bool
set_per_role(const struct config_generic *conf)
{
	return conf->source >= PGC_S_GLOBAL && conf->source <= PGC_S_DATABASE_USER;
}

/* The current values of the settings a database or role could change. */
static ServerSettings *
take_server_settings(void)
{
	int			n;
	struct config_generic **vars = guc_variables(&n);
	ServerSettings *server = palloc(sizeof(ServerSettings));

	server->n = 0;
	server->settings = palloc(n * sizeof(ServerSetting));
	for (int i = 0; i < n; i++)
	{
		const char *value;

		if (!settable_per_role(vars[i]))
			continue;
		value = GetConfigOption(vars[i]->name, true, false);
		server->settings[server->n].name = pstrdup(vars[i]->name);
		server->settings[server->n].value = value ? pstrdup(value) : NULL;
		server->n++;
	}
	return server;
}

/* The setting named name, or NULL. */
static struct config_generic *
guc_variable(const char *name)
{
	int			n;
	struct config_generic **vars = guc_variables(&n);

	for (int i = 0; i < n; i++)
		if (pg_strcasecmp(vars[i]->name, name) == 0)
			return vars[i];
	return NULL;
}

/* Where a setting's value came from (PGC_S_DEFAULT when it is unknown). */
static GucSource
find_option_source(const char *name)
{
	struct config_generic *var = guc_variable(name);

	return var ? var->source : PGC_S_DEFAULT;
}

/* A setting's built-in value, as text (NULL for an unknown setting). */
static char *
boot_value(const char *name)
{
	struct config_generic *var = guc_variable(name);

	if (var == NULL)
		return NULL;
	switch (var->vartype)
	{
		case PGC_BOOL:
			return pstrdup(((struct config_bool *) var)->boot_val ? "on" : "off");
		case PGC_INT:
			return psprintf("%d", ((struct config_int *) var)->boot_val);
		case PGC_REAL:
			return psprintf("%g", ((struct config_real *) var)->boot_val);
		case PGC_STRING:
			return pstrdup(((struct config_string *) var)->boot_val ?
						   ((struct config_string *) var)->boot_val : "");
		case PGC_ENUM:
			return pstrdup(config_enum_lookup_by_value((struct config_enum *) var,
													   ((struct config_enum *) var)->boot_val));
	}
	return NULL;
}

/*
 * After a configuration reload: the server's values of the pinned
 * settings as the files now say (the worker's own are pinned, so the
 * reload cannot be read from them).  A setting the files no longer name
 * goes back to its built-in value if the files gave the one it had; one
 * set otherwise (the command line) keeps it.  Else roles' requests would
 * keep, until the worker restarts, a value a DBA took back (ALTER SYSTEM
 * RESET default_transaction_read_only).
 */
static void
reread_server_pinned(void)
{
	ConfigVariable *head = NULL;
	ConfigVariable *tail = NULL;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	/* depth 0: the top of an include chain; the auto file lives in the data directory */
	if (!ParseConfigFile(ConfigFileName, false, NULL, 0, 0, DEBUG1, &head, &tail) ||
		!ParseConfigFile(PG_AUTOCONF_FILENAME, false, NULL, 0, 0, DEBUG1, &head, &tail))
	{
		FreeConfigVariables(head);
		MemoryContextSwitchTo(old);
		return;					/* the reload itself reports what is wrong */
	}
	for (int i = 0; i < lengthof(pinned); i++)
	{
		const char *value = NULL;

		for (ConfigVariable *item = head; item != NULL; item = item->next)
			if (pg_strcasecmp(item->name, pinned[i].name) == 0)
				value = item->value;	/* the last one wins */
		if (value != NULL)
			server_pinned[i] = pstrdup(value);
		else if (pinned_from_file[i])
			server_pinned[i] = boot_value(pinned[i].name);
		pinned_from_file[i] |= value != NULL;
	}
	FreeConfigVariables(head);
	MemoryContextSwitchTo(old);
}

static const ServerSetting *
find_setting(const ServerSettings *server, const char *name)
{
	for (int i = 0; i < server->n; i++)
		if (strcmp(server->settings[i].name, name) == 0)
			return &server->settings[i];
	return NULL;
}

/*
 * Set back what pg_db_role_setting changed.  A setting the server did not
 * have before (a placeholder of a module it does not load) is no setting
 * anything of ours reads, and stays.
 */
static void
restore_server_settings(const ServerSettings *server)
{
	int			n;
	struct config_generic **vars = guc_variables(&n);
	List	   *changed = NIL;
	ListCell   *lc;
	StringInfoData names;

	/* collected first: setting a value may reorder the variables */
	for (int i = 0; i < n; i++)
		if (set_per_role(vars[i]))
			changed = lappend(changed, pstrdup(vars[i]->name));
	initStringInfo(&names);
	foreach(lc, changed)
	{
		const ServerSetting *s = find_setting(server, lfirst(lc));

		if (s == NULL || s->value == NULL)
			continue;
		(void) set_config_option(s->name, s->value, PGC_SU_BACKEND,
								 PGC_S_OVERRIDE, GUC_ACTION_SET, true,
								 WARNING, false);
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "", s->name);
	}
	if (names.len > 0)
		ereport(LOG,
				(errmsg("%s ignores the settings of its database and role: %s",
						MyBgworkerEntry->bgw_name, names.data),
				 errdetail("It runs with the server's values (postgresql.conf, ALTER SYSTEM).")));
}

volatile sig_atomic_t qc_bgsession_stop = false;

/* Workers registered (in the postmaster); each one's index is in its bgw_extra. */
static int	registered = 0;

/*
 * Shared memory: by registered worker, whether its last start failed to
 * connect.  Each flag is read and written only by its worker, one process
 * at a time (a start begins after the last one exited): no lock.
 */
static bool *connect_failed = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
bgsession_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(Max(registered, 1) * sizeof(bool)));
}

static void
bgsession_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	connect_failed = ShmemInitStruct("queryclaw worker connections",
									 Max(registered, 1) * sizeof(bool), &found);
	if (!found)
		memset(connect_failed, 0, Max(registered, 1) * sizeof(bool));
	LWLockRelease(AddinShmemInitLock);
}

void
qc_bgsession_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = bgsession_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = bgsession_shmem_startup;
}

void
qc_bgsession_register(const char *function, const char *name, const char *type,
					  int restart_s, Datum arg)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	memcpy(worker.bgw_extra, &registered, sizeof(registered));
	registered++;
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = restart_s;
	worker.bgw_main_arg = arg;
	strlcpy(worker.bgw_library_name, "queryclaw_ext", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, type, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/* SIGTERM: the worker's loop sees the flag and decides what to finish. */
static void
bgsession_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	qc_bgsession_stop = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

static void
bgsession_connect(const char *dbname)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext,
											  "queryclaw server settings",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ServerSettings *server = take_server_settings();

	for (int i = 0; i < lengthof(pinned); i++)
	{
		const ServerSetting *kept = find_setting(server, pinned[i].name);

		if (kept != NULL && kept->value != NULL)
			server_pinned[i] = MemoryContextStrdup(TopMemoryContext, kept->value);
		pinned_from_file[i] = find_option_source(pinned[i].name) == PGC_S_FILE;
	}
	BackgroundWorkerInitializeConnection(dbname, NULL, BGWORKER_BYPASS_ALLOWCONN);
	/* some settings' checks look up the catalog */
	StartTransactionCommand();
	restore_server_settings(server);
	for (int i = 0; i < lengthof(pinned); i++)
		SetConfigOption(pinned[i].name, pinned[i].value, PGC_SUSET, PGC_S_OVERRIDE);
	CommitTransactionCommand();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* Set each pinned setting to values[i] (NULL: left alone) in the nest level. */
static void
set_pinned(const char *const *values)
{
	for (int i = 0; i < lengthof(pinned); i++)
		if (values[i] != NULL)
			(void) set_config_option(pinned[i].name, values[i], PGC_SUSET,
									 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

void
qc_bgsession_unpin(void)
{
	set_pinned((const char *const *) server_pinned);
}

void
qc_bgsession_repin(void)
{
	const char *values[lengthof(pinned)];

	for (int i = 0; i < lengthof(pinned); i++)
		values[i] = pinned[i].value;
	set_pinned(values);
}

/* This worker's flag: did its last start fail to connect? */
static bool *
my_connect_failed(void)
{
	int			index;

	memcpy(&index, MyBgworkerEntry->bgw_extra, sizeof(index));
	Assert(index >= 0 && index < registered);
	return &connect_failed[index];
}

/*
 * Is dbname in pg_database, and may it be connected to?  Connected to no
 * database, only the shared catalogs can be read: pg_database's index
 * only once the shared relation cache is built (its entry is read from
 * pg_class otherwise), as InitPostgres looks a database up.
 */
static bool
database_ready(const char *dbname)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		ready;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_database_datname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(dbname));
	scan = systable_beginscan(rel, DatabaseNameIndexId, criticalSharedRelcachesBuilt,
							  NULL, 1, &key);
	tuple = systable_getnext(scan);
	ready = HeapTupleIsValid(tuple) &&
		!qc_database_is_invalid((Form_pg_database) GETSTRUCT(tuple));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return ready;
}

/*
 * The last start could not connect to dbname: wait, connected to no
 * database, until it is there, then exit for the postmaster to start the
 * worker again (see the file header).  Never returns.
 */
static void
wait_for_database(const char *dbname)
{
	const char *name = MyBgworkerEntry->bgw_name;
	long		pause = QC_DATABASE_PAUSE_MIN_MS;
	TimestampTz logged = 0;

	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	while (!qc_bgsession_stop)
	{
		if (database_ready(dbname))
		{
			ereport(LOG,
					(errmsg("%s found database \"%s\" and starts again to connect to it",
							name, dbname)));
			*my_connect_failed() = false;
			break;
		}
		if (logged == 0 || TimestampDifferenceExceeds(logged, GetCurrentTimestamp(),
													   QC_DATABASE_LOG_MS))
		{
			ereport(LOG,
					(errmsg("%s is waiting for database \"%s\" to exist", name, dbname),
					 errhint("Create the database, or set queryclaw.database to one that exists and restart the server.")));
			logged = GetCurrentTimestamp();
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, pause,
						 qc_wait_event(QC_WAIT_DATABASE));
		(void) qc_bgsession_next_pass();
		pause = Min(pause * 2, QC_DATABASE_PAUSE_MAX_MS);
	}
	proc_exit(1);
}

void
qc_bgsession_start(const char *dbname)
{
	bool	   *failed = my_connect_failed();

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, bgsession_sigterm);
	BackgroundWorkerUnblockSignals();
	if (*failed)
		wait_for_database(dbname);
	/* a FATAL while connecting leaves it set, for the next start */
	*failed = true;
	bgsession_connect(dbname);
	*failed = false;
}

void
qc_bgsession_transaction(const char *activity, void (*work) (void *arg), void *arg)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, activity);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	work(arg);
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
qc_bgsession_recover(MemoryContext cxt)
{
	MemoryContextSwitchTo(cxt);
	EmitErrorReport();
	FlushErrorState();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);
}

bool
qc_bgsession_next_pass(void)
{
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	if (!ConfigReloadPending)
		return false;
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	reread_server_pinned();
	return true;
}
