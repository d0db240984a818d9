/*-------------------------------------------------------------------------
 *
 * response.c
 *	  Turn a finished call into what the SQL functions return.
 *
 * web_fetch returns text in one of its formats; api_call returns an object
 * describing the whole response, with the body as jsonb when it is JSON, as
 * a string when it is text, and base64-encoded when it is binary.  Either
 * way the result is valid in the database encoding and no longer than the
 * call's max_chars.
 *
 * The asynchronous queue keeps its results, and hands them to callbacks,
 * redacted (qc_response_redact): the rules follow the results' shapes,
 * URLs and headers redacted as the audit log redacts them, what the server
 * or the model said only cleared of the secrets the request sent.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/base64.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "compat.h"
#include "content.h"
#include "guc.h"
#include "html.h"
#include "json.h"
#include "redact.h"
#include "response.h"

/* The formats, in the order of QcFormat */
static const struct
{
	const char *name;
	QcHtmlFormat html;			/* what HTML is turned into */
}			formats[] = {
	{"text", QC_HTML_TEXT},
	{"article", QC_HTML_ARTICLE},
	{"markdown", QC_HTML_MARKDOWN},
	{"raw", QC_HTML_NONE},
	{"json", QC_HTML_NONE},
	{"metadata", QC_HTML_NONE},
};

StaticAssertDecl(lengthof(formats) == QC_FORMAT_METADATA + 1,
				 "formats[] must list every QcFormat");

QcFormat
qc_format_parse(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(formats); i++)
	{
		if (strcmp(name, formats[i].name) == 0)
			return (QcFormat) i;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unsupported format \"%s\"", name),
			 errhint("Use 'text', 'article', 'markdown', 'raw', 'json' or 'metadata'.")));
	pg_unreachable();
}

const char *
qc_format_name(QcFormat format)
{
	return formats[format].name;
}

QcHtmlFormat
qc_format_html(QcFormat format)
{
	return formats[format].html;
}

int
qc_clamp_max_chars(bool given, int requested)
{
	if (!given)
		return qc_max_chars;
	if (requested < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_chars must be at least 1")));
	return Min(requested, qc_max_chars);
}

int
qc_effective_max_chars(FunctionCallInfo fcinfo, int argno)
{
	bool		given = PG_NARGS() > argno && !PG_ARGISNULL(argno);

	return qc_clamp_max_chars(given, given ? PG_GETARG_INT32(argno) : 0);
}

/* No Content-Type: treat the body as HTML if it starts like HTML. */
static bool
looks_like_html(const char *data, size_t len)
{
	size_t		i = 0;

	while (i < len && isspace((unsigned char) data[i]))
		i++;
	return len - i >= 5 &&
		(pg_strncasecmp(data + i, "<!doc", 5) == 0 ||
		 pg_strncasecmp(data + i, "<html", 5) == 0);
}

/* Is the body HTML: by its Content-Type, or without one, by its start? */
static bool
body_is_html(const QcCall *call)
{
	if (call->content_type != NULL)
		return qc_content_type_is_html(call->content_type);
	return looks_like_html(call->response_body, call->response_len);
}

/*
 * The charset to decode the body with: the header's, and for HTML, decided
 * as browsers decide it (<meta>, then a guess), so that 'raw' and api_call
 * read a page the way 'text' does.
 */
static const char *
body_charset(const QcCall *call)
{
	char	   *header = qc_content_type_charset(call->content_type);

	if (body_is_html(call))
		return qc_html_charset(call->response_body, call->response_len, header);
	return header;
}

/* Record a failure to shape the response; always returns NULL. */
static char *
fail(QcCall *call, int sqlerrcode, const char *message, const char *detail,
	 const char *hint)
{
	qc_call_set_failure(call, QC_OUTCOME_ERROR, sqlerrcode, message, detail, hint);
	return NULL;
}

/*
 * Text made from the body, cleared once more of the secrets of the call's
 * mapping (qc_server_redact_response cleared the bytes): a conversion can
 * make one appear that the bytes did not show as it is (a charset such as
 * UTF-16, HTML character references); then cut at the call's limit, and
 * what was returned recorded.
 */
static char *
finish_text(QcCall *call, char *text)
{
	List	   *secrets = qc_call_mapping_secrets(call);

	if (secrets != NIL)
		text = unconstify(char *, qc_redact_secrets(text, secrets));
	call->truncated = qc_clip_chars(text, call->max_chars) || call->response_cut;
	call->chars = qc_count_chars(text);
	return text;
}

/*
 * A JSON document to return whole (what names it in the error): it cannot
 * be cut at max_chars without becoming invalid, so a longer one is an
 * error.
 */
static char *
finish_json(QcCall *call, char *text, const char *what, const char *hint)
{
	if (qc_exceeds_chars(text, call->max_chars))
		return fail(call, ERRCODE_PROGRAM_LIMIT_EXCEEDED,
					psprintf("%s from %s is longer than %d characters", what,
							 qc_redact_url(call->final_url), call->max_chars),
					"A JSON document cannot be cut without making it invalid.",
					hint);
	return finish_text(call, text);
}

/* Is the body text of some kind: HTML, JSON, text/, or of no stated type? */
static bool
body_is_readable(const QcCall *call)
{
	return body_is_html(call) || call->content_type == NULL ||
		qc_content_type_is_text(call->content_type);
}

char *
qc_response_text(QcCall *call, QcFormat format)
{
	const char *ctype = call->content_type;
	char	   *header_charset = qc_content_type_charset(ctype);
	char	   *text;

	if (format == QC_FORMAT_RAW)
		return finish_text(call, qc_to_server_text(call->response_body, call->response_len,
												   body_charset(call)));

	if (format == QC_FORMAT_JSON)
	{
		text = qc_to_server_text(call->response_body, call->response_len, header_charset);
		/* one too long to return is refused unparsed: parsing cannot stop */
		if (!qc_exceeds_chars(text, call->max_chars) &&
			!qc_json_is_valid(text, strlen(text)))
			return fail(call, ERRCODE_INVALID_TEXT_REPRESENTATION,
						psprintf("response from %s is not valid JSON",
								 qc_redact_url(call->final_url)),
						call->response_cut ?
						psprintf("The response was cut at queryclaw.max_bytes (%d kB).", qc_max_bytes) :
						NULL,
						NULL);
		return finish_json(call, text, "JSON response",
						   "Raise max_chars (up to queryclaw.max_chars), or use format 'raw'.");
	}

	if (!body_is_readable(call))
		return fail(call, ERRCODE_INVALID_PARAMETER_VALUE,
					psprintf("cannot convert content type \"%s\" to %s", ctype,
							 qc_format_name(format)),
					psprintf("The response from %s is not text, HTML or JSON.",
							 qc_redact_url(call->final_url)),
					"queryclaw.api_call() returns such bodies base64-encoded.");

	/* metadata: what an HTML page says about itself; other text says nothing */
	if (format == QC_FORMAT_METADATA)
	{
		bool		html = body_is_html(call);

		(void) qc_html_convert(html ? call->response_body : "", html ? call->response_len : 0,
							   header_charset, QC_HTML_NONE, call->final_url,
							   &text);
		return finish_json(call, text, "metadata",
						   "Raise max_chars (up to queryclaw.max_chars).");
	}

	/* text, article, markdown: HTML is converted, other text kept as it is */
	if (body_is_html(call))
		return finish_text(call, qc_html_convert(call->response_body, call->response_len,
												 header_charset,
												 qc_format_html(format),
												 call->final_url, NULL));
	return finish_text(call, qc_to_server_text(call->response_body, call->response_len,
											   header_charset));
}

/* A status other than 2xx: the error quotes the start of the body. */
static char *
fail_status(QcCall *call)
{
	if (call->redirect_held != NULL)
	{
		/* http.c did not follow it: a 307/308 taking the body elsewhere */
		qc_call_set_failure(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
							psprintf("redirect to %s not followed", call->redirect_held),
							psprintf("HTTP status %ld from %s would send the request body to another origin.",
									 call->status, qc_redact_url(call->final_url)),
							"Send the request to the target URL itself if it is meant to receive the body.");
		return NULL;
	}
	qc_call_set_failure(call, QC_OUTCOME_HTTP_ERROR, ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
						psprintf("HTTP status %ld from %s", call->status,
								 qc_redact_url(call->final_url)),
						qc_text_quote(qc_to_server_text(call->response_body, call->response_len, NULL)),
						"Use queryclaw.api_call() to read responses of any status.");
	return NULL;
}

char *
qc_fetch_result(QcCall *call, QcFormat format)
{
	char	   *text;

	if (call->error_code != 0)
		return NULL;
	if (!qc_call_status_ok(call))
		return fail_status(call);
	text = qc_response_text(call, format);
	if (text != NULL)
		call->outcome = QC_OUTCOME_OK;
	return text;
}

/* One name of the headers object, and its value (or values, joined). */
typedef struct HeaderEntry
{
	char	   *name;			/* the key: lower case */
	const char *value;			/* the first value, in the header block */
	int			value_len;
	StringInfo	joined;			/* once the name repeats: all its values */
} HeaderEntry;

static uint32
header_name_hash(const void *key, Size keysize)
{
	const char *name = *(char *const *) key;

	return hash_bytes((const unsigned char *) name, strlen(name));
}

static int
header_name_match(const void *a, const void *b, Size keysize)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Note one header line in the table; false when it had no room for it. */
static bool
add_header(HTAB *table, HeaderEntry **kept, int *nkept, const char *line,
		   size_t len, const char *colon)
{
	char	   *name = asc_tolower(line, colon - line);
	const char *v = colon + 1;
	HeaderEntry *e;
	bool		found;

	while (*v == ' ' || *v == '\t')
		v++;
	e = hash_search(table, &name, *nkept < QC_MAX_HEADERS_KEPT ? HASH_ENTER : HASH_FIND,
					&found);
	if (e == NULL)
	{
		pfree(name);
		return false;
	}
	if (!found)
	{
		e->value = v;
		e->value_len = line + len - v;
		e->joined = NULL;
		kept[(*nkept)++] = e;
		return true;
	}
	pfree(name);
	if (e->joined == NULL)
	{
		e->joined = makeStringInfo();
		appendBinaryStringInfo(e->joined, e->value, e->value_len);
	}
	appendStringInfoString(e->joined, ", ");
	appendBinaryStringInfo(e->joined, v, line + len - v);
	return true;
}

/*
 * The result object is built as jsonb directly, member by member, rather
 * than written as JSON text and parsed back: the async worker makes one for
 * every response.  What the text's parse made of each piece is made here:
 * strings made valid in the server encoding as the whole text was
 * (qc_valid_text: its pieces met only ASCII around them), numbers as
 * numeric_in reads their text, a JSON document (a body, the metadata) as
 * jsonb_in reads it; jsonb sorts the members as it did.
 */
static void
push_key(JsonbParseState **st, const char *key)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = unconstify(char *, key);
	v.val.string.len = strlen(key);
	(void) pushJsonbValue(st, WJB_KEY, &v);
}

/* A member whose value is the string s (NULL: null). */
static void
push_string(JsonbParseState **st, const char *key, const char *s)
{
	JsonbValue	v;

	push_key(st, key);
	if (s == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvString;
		v.val.string.val = qc_valid_text(s);
		v.val.string.len = strlen(v.val.string.val);
	}
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

static void
push_bool(JsonbParseState **st, const char *key, bool b)
{
	JsonbValue	v;

	push_key(st, key);
	v.type = jbvBool;
	v.val.boolean = b;
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/* A member whose value is the number written as text. */
static void
push_number(JsonbParseState **st, const char *key, const char *text)
{
	JsonbValue	v;

	push_key(st, key);
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(text),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/* A member whose value is the JSON document json (one jsonb_in accepts). */
static void
push_document(JsonbParseState **st, const char *key, const char *json)
{
	Jsonb	   *doc = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														 CStringGetDatum(qc_valid_text(json))));
	JsonbValue	v;

	push_key(st, key);
	qc_jsonb_as_value(doc, &v);
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/*
 * Add the response headers (valid text, see http.c) as one object:
 * lower-case names, repeats joined with ", ".  Repeats are found through a
 * hash table, so the time is linear in the size of the header block.  The
 * first QC_MAX_HEADERS_KEPT names are kept; returns how many header lines
 * were left out for want of room.
 */
static int
push_headers_object(JsonbParseState **st, const char *block)
{
	HASHCTL		ctl;
	HTAB	   *table;
	HeaderEntry **kept = palloc(QC_MAX_HEADERS_KEPT * sizeof(HeaderEntry *));
	int			nkept = 0;
	int			dropped = 0;
	const char *line = strchr(block, '\n');	/* skip the status line */

	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(HeaderEntry);
	ctl.hash = header_name_hash;
	ctl.match = header_name_match;
	ctl.hcxt = CurrentMemoryContext;
	table = hash_create("queryclaw response headers", 32, &ctl,
						HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	while (line != NULL && *++line != '\0')
	{
		size_t		len = strcspn(line, "\r\n");
		const char *colon = memchr(line, ':', len);

		CHECK_FOR_INTERRUPTS();
		if (colon != NULL && colon > line &&
			!add_header(table, kept, &nkept, line, len, colon))
			dropped++;
		line = strchr(line, '\n');
	}

	push_key(st, "headers");
	(void) pushJsonbValue(st, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < nkept; i++)
	{
		HeaderEntry *e = kept[i];

		push_string(st, qc_valid_text(e->name),
					e->joined ? e->joined->data : pnstrdup(e->value, e->value_len));
	}
	(void) pushJsonbValue(st, WJB_END_OBJECT, NULL);
	hash_destroy(table);
	pfree(kept);
	return dropped;
}

/* Is the body text we can return as a string (rather than base64)? */
static bool
body_is_text(const QcCall *call)
{
	const char *ctype = call->content_type;

	if (ctype != NULL)
		return qc_content_type_is_text(ctype) || qc_content_type_is_html(ctype) ||
			qc_content_type_is_json(ctype);
	return qc_is_utf8(call->response_body, call->response_len);
}

/* Add the body: jsonb, a string, or base64; sets chars and truncated. */
static void
push_body(JsonbParseState **st, QcCall *call)
{
	char	   *text;

	if (call->response_len == 0)
	{
		push_string(st, "body", NULL);
		call->chars = 0;
		call->truncated = false;
		return;
	}
	if (body_is_text(call))
	{
		text = qc_to_server_text(call->response_body, call->response_len, body_charset(call));
		if (qc_content_type_is_json(call->content_type) && !call->response_cut &&
			!qc_exceeds_chars(text, call->max_chars) &&
			qc_json_is_valid(text, strlen(text)))
		{
			push_document(st, "body", text);
			call->chars = qc_count_chars(text);
			call->truncated = false;
			return;
		}
		push_string(st, "body", finish_text(call, text));
		return;
	}
	else
	{
		/* whole base64 quanta, so that the cut text still decodes */
		size_t		raw = Min(call->response_len, (size_t) (call->max_chars / 4) * 3);
		int			enclen = pg_b64_enc_len(raw);
		char	   *encoded = palloc(enclen + 1);
		int			n = qc_b64_encode(call->response_body, raw, encoded, enclen);

		encoded[Max(n, 0)] = '\0';
		push_string(st, "body", encoded);
		push_string(st, "body_encoding", "base64");
		call->chars = Max(n, 0);
		call->truncated = raw < call->response_len || call->response_cut;
	}
}

Jsonb *
qc_response_jsonb(QcCall *call)
{
	JsonbParseState *st = NULL;
	JsonbValue *whole;
	int			headers_dropped;

	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	push_number(&st, "status", psprintf("%ld", call->status));
	push_bool(&st, "ok", qc_call_status_ok(call));
	push_string(&st, "url", call->final_url);
	push_string(&st, "content_type", call->content_type);
	headers_dropped = push_headers_object(&st, call->response_headers);
	if (headers_dropped > 0)
		push_number(&st, "headers_dropped", psprintf("%d", headers_dropped));
	push_body(&st, call);
	call->truncated = call->truncated || headers_dropped > 0;
	if (call->response_len > 0 && body_is_html(call))
	{
		char	   *metadata;

		/* what the page says about itself, from the whole body */
		(void) qc_html_convert(call->response_body, call->response_len,
							   qc_content_type_charset(call->content_type),
							   QC_HTML_NONE, call->final_url, &metadata);
		push_document(&st, "metadata", metadata);
	}
	push_bool(&st, "truncated", call->truncated);
	push_number(&st, "elapsed_ms", psprintf("%.3f", call->elapsed_ms));
	whole = pushJsonbValue(&st, WJB_END_OBJECT, NULL);

	/* the body as jsonb, the metadata: converted too, so cleared again */
	return qc_response_clear(JsonbValueToJsonb(whole), qc_call_mapping_secrets(call));
}

/* ---- results as the queue keeps them ---- */

/* What a part of a result is, and so how its strings are redacted */
typedef enum ResultPart
{
	PART_PLAIN,					/* strings cleared of the secrets; members
								 * by their names */
	PART_URL,					/* a URL: as qc_redact_url() */
	PART_HEADERS,				/* an object of HTTP headers */
	PART_HEADER,				/* one header's value: as the audit log's */
	PART_CONTENT				/* what a server or a model said: only
								 * cleared of the secrets */
} ResultPart;

/* A redaction of a result under way. */
typedef struct ResultRedaction
{
	List	   *secrets;
	bool		build;			/* false: only find whether anything changes */
	JsonbParseState *state;
	JsonbValue *out;			/* the whole value, once built */
} ResultRedaction;

/* The part a member named name of a container of the given part is. */
static ResultPart
member_part(ResultPart container, const char *name)
{
	if (container == PART_HEADERS)
		return PART_HEADER;
	if (container != PART_PLAIN)
		return PART_CONTENT;
	if (strcmp(name, "url") == 0 || strcmp(name, "final_url") == 0)
		return PART_URL;
	if (strcmp(name, "headers") == 0)
		return PART_HEADERS;
	if (strcmp(name, "body") == 0 || strcmp(name, "content") == 0 ||
		strcmp(name, "answer") == 0 || strcmp(name, "metadata") == 0)
		return PART_CONTENT;
	return PART_PLAIN;
}

/* A string of a result, of the given part (name: a header's), redacted */
static const char *
redact_result_string(const char *s, ResultPart part, const char *name,
					 List *secrets)
{
	if (part == PART_URL)
		s = qc_redact_url(s);
	else if (part == PART_HEADER)
		s = qc_redact_header(name, s);
	return qc_redact_secrets(s, secrets);
}

static bool redact_container(JsonbContainer *container, ResultPart part,
							 ResultRedaction *rr);

/*
 * One item of a container (a key, a member's value, an element), of the
 * given part: whether it changes; when building, pushed, redacted.
 */
static bool
redact_item(JsonbIteratorToken token, JsonbValue *v, ResultPart part,
			const char *name, ResultRedaction *rr)
{
	bool		changed = false;

	if (v->type == jbvBinary)
	{
		ResultPart	inner = (part == PART_PLAIN || part == PART_HEADERS) ?
			part : PART_CONTENT;

		/* nothing can change in what a server said when there is no secret */
		if (inner != PART_CONTENT || rr->secrets != NIL)
			return redact_container(v->val.binary.data, inner, rr);
	}
	else if (v->type == jbvString &&
			 (rr->secrets != NIL || part == PART_URL || part == PART_HEADER))
	{
		char	   *s = pnstrdup(v->val.string.val, v->val.string.len);
		const char *shown = redact_result_string(s, part, name, rr->secrets);

		changed = strcmp(shown, s) != 0;
		v->val.string.val = (char *) shown;
		v->val.string.len = strlen(shown);
	}
	if (rr->build)
		rr->out = pushJsonbValue(&rr->state, token, v);
	return changed;
}

/*
 * Redact the items of a container of the given part; whether anything
 * changes.  Not building, it stops at the first change.
 */
static bool
redact_container(JsonbContainer *container, ResultPart part, ResultRedaction *rr)
{
	JsonbIterator *it = JsonbIteratorInit(container);
	JsonbIteratorToken token;
	JsonbValue	v;
	bool		changed = false;
	char	   *name = NULL;

	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (token == WJB_KEY)
		{
			name = pnstrdup(v.val.string.val, v.val.string.len);
			changed |= redact_item(token, &v, PART_CONTENT, NULL, rr);
		}
		else if (token == WJB_VALUE)
			changed |= redact_item(token, &v, member_part(part, name), name, rr);
		else if (token == WJB_ELEM)
			changed |= redact_item(token, &v, part == PART_HEADERS ? PART_CONTENT : part,
								   NULL, rr);
		else if (rr->build)
			rr->out = pushJsonbValue(&rr->state, token,
									 token == WJB_BEGIN_ARRAY && v.val.array.rawScalar ?
									 &v : NULL);
		if (changed && !rr->build)
			return true;
	}
	return changed;
}

/* result redacted from the top as a part of the given kind */
static Jsonb *
redact_result(Jsonb *result, ResultPart part, List *secrets)
{
	ResultRedaction rr = {secrets, false, NULL, NULL};

	/* most results need nothing: found without building anything */
	if (!redact_container(&result->root, part, &rr))
		return result;
	rr.build = true;
	(void) redact_container(&result->root, part, &rr);
	return JsonbValueToJsonb(rr.out);
}

Jsonb *
qc_response_redact(Jsonb *result, List *secrets)
{
	return redact_result(result, PART_PLAIN, secrets);
}

Jsonb *
qc_response_clear(Jsonb *result, List *secrets)
{
	/* all of it is content: only cleared of the secrets */
	return secrets == NIL ? result : redact_result(result, PART_CONTENT, secrets);
}
