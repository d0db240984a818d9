/*-------------------------------------------------------------------------
 *
 * audit.h
 *	  Writing one queryclaw.audit_log row per attempted call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_AUDIT_H
#define QC_AUDIT_H

#include "http.h"

/*
 * Record the call (whatever its outcome) when queryclaw.audit is on.  The
 * row is written in the caller's transaction: if that transaction aborts,
 * the row goes with it.
 */
extern void qc_audit_call(const QcCall *call);

#endif							/* QC_AUDIT_H */
