/*-------------------------------------------------------------------------
 *
 * asyncworker.h
 *	  The async workers, which run the queue of asynchronous requests
 *	  (asyncworker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ASYNCWORKER_H
#define QC_ASYNCWORKER_H

/* _PG_init, while preloading: register queryclaw.async_workers workers. */
extern void qc_asyncworker_init(void);

#endif							/* QC_ASYNCWORKER_H */
