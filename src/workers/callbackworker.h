/*-------------------------------------------------------------------------
 *
 * callbackworker.h
 *	  The callback workers (callbackworker.c): the callbacks of
 *	  asynchronous requests, called apart from the async workers that send
 *	  the requests, fairly between roles.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_CALLBACKWORKER_H
#define QC_CALLBACKWORKER_H

/*
 * _PG_init, while preloading (from qc_asyncworker_init): one callback
 * worker per async worker.
 */
extern void qc_callbackworker_init(void);

#endif							/* QC_CALLBACKWORKER_H */
