/*-------------------------------------------------------------------------
 *
 * bgsession.h
 *	  A background worker's connection that its database cannot steer
 *	  (bgsession.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_BGSESSION_H
#define QC_BGSESSION_H

#include <signal.h>

#include "fmgr.h"


/* _PG_init, while preloading, before any worker is registered: shared memory hooks. */
extern void qc_bgsession_init(void);

/*
 * Register a background worker of this library that connects to a
 * database: function is its entry point, name its name (and type, without
 * a number), arg its argument; restarted restart_s after it exits.
 */
extern void qc_bgsession_register(const char *function, const char *name,
								  const char *type, int restart_s, Datum arg);

/* Set by SIGTERM: the worker's loop ends, after what it must finish. */
extern volatile sig_atomic_t qc_bgsession_stop;

/*
 * The start of every worker of ours: SIGHUP reloads the configuration,
 * SIGTERM sets qc_bgsession_stop; then the connection to dbname (see
 * bgsession.c for what it takes from the database's and role's settings).
 * When the worker's last start could not connect, it waits instead, quietly,
 * until dbname exists, then exits to be started again: it does not return.
 */
extern void qc_bgsession_start(const char *dbname);

/*
 * The top of each pass of a worker's loop: the latch reset, interrupts
 * served, a pending reload taken.  True when the configuration was
 * reloaded, so that the worker can apply new settings at once.
 */
extern bool qc_bgsession_next_pass(void);

/*
 * Run work(arg) in a transaction of its own, connected to SPI, under a
 * snapshot, pg_stat_activity showing activity meanwhile; an error is the
 * caller's to catch (the transaction is then to be aborted).
 */
extern void qc_bgsession_transaction(const char *activity, void (*work) (void *arg),
									 void *arg);

/*
 * After an error a worker caught: log it, abort the transaction (if any)
 * and go back to cxt, idle.
 */
extern void qc_bgsession_recover(MemoryContext cxt);

/*
 * Inside a GUC nest level of the caller's (NewGUCNestLevel, undone by
 * AtEOXact_GUC): the pinned settings back at the server's values, for work
 * done on behalf of a role (its own settings are applied over them); or
 * pinned again, for the worker's own statements made meanwhile.
 */
extern void qc_bgsession_unpin(void);
extern void qc_bgsession_repin(void);

#endif							/* QC_BGSESSION_H */
