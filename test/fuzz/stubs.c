/*-------------------------------------------------------------------------
 *
 * stubs.c
 *	  Backend functions that the fuzzed files refer to but that the fuzzed
 *	  functions never call: src/common/json.c reads jsonb documents too, which
 *	  the fuzz targets leave alone.  Each one only has to satisfy the
 *	  linker, and aborts if it is ever called.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

static void
never_called(const char *name)
{
	fprintf(stderr, "stubs: %s was called, but it is only a stand-in for the linker\n", name);
	abort();
}

Datum
DirectFunctionCall1Coll(PGFunction func, Oid collation, Datum arg1)
{
	never_called("DirectFunctionCall1Coll");
	return (Datum) 0;
}

struct varlena *
pg_detoast_datum(struct varlena *datum)
{
	never_called("pg_detoast_datum");
	return NULL;
}

Datum
jsonb_in(PG_FUNCTION_ARGS)
{
	never_called("jsonb_in");
	return (Datum) 0;
}

Datum
numeric_out(PG_FUNCTION_ARGS)
{
	never_called("numeric_out");
	return (Datum) 0;
}

JsonbValue *
getKeyJsonValueFromContainer(JsonbContainer *container, const char *keyVal,
							 int keyLen, JsonbValue *res)
{
	never_called("getKeyJsonValueFromContainer");
	return NULL;
}

Jsonb *
JsonbValueToJsonb(JsonbValue *val)
{
	never_called("JsonbValueToJsonb");
	return NULL;
}

bool
JsonbExtractScalar(JsonbContainer *jbc, JsonbValue *res)
{
	never_called("JsonbExtractScalar");
	return false;
}

char *
JsonbToCString(StringInfo out, JsonbContainer *in, int estimated_len)
{
	never_called("JsonbToCString");
	return NULL;
}
