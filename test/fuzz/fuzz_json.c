/*-------------------------------------------------------------------------
 *
 * fuzz_json.c
 *	  Fuzz target: the JSON check on response bodies (src/common/json.c).
 *
 * What qc_json_is_valid() accepts is handed to jsonb_in() by api_call()
 * and web_fetch(..., 'json'), so it must be JSON that PostgreSQL accepts
 * too: besides memory safety, the target checks that every accepted input
 * also passes PostgreSQL's own JSON parser (src/common/jsonapi.c, the
 * parser jsonb_in uses, here in its frontend build).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"

#include "json.h"
#include "shim.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = qc_fuzz_cstring(data, size);
	size_t		len = strlen(text);

	/* bodies reach the check as valid text in the database encoding */
	if (pg_encoding_verifymbstr(PG_UTF8, text, len) != len)
	{
		qc_fuzz_reset();
		return 0;
	}
	if (qc_json_is_valid(text, len))
	{
		JsonLexContext *lex = makeJsonLexContextCstringLen(text, len, PG_UTF8, true);

		FUZZ_CHECK(pg_parse_json(lex, &nullSemAction) == JSON_SUCCESS,
				   "JSON accepted that PostgreSQL rejects");
	}
	qc_fuzz_reset();
	return 0;
}
