/*-------------------------------------------------------------------------
 *
 * bgsession.h
 *	  A background worker's connection that its database cannot steer
 *	  (bgsession.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_BGSESSION_H
#define QC_BGSESSION_H

extern void qc_bgsession_connect(const char *dbname);

#endif							/* QC_BGSESSION_H */
