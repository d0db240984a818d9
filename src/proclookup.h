/*-------------------------------------------------------------------------
 *
 * proclookup.h
 *	  A function found by its signature (proclookup.c).
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

#endif							/* QC_PROCLOOKUP_H */
