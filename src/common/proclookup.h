/*-------------------------------------------------------------------------
 *
 * proclookup.h
 *	  A function found by its signature, and whether a role may run it
 *	  (proclookup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_PROCLOOKUP_H
#define QC_PROCLOOKUP_H

/*
 * The function a signature such as "queryclaw.web_fetch(text,text,integer)"
 * names, as regprocedure reads it; InvalidOid when there is none (not yet
 * created, or dropped since), never an error.
 */
extern Oid	qc_proc_by_signature(const char *signature);

/*
 * May the role execute the function, by its catalog row as the latest
 * snapshot sees it?  Not by the cached row: a REVOKE that committed with a
 * queued request becomes visible with it, but the cache invalidation it
 * sends follows a moment later, and a background worker woken by that
 * commit can get there first.  A function that is gone may not be run.
 */
extern bool qc_proc_executable(Oid fn, Oid role);

#endif							/* QC_PROCLOOKUP_H */
