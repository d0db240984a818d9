/*-------------------------------------------------------------------------
 *
 * schema.h
 *	  Checking a model's answer against output_schema (schema.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SCHEMA_H
#define QC_SCHEMA_H

#include "utils/jsonb.h"

/*
 * output_schema.  qc_schema_mismatch() returns the first way the
 * answer does not match the schema ("$.city is a number, where the schema
 * wants a string"), or NULL when it matches; qc_schema_strict_ok() says
 * whether the schema may be sent with "strict": true.
 */
extern char *qc_schema_mismatch(Jsonb *schema, Jsonb *answer);
extern bool qc_schema_strict_ok(Jsonb *schema);

#endif							/* QC_SCHEMA_H */
