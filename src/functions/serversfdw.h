/*-------------------------------------------------------------------------
 *
 * serversfdw.h
 *	  The queryclaw foreign-data wrapper's SQL side (serversfdw.c): its
 *	  validator, and the hook that refuses a second server with the same
 *	  url.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SERVERSFDW_H
#define QC_SERVERSFDW_H

/* _PG_init: the object access hook behind qc_server_check_unique(). */
extern void qc_serversfdw_init(void);

#endif							/* QC_SERVERSFDW_H */
