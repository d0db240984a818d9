/*-------------------------------------------------------------------------
 *
 * latchwait.h
 *	  Interruptible pauses on the latch (latchwait.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_LATCHWAIT_H
#define QC_LATCHWAIT_H

#include "compat.h"

/* Wait ms on the latch, shown as event; a cancel ends it (raising). */
extern void qc_latch_sleep(int64 ms, QcWaitEvent event);

#endif							/* QC_LATCHWAIT_H */
