/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The audit worker, which commits queued audit records.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_WORKER_H
#define QC_WORKER_H

/* _PG_init, while preloading: register the worker. */
extern void qc_worker_init(void);

#endif							/* QC_WORKER_H */
