/*-------------------------------------------------------------------------
 *
 * markdown.h
 *	  HTML written out as Markdown (markdown.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_MARKDOWN_H
#define QC_MARKDOWN_H

#include <libxml/tree.h>

#include "nodes/pg_list.h"

/* The nodes (with what they contain) as UTF-8 Markdown, links absolute. */
extern char *qc_write_markdown(List *roots, const char *base_url);

#endif							/* QC_MARKDOWN_H */
