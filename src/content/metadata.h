/*-------------------------------------------------------------------------
 *
 * metadata.h
 *	  What a page says about itself (metadata.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_METADATA_H
#define QC_METADATA_H

#include <libxml/tree.h>

#include "nodes/pg_list.h"

/*
 * The page's metadata as a JSON object (UTF-8); with doc NULL, the object
 * with every value null.
 */
extern char *qc_metadata_json(xmlDoc *doc, const char *base_url);

#endif							/* QC_METADATA_H */
