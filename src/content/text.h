/*-------------------------------------------------------------------------
 *
 * text.h
 *	  HTML written out as plain text (text.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_TEXT_H
#define QC_TEXT_H

#include <libxml/tree.h>

#include "nodes/pg_list.h"

/* The nodes (with what they contain) as UTF-8 text; title goes first. */
extern char *qc_write_text(List *roots, const char *title);

#endif							/* QC_TEXT_H */
