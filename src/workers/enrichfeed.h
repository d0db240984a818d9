/*-------------------------------------------------------------------------
 *
 * enrichfeed.h
 *	  The enrichment worker, which feeds enrichments (enrichfeed.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ENRICHFEED_H
#define QC_ENRICHFEED_H

/* Register the enrichment worker (at shared_preload_libraries time). */
extern void qc_enrich_worker_init(void);

#endif							/* QC_ENRICHFEED_H */
