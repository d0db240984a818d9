/*-------------------------------------------------------------------------
 *
 * enrichfeed.h
 *	  The async worker's turn at enrichments (enrichfeed.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ENRICHFEED_H
#define QC_ENRICHFEED_H

#include "datatype/timestamp.h"

/*
 * Feed each enrichment with stale rows, as its owner, in the service
 * step's transaction: at the chores (chores true), and soon again while
 * the last turn found rows to ask.
 */
extern void qc_enrich_feed(TimestampTz now, bool chores);

#endif							/* QC_ENRICHFEED_H */
