/*-------------------------------------------------------------------------
 *
 * article.h
 *	  The main content of a page (article.c), for the writers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ARTICLE_H
#define QC_ARTICLE_H

#include <libxml/tree.h>

#include "nodes/pg_list.h"

/*
 * The nodes that make up the main content, in document order; what is
 * left out inside them is marked dropped (html.h).
 */
extern List *qc_article_select(xmlDoc *doc);

#endif							/* QC_ARTICLE_H */
