/*-------------------------------------------------------------------------
 *
 * shim.h
 *	  The backend stand-in (shim.c) as the fuzz targets see it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_FUZZ_SHIM_H
#define QC_FUZZ_SHIM_H

#include "fuzz.h"

/* Free everything palloc'd since the last reset (a memory context reset). */
extern void qc_fuzz_reset(void);

/* The input as a palloc'd NUL-terminated string (cut at a NUL byte). */
extern char *qc_fuzz_cstring(const uint8_t *data, size_t size);

#endif							/* QC_FUZZ_SHIM_H */
