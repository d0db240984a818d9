/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Validate JSON response bodies with cJSON, read jsonb from C, and
 *	  write the JSON strings of the results the SQL functions build.
 *
 * cJSON parses with malloc and keeps no global state; each parse tree is
 * freed before control returns, and nothing between parse and free can
 * raise an error, so no allocation outlives a call.  Its nesting limit
 * (CJSON_NESTING_LIMIT) bounds the recursion on hostile input.
 *
 * What passes is handed to jsonb_in(), so cJSON's word is not the last:
 * cJSON reads a malformed \u escape as U+0000 and takes numbers no numeric
 * can hold.  PostgreSQL's own JSON parser, which jsonb_in() runs, then
 * checks the document, and each number is checked against numeric's
 * limits, so that what jsonb_in() would refuse is reported as not JSON
 * here instead of as an error there.
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
#include <limits.h>
#include <cJSON.h>

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/numeric.h"

#include "compat.h"
#include "json.h"

/* numeric's limits (utils/adt/numeric.c): the largest display scale, */
#define NUMERIC_DSCALE_LIMIT 16383
/* the power of ten of the largest leading digit (base-10000 weight 32767), */
#define NUMERIC_DECIMAL_WEIGHT_LIMIT 131071
/* and the exponent numeric_in() accepts at all */
#define NUMERIC_EXPONENT_LIMIT (INT_MAX / 2)

/*
 * Can numeric hold this JSON number (valid JSON syntax)?  numeric_in()
 * refuses, as "value overflows numeric format", more than 16383 digits
 * after the decimal point, a first significant digit at 10^131072 or
 * beyond, and an exponent of INT_MAX/2 or more.
 */
static bool
number_fits_numeric(const char *num)
{
	const char *p = num + (*num == '-');
	long long	intdigits = strspn(p, "0123456789");
	long long	fracdigits = 0;
	long long	exponent = 0;
	long long	first = LLONG_MIN;	/* power of ten of the first non-zero digit */
	const char *frac;

	for (long long i = 0; i < intdigits && first == LLONG_MIN; i++)
		if (p[i] != '0')
			first = intdigits - 1 - i;
	frac = p + intdigits + (p[intdigits] == '.');
	if (p[intdigits] == '.')
		fracdigits = strspn(frac, "0123456789");
	for (long long i = 0; i < fracdigits && first == LLONG_MIN; i++)
		if (frac[i] != '0')
			first = -(i + 1);
	if (frac[fracdigits] == 'e' || frac[fracdigits] == 'E')
	{
		errno = 0;
		exponent = strtoll(frac + fracdigits + 1, NULL, 10);
		if (errno != 0 || exponent >= NUMERIC_EXPONENT_LIMIT ||
			exponent <= -NUMERIC_EXPONENT_LIMIT)
			return false;
	}
	if (fracdigits - exponent > NUMERIC_DSCALE_LIMIT)
		return false;
	return first == LLONG_MIN || first + exponent <= NUMERIC_DECIMAL_WEIGHT_LIMIT;
}

/* Scalar callback: note a number that numeric cannot hold. */
static QcJsonActionResult
check_scalar(void *state, char *token, JsonTokenType tokentype)
{
	if (tokentype == JSON_TOKEN_NUMBER && !number_fits_numeric(token))
		*(bool *) state = false;
	QC_JSON_ACTION_DONE;
}

/*
 * Would jsonb_in() accept the document?  Its parser, with escapes
 * processed (which refuses \u0000), and its numbers.
 */
static bool
jsonb_accepts(const char *text, size_t len)
{
	bool		numbers_fit = true;
	JsonSemAction sem = {0};
	JsonLexContext *lex;

	sem.semstate = &numbers_fit;
	sem.scalar = check_scalar;
	lex = qc_json_lex_cstring(unconstify(char *, text), len,
							  GetDatabaseEncoding(), true);
	return pg_parse_json(lex, &sem) == JSON_SUCCESS && numbers_fit;
}

bool
qc_json_is_valid(const char *text, size_t len)
{
	cJSON	   *tree;
	const char *end = NULL;

	if (len == 0 || len > INT_MAX || memchr(text, '\0', len) != NULL)
		return false;
	tree = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (tree == NULL)
		return false;
	cJSON_Delete(tree);

	/* cJSON stops at the end of the first value: only whitespace may follow */
	while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' ||
								*end == '\r'))
		end++;
	if (end != text + len)
		return false;
	return jsonb_accepts(text, len);
}

Jsonb *
qc_jsonb_parse(const char *text)
{
	if (!qc_json_is_valid(text, strlen(text)))
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

void
qc_jsonb_as_value(Jsonb *j, JsonbValue *v)
{
	if (JB_ROOT_IS_SCALAR(j))
		(void) JsonbExtractScalar(&j->root, v);
	else
	{
		v->type = jbvBinary;
		v->val.binary.data = &j->root;
		v->val.binary.len = VARSIZE(j) - VARHDRSZ;
	}
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

void
qc_json_append_string(StringInfo out, const char *value)
{
	if (value != NULL)
		escape_json(out, value);
	else
		appendStringInfoString(out, "null");
}
