/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Validate JSON response bodies with cJSON.
 *
 * cJSON parses with malloc and keeps no global state; each parse tree is
 * freed before control returns, and nothing between parse and free can
 * raise an error, so no allocation outlives a call.  Its nesting limit
 * (CJSON_NESTING_LIMIT) bounds the recursion on hostile input.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <cJSON.h>

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
