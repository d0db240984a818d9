/*-------------------------------------------------------------------------
 *
 * json.h
 *	  JSON checks on response bodies (cJSON).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_JSON_H
#define QC_JSON_H

/*
 * Is text (NUL-terminated, len bytes) one complete JSON value that
 * PostgreSQL's jsonb can also hold?  jsonb refuses some documents cJSON
 * accepts (the \u0000 escape, malformed \u escapes, numbers beyond
 * numeric's range): they answer false, so jsonb_in() never fails on a
 * document that answered true.
 */
extern bool qc_json_is_valid(const char *text, size_t len);

#endif							/* QC_JSON_H */
