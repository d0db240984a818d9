/*-------------------------------------------------------------------------
 *
 * auditq.h
 *	  The shared-memory queue that carries audit records from the calling
 *	  backends to the audit worker (with shared_preload_libraries only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_AUDITQ_H
#define QC_AUDITQ_H

#include "lib/stringinfo.h"

/* _PG_init, while preloading: shared memory hooks and the worker. */
extern void qc_auditq_init(void);

/* Does the queue exist (was the library preloaded)? */
extern bool qc_auditq_active(void);

/*
 * Are this database's rows written by the audit worker: the queue exists,
 * this is queryclaw.database, and not a standby?
 */
extern bool qc_auditq_durable(void);

/*
 * Reserve room for one record of at most QC_AUDIT_MAX_RECORD bytes, waiting
 * (interruptibly, at most timeout_ms; 0 does not wait) while the queue is
 * full; false when no room came free in time.  Every reservation is either used by
 * qc_auditq_push() or given back by qc_auditq_release().
 */
extern bool qc_auditq_reserve(int timeout_ms);
extern void qc_auditq_release(void);

/*
 * Append one record, using a reservation; never waits and never touches
 * the catalogs, so it is safe on error and exit paths.
 */
extern void qc_auditq_push(const char *data, uint32 len);

/* The worker's side. */
extern void qc_auditq_attach_worker(void);
extern int	qc_auditq_peek(StringInfo batch, int max_bytes);
extern void qc_auditq_consume(int records, Size bytes, int lost);
extern bool qc_auditq_idle(void);
extern uint64 qc_auditq_pending(void);

#endif							/* QC_AUDITQ_H */
