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


/*
 * Register a background worker of this library that connects to a
 * database: function is its entry point, name its name (and type, without
 * a number), arg its argument; restarted restart_s after it exits.
 */
extern void qc_bgsession_register(const char *function, const char *name,
								  const char *type, int restart_s, Datum arg);

/* The SIGTERM handler of the workers: sets the flag and the latch. */
extern volatile sig_atomic_t qc_bgsession_stop;
extern void qc_bgsession_sigterm(SIGNAL_ARGS);

extern void qc_bgsession_connect(const char *dbname);

/*
 * Inside a GUC nest level of the caller's (NewGUCNestLevel, undone by
 * AtEOXact_GUC): the pinned settings back at the server's values, for work
 * done on behalf of a role (its own settings are applied over them); or
 * pinned again, for the worker's own statements made meanwhile.
 */
extern void qc_bgsession_unpin(void);
extern void qc_bgsession_repin(void);

#endif							/* QC_BGSESSION_H */
