/*-------------------------------------------------------------------------
 *
 * enrichfeed.h
 *	  The async worker's turn at enrichments (enrichfeed.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ENRICHFEED_H
#define QC_ENRICHFEED_H

/* Feed each enrichment with stale rows, as its owner; in a transaction. */
extern void qc_enrich_feed(void);

#endif							/* QC_ENRICHFEED_H */
