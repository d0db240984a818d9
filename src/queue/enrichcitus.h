/*-------------------------------------------------------------------------
 *
 * enrichcitus.h
 *	  Enrichments of Citus tables (enrichcitus.c): the write-back that
 *	  Citus can route.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ENRICHCITUS_H
#define QC_ENRICHCITUS_H

#include "nodes/pg_list.h"

/*
 * Is source a table Citus manages (distributed, reference or Citus local)?
 * The caller is in a transaction.
 */
extern bool qc_enrich_citus_managed(Oid source);

/*
 * An enrichment of a distributed table: its write-back functions made
 * again so that Citus routes them to the row's shard.  Called by the
 * extension's owner once enrichdef.c has made the enrichment's objects,
 * with the enrichment's id, its source (qualified name too), apply as a
 * SET list, its key and input columns and its owner.
 */
extern void qc_enrich_citus_make(int64 id, Oid source, const char *source_name,
								 const char *apply, List *keys, List *inputs, Oid owner);

#endif							/* QC_ENRICHCITUS_H */
