/*-------------------------------------------------------------------------
 *
 * schema.c
 *	  output_schema: checking a model's JSON answer against the JSON Schema
 *	  the caller gave, and deciding whether the schema may be sent with
 *	  "strict": true.
 *
 * The keywords that say what an answer looks like are checked: type (one
 * or a list; "integer" is a number without a fraction), enum, const,
 * properties, required, additionalProperties, items, minItems, maxItems,
 * minLength, maxLength, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, anyOf, oneOf, allOf, and $ref to "#/$defs/..." or
 * "#/definitions/...".  Others (pattern, format, ...) are not: an answer is
 * never refused for what this file does not read.  The first mismatch is
 * reported with its place in the answer ($, $.city, $.items[2]).
 *
 * Strict mode (OpenAI's structured outputs) needs an object at the root,
 * every object schema closed (additionalProperties false) with all its
 * properties required, and none of the keywords it does not support
 * (allOf, oneOf, not, if, patternProperties, minLength...); a schema that
 * is not so is sent without "strict", and still checked here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "json.h"
#include "schema.h"

/* Deeper than this, a schema ($ref cycles included) is not followed. */
#define SCHEMA_MAX_DEPTH 64

typedef struct Check
{
	JsonbContainer *root;		/* the whole schema, for $ref */
	int			depth;
} Check;

static char *mismatch(Check *ck, JsonbContainer *schema, JsonbValue *v, const char *path);

/* The JSON type name of a value, as schemas spell them. */
static const char *
type_of(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvBool:
			return "boolean";
		case jbvNumeric:
			return "number";
		case jbvString:
			return "string";
		case jbvBinary:
			return qc_jsonb_is_array(v->val.binary.data) ? "array" : "object";
		default:
			return "value";
	}
}

static bool
is_integer(JsonbValue *v)
{
	return v->type == jbvNumeric &&
		DatumGetBool(DirectFunctionCall2(numeric_eq, NumericGetDatum(v->val.numeric),
										 DirectFunctionCall1(numeric_floor,
															 NumericGetDatum(v->val.numeric))));
}

static bool
type_matches(JsonbValue *v, const char *type)
{
	if (strcmp(type, "integer") == 0)
		return is_integer(v);
	return strcmp(type, type_of(v)) == 0;
}

/* The i-th element of an array container, as a value. */
static JsonbValue *
element(JsonbContainer *array, int i)
{
	return getIthJsonbValueFromContainer(array, i);
}

static bool
values_equal(JsonbValue *a, JsonbValue *b)
{
	Jsonb	   *ja = JsonbValueToJsonb(a);
	Jsonb	   *jb = JsonbValueToJsonb(b);

	return compareJsonbContainers(&ja->root, &jb->root) == 0;
}

/* A value as short text for a message. */
static char *
shown(JsonbValue *v)
{
	char	   *text = qc_jsonb_value_text(v);

	if (strlen(text) > 60)
		text = psprintf("%.57s...", text);
	return text;
}

static char *
check_type(JsonbContainer *schema, JsonbValue *v, const char *path)
{
	JsonbValue *t = qc_jsonb_get(schema, "type");

	if (t == NULL)
		return NULL;
	if (t->type == jbvString)
	{
		char	   *type = pnstrdup(t->val.string.val, t->val.string.len);

		if (!type_matches(v, type))
			return psprintf("%s is %s %s, where the schema wants %s %s", path,
							strchr("aeiou", type_of(v)[0]) ? "an" : "a", type_of(v),
							strchr("aeiou", type[0]) ? "an" : "a", type);
	}
	else if (t->type == jbvBinary && qc_jsonb_is_array(t->val.binary.data))
	{
		int			n = JsonContainerSize(t->val.binary.data);

		for (int i = 0; i < n; i++)
		{
			JsonbValue *e = element(t->val.binary.data, i);

			if (e->type == jbvString &&
				type_matches(v, pnstrdup(e->val.string.val, e->val.string.len)))
				return NULL;
		}
		return psprintf("%s is %s, not of a type the schema allows (%s)", path,
						type_of(v), shown(t));
	}
	return NULL;
}

static char *
check_enum(JsonbContainer *schema, JsonbValue *v, const char *path)
{
	JsonbValue *c = qc_jsonb_get(schema, "const");
	JsonbContainer *e = qc_jsonb_get_array(schema, "enum");

	if (c != NULL && !values_equal(c, v))
		return psprintf("%s is %s, where the schema wants %s", path, shown(v), shown(c));
	if (e != NULL)
	{
		int			n = JsonContainerSize(e);

		for (int i = 0; i < n; i++)
			if (values_equal(element(e, i), v))
				return NULL;
		return psprintf("%s is %s, not one of the schema's enum values", path, shown(v));
	}
	return NULL;
}

/* A numeric keyword of the schema compared with a number. */
static char *
check_bound(JsonbContainer *schema, const char *key, JsonbValue *v, const char *path,
			int fails_when, bool or_equal)
{
	JsonbValue *b = qc_jsonb_get(schema, key);
	int			cmp;

	if (b == NULL || b->type != jbvNumeric || v->type != jbvNumeric)
		return NULL;
	cmp = DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(v->val.numeric),
											NumericGetDatum(b->val.numeric)));
	if (cmp == fails_when || (or_equal && cmp == 0))
		return psprintf("%s is %s, outside the schema's %s of %s", path, shown(v), key, shown(b));
	return NULL;
}

/* A count (characters, items) against a min or max keyword. */
static char *
check_count(JsonbContainer *schema, const char *key, int count, bool is_min,
			const char *path, const char *what)
{
	int64		limit;

	if (!qc_jsonb_get_int64(schema, key, &limit))
		return NULL;
	if (is_min ? count < limit : count > limit)
		return psprintf("%s has %d %s, where the schema's %s is " INT64_FORMAT,
						path, count, what, key, limit);
	return NULL;
}

static char *
check_scalar(JsonbContainer *schema, JsonbValue *v, const char *path)
{
	char	   *why = NULL;

	if (v->type == jbvNumeric &&
		((why = check_bound(schema, "minimum", v, path, -1, false)) ||
		 (why = check_bound(schema, "maximum", v, path, 1, false)) ||
		 (why = check_bound(schema, "exclusiveMinimum", v, path, -1, true)) ||
		 (why = check_bound(schema, "exclusiveMaximum", v, path, 1, true))))
		return why;
	if (v->type == jbvString)
	{
		int			chars = pg_mbstrlen_with_len(v->val.string.val, v->val.string.len);

		if ((why = check_count(schema, "minLength", chars, true, path, "characters")) ||
			(why = check_count(schema, "maxLength", chars, false, path, "characters")))
			return why;
	}
	return NULL;
}

/* Is key one of the schema's properties? */
static bool
declared(JsonbContainer *props, const char *key)
{
	return props != NULL && qc_jsonb_get(props, key) != NULL;
}

static char *
check_object(Check *ck, JsonbContainer *schema, JsonbContainer *obj, const char *path)
{
	JsonbContainer *props = qc_jsonb_get_object(schema, "properties");
	JsonbContainer *required = qc_jsonb_get_array(schema, "required");
	JsonbValue *extra = qc_jsonb_get(schema, "additionalProperties");
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *why;

	for (int i = 0; required != NULL && i < JsonContainerSize(required); i++)
	{
		JsonbValue *name = element(required, i);
		char	   *key;

		if (name->type != jbvString)
			continue;
		key = pnstrdup(name->val.string.val, name->val.string.len);
		if (findJsonbValueFromContainer(obj, JB_FOBJECT, name) == NULL)
			return psprintf("%s lacks the required property \"%s\"", path, key);
	}
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char	   *key;
		char	   *sub;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(k.val.string.val, k.val.string.len);
		(void) JsonbIteratorNext(&it, &v, true);
		sub = psprintf("%s.%s", path, key);
		if (declared(props, key))
		{
			JsonbValue *ps = qc_jsonb_get(props, key);

			if (ps->type == jbvBinary && (why = mismatch(ck, ps->val.binary.data, &v, sub)))
				return why;
		}
		else if (extra != NULL && extra->type == jbvBool && !extra->val.boolean)
			return psprintf("%s has the property \"%s\", which the schema does not allow", path, key);
		else if (extra != NULL && extra->type == jbvBinary &&
				 (why = mismatch(ck, extra->val.binary.data, &v, sub)))
			return why;
	}
	return NULL;
}

static char *
check_array(Check *ck, JsonbContainer *schema, JsonbContainer *arr, const char *path)
{
	JsonbContainer *items = qc_jsonb_get_object(schema, "items");
	int			n = JsonContainerSize(arr);
	char	   *why;

	if ((why = check_count(schema, "minItems", n, true, path, "items")) ||
		(why = check_count(schema, "maxItems", n, false, path, "items")))
		return why;
	for (int i = 0; items != NULL && i < n; i++)
		if ((why = mismatch(ck, items, element(arr, i), psprintf("%s[%d]", path, i))))
			return why;
	return NULL;
}

/* anyOf, oneOf, allOf. */
static char *
check_combinations(Check *ck, JsonbContainer *schema, JsonbValue *v, const char *path)
{
	static const char *const keys[] = {"allOf", "anyOf", "oneOf"};

	for (int k = 0; k < lengthof(keys); k++)
	{
		JsonbContainer *list = qc_jsonb_get_array(schema, keys[k]);
		int			matched = 0;
		char	   *first = NULL;

		if (list == NULL)
			continue;
		for (int i = 0; i < JsonContainerSize(list); i++)
		{
			JsonbValue *sub = element(list, i);
			char	   *why = sub->type == jbvBinary ?
				mismatch(ck, sub->val.binary.data, v, path) : NULL;

			if (why == NULL)
				matched++;
			else if (first == NULL)
				first = why;
			if (why != NULL && k == 0)
				return why;
		}
		if (k == 1 && matched == 0)
			return psprintf("%s matches none of the schema's anyOf choices (the first: %s)", path, first);
		if (k == 2 && matched != 1)
			return matched == 0 ?
				psprintf("%s matches none of the schema's oneOf choices (the first: %s)", path, first) :
				psprintf("%s matches more than one of the schema's oneOf choices", path);
	}
	return NULL;
}

/* The schema a "$ref" names, or NULL when it is not a local definition. */
static JsonbContainer *
resolve_ref(Check *ck, const char *ref)
{
	if (strncmp(ref, "#/$defs/", 8) == 0)
		return qc_jsonb_get_object(qc_jsonb_get_object(ck->root, "$defs"), ref + 8);
	if (strncmp(ref, "#/definitions/", 14) == 0)
		return qc_jsonb_get_object(qc_jsonb_get_object(ck->root, "definitions"), ref + 14);
	if (strcmp(ref, "#") == 0)
		return ck->root;
	return NULL;
}

static char *
mismatch(Check *ck, JsonbContainer *schema, JsonbValue *v, const char *path)
{
	char	   *ref = qc_jsonb_get_string(schema, "$ref");
	char	   *why = NULL;

	check_stack_depth();
	if (!qc_jsonb_is_object(schema) || ck->depth > SCHEMA_MAX_DEPTH)
		return NULL;
	ck->depth++;
	/* a $ref that is not a local definition is not followed */
	if (ref != NULL)
		schema = resolve_ref(ck, ref);
	if (schema != NULL &&
		!(why = check_type(schema, v, path)) &&
		!(why = check_enum(schema, v, path)) &&
		!(why = check_scalar(schema, v, path)) &&
		!(why = check_combinations(ck, schema, v, path)) &&
		v->type == jbvBinary)
		why = qc_jsonb_is_array(v->val.binary.data) ?
			check_array(ck, schema, v->val.binary.data, path) :
			check_object(ck, schema, v->val.binary.data, path);
	ck->depth--;
	return why;
}

char *
qc_schema_mismatch(Jsonb *schema, Jsonb *answer)
{
	Check		ck = {&schema->root, 0};
	JsonbValue	root;

	if (JB_ROOT_IS_SCALAR(answer))
		root = *element(&answer->root, 0);
	else
	{
		root.type = jbvBinary;
		root.val.binary.data = &answer->root;
		root.val.binary.len = VARSIZE(answer) - VARHDRSZ;
	}
	return mismatch(&ck, &schema->root, &root, "$");
}

static bool strict_ok(JsonbContainer *schema, int depth);

/* Is every value of an object, or every element of an array, strict_ok? */
static bool
all_strict_ok(JsonbContainer *c, int depth)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (c == NULL)
		return true;
	it = JsonbIteratorInit(c);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if ((tok == WJB_VALUE || tok == WJB_ELEM) &&
			(v.type != jbvBinary || !strict_ok(v.val.binary.data, depth + 1)))
			return false;
	return true;
}

/* An object schema is closed, and requires every property it declares. */
static bool
object_closed(JsonbContainer *schema)
{
	JsonbContainer *props = qc_jsonb_get_object(schema, "properties");
	char	   *type = qc_jsonb_get_string(schema, "type");
	JsonbValue *extra = qc_jsonb_get(schema, "additionalProperties");
	JsonbContainer *required = qc_jsonb_get_array(schema, "required");
	JsonbIterator *it;
	JsonbValue	k;
	JsonbIteratorToken tok;

	if (props == NULL && (type == NULL || strcmp(type, "object") != 0))
		return true;
	if (extra == NULL || extra->type != jbvBool || extra->val.boolean)
		return false;
	if (props == NULL)
		return true;
	it = JsonbIteratorInit(props);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		if (tok == WJB_KEY &&
			(required == NULL || findJsonbValueFromContainer(required, JB_FARRAY, &k) == NULL))
			return false;
	return true;
}

/* Does the schema use a keyword strict mode does not support? */
static bool
strict_unsupported(JsonbContainer *schema)
{
	static const char *const keys[] = {
		"allOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
		"dependentSchemas", "patternProperties", "unevaluatedProperties",
		"propertyNames", "minProperties", "maxProperties", "prefixItems",
		"unevaluatedItems", "contains", "uniqueItems", "minLength", "maxLength"
	};

	for (int i = 0; i < lengthof(keys); i++)
		if (qc_jsonb_get(schema, keys[i]) != NULL)
			return true;
	return false;
}

/* Does this schema, and every schema in it, meet strict mode's rules? */
static bool
strict_ok(JsonbContainer *schema, int depth)
{
	JsonbContainer *items = qc_jsonb_get_object(schema, "items");

	if (!qc_jsonb_is_object(schema) || depth > SCHEMA_MAX_DEPTH)
		return false;
	check_stack_depth();
	return !strict_unsupported(schema) && object_closed(schema) &&
		all_strict_ok(qc_jsonb_get_object(schema, "properties"), depth) &&
		all_strict_ok(qc_jsonb_get_object(schema, "$defs"), depth) &&
		all_strict_ok(qc_jsonb_get_object(schema, "definitions"), depth) &&
		all_strict_ok(qc_jsonb_get_array(schema, "anyOf"), depth) &&
		(items == NULL || strict_ok(items, depth + 1));
}

bool
qc_schema_strict_ok(Jsonb *schema)
{
	char	   *type = qc_jsonb_get_string(&schema->root, "type");

	return type != NULL && strcmp(type, "object") == 0 && strict_ok(&schema->root, 0);
}
