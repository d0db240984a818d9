/*-------------------------------------------------------------------------
 *
 * json.h
 *	  JSON checks on response bodies (cJSON), and reading parsed jsonb
 *	  documents from C.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_JSON_H
#define QC_JSON_H

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

/*
 * Is text (NUL-terminated, len bytes) one complete JSON value that
 * PostgreSQL's jsonb can also hold?  jsonb refuses some documents cJSON
 * accepts (the \u0000 escape, malformed \u escapes, numbers beyond
 * numeric's range): they answer false, so jsonb_in() never fails on a
 * document that answered true.
 */
extern bool qc_json_is_valid(const char *text, size_t len);

/*
 * Parse text (database encoding) into jsonb; NULL when it is not valid JSON,
 * so that callers can say what they expected instead of jsonb's own error.
 */
extern Jsonb *qc_jsonb_parse(const char *text);

/*
 * Members of an object container.  Each returns NULL when c is not an
 * object, the member is absent or JSON null, or it has another type.
 */
extern JsonbValue *qc_jsonb_get(JsonbContainer *c, const char *key);
extern JsonbContainer *qc_jsonb_get_object(JsonbContainer *c, const char *key);
extern JsonbContainer *qc_jsonb_get_array(JsonbContainer *c, const char *key);
extern char *qc_jsonb_get_string(JsonbContainer *c, const char *key);

/* An integer member; false when absent, not a number or out of range. */
extern bool qc_jsonb_get_int64(JsonbContainer *c, const char *key, int64 *out);

/* Is c an array (not a scalar wrapped as one), or an object? */
extern bool qc_jsonb_is_array(JsonbContainer *c);
extern bool qc_jsonb_is_object(JsonbContainer *c);

/* A value (scalar or container) as JSON text. */
extern char *qc_jsonb_value_text(JsonbValue *v);

/*
 * j as one value to push into a document being built (pushJsonbValue): its
 * scalar, or the whole container.
 */
extern void qc_jsonb_as_value(Jsonb *j, JsonbValue *v);

/* Append value to out as a JSON string, or null when it is NULL. */
extern void qc_json_append_string(StringInfo out, const char *value);

#endif							/* QC_JSON_H */
