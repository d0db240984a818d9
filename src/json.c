/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Validate JSON response bodies with cJSON, and read jsonb from C.
 *
 * cJSON parses with malloc and keeps no global state; each parse tree is
 * freed before control returns, and nothing between parse and free can
 * raise an error, so no allocation outlives a call.  Its nesting limit
 * (CJSON_NESTING_LIMIT) bounds the recursion on hostile input.
 *
 * Documents the code must look into (LLM replies, search results, tool
 * arguments) are validated that way and then parsed into jsonb, so that
 * everything read from them is palloc'd and goes away with its memory
 * context, whatever error interrupts the reading.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <cJSON.h>

#include "utils/builtins.h"
#include "utils/numeric.h"

#include "json.h"

bool
qc_json_is_valid(const char *text, size_t len)
{
	cJSON	   *tree;

	if (len == 0 || memchr(text, '\0', len) != NULL)
		return false;
	tree = cJSON_ParseWithLengthOpts(text, len, NULL, false);
	if (tree == NULL)
		return false;
	cJSON_Delete(tree);

	/* trailing garbage: cJSON stops at the end of the first value */
	{
		const char *end = NULL;

		tree = cJSON_ParseWithOpts(text, &end, true);
		if (tree == NULL)
			return false;
		cJSON_Delete(tree);
	}
	return strstr(text, "\\u0000") == NULL;
}

Jsonb *
qc_jsonb_parse(const char *text)
{
	if (!qc_json_is_valid(text, strlen(text)))
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

bool
qc_jsonb_is_array(JsonbContainer *c)
{
	return JsonContainerIsArray(c) && !JsonContainerIsScalar(c);
}

bool
qc_jsonb_is_object(JsonbContainer *c)
{
	return JsonContainerIsObject(c);
}

JsonbValue *
qc_jsonb_get(JsonbContainer *c, const char *key)
{
	JsonbValue *v;

	if (c == NULL || !JsonContainerIsObject(c))
		return NULL;
	v = getKeyJsonValueFromContainer(c, key, strlen(key), NULL);
	return (v == NULL || v->type == jbvNull) ? NULL : v;
}

/* A member that is an object (want_array false) or an array. */
static JsonbContainer *
get_container(JsonbContainer *c, const char *key, bool want_array)
{
	JsonbValue *v = qc_jsonb_get(c, key);

	if (v == NULL || v->type != jbvBinary)
		return NULL;
	if (want_array ? !qc_jsonb_is_array(v->val.binary.data) :
		!JsonContainerIsObject(v->val.binary.data))
		return NULL;
	return v->val.binary.data;
}

JsonbContainer *
qc_jsonb_get_object(JsonbContainer *c, const char *key)
{
	return get_container(c, key, false);
}

JsonbContainer *
qc_jsonb_get_array(JsonbContainer *c, const char *key)
{
	return get_container(c, key, true);
}

char *
qc_jsonb_get_string(JsonbContainer *c, const char *key)
{
	JsonbValue *v = qc_jsonb_get(c, key);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

bool
qc_jsonb_get_int64(JsonbContainer *c, const char *key, int64 *out)
{
	JsonbValue *v = qc_jsonb_get(c, key);
	char	   *digits;
	char	   *end;
	long long	n;

	if (v == NULL || v->type != jbvNumeric)
		return false;
	digits = DatumGetCString(DirectFunctionCall1(numeric_out,
												 NumericGetDatum(v->val.numeric)));
	errno = 0;
	n = strtoll(digits, &end, 10);
	if (errno != 0 || end == digits || *end != '\0')
		return false;			/* out of range, or not an integer */
	*out = (int64) n;
	return true;
}

char *
qc_jsonb_value_text(JsonbValue *v)
{
	Jsonb	   *jb = JsonbValueToJsonb(v);

	return JsonbToCString(NULL, &jb->root, VARSIZE(jb));
}
