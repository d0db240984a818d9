/*-------------------------------------------------------------------------
 *
 * mcptools.c
 *	  An MCP server's tools offered to the model in llm_chat_tools (tools.c
 *	  runs them): "mcp:server" offers every tool the server offers,
 *	  "mcp:server/tool" one.
 *
 * Each is named server__tool, its characters outside the providers' rules
 * (letters, digits, '_' and '-', at most 64) written '_', and described
 * with its input schema as the server sent it: keywords such as $schema,
 * $defs and additionalProperties are kept, and nothing a $ref names is
 * ever fetched.  What a call returns goes back as text: images and audio
 * are described, never inlined (the model could not see them, and their
 * data would only use up its context).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "lib/stringinfo.h"

#include "json.h"
#include "mcp.h"
#include "mcptools.h"

/* The providers' rule for a function's name: ^[A-Za-z0-9_-]{1,64}$ */
#define QC_TOOL_NAME_MAX 64

static const char *
offer_name(const char *server, const char *tool)
{
	char	   *name = psprintf("%s__%s", server, tool);

	for (char *c = name; *c; c++)
		if (!isalnum((unsigned char) *c) && *c != '_' && *c != '-')
			*c = '_';
	if (strlen(name) > QC_TOOL_NAME_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tool \"%s\" of MCP server %s cannot be offered to the model", tool, server),
				 errdetail("Its name for the model, %s, is longer than the %d characters providers accept.",
						   name, QC_TOOL_NAME_MAX),
				 errhint("Give the server a shorter name, or offer other tools.")));
	return name;
}

static QcMcpOffer *
offer_of(const char *server, const QcMcpTool *t)
{
	QcMcpOffer *o = palloc(sizeof(QcMcpOffer));
	StringInfoData s;

	o->name = offer_name(server, t->name);
	o->server = server;
	o->tool = t->name;
	initStringInfo(&s);
	appendStringInfoString(&s, "{\"type\": \"function\", \"function\": {\"name\": ");
	qc_json_append_string(&s, o->name);
	appendStringInfoString(&s, ", \"description\": ");
	qc_json_append_string(&s, t->description ? t->description :
						  t->title ? t->title : t->name);
	appendStringInfo(&s, ", \"parameters\": %s}}",
					 JsonbToCString(NULL, &t->input_schema->root, VARSIZE(t->input_schema)));
	o->schema = s.data;
	return o;
}

List *
qc_mcp_offers(const char *spec)
{
	const char *slash = strchr(spec, '/');
	char	   *server = slash ? pnstrdup(spec, slash - spec) : pstrdup(spec);
	List	   *offers = NIL;
	ListCell   *lc;

	foreach(lc, qc_mcp_tools(server))
	{
		const QcMcpTool *t = lfirst(lc);

		if (slash == NULL || strcmp(t->name, slash + 1) == 0)
			offers = lappend(offers, offer_of(server, t));
	}
	if (slash != NULL && offers == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("MCP server %s offers no tool \"%s\"", server, slash + 1),
				 errhint("SELECT name FROM queryclaw.mcp_tools('%s') lists the tools it offers.", server)));
	return offers;
}

/* The size of base64 data once decoded. */
static size_t
decoded_size(const char *data)
{
	size_t		len = data ? strlen(data) : 0;
	size_t		pad = 0;

	while (pad < 2 && len > pad && data[len - 1 - pad] == '=')
		pad++;
	return len / 4 * 3 - pad;
}

/* One part of a tool's content, as the model reads it. */
static void
append_part(StringInfo out, JsonbContainer *part)
{
	char	   *type = qc_jsonb_get_string(part, "type");
	char	   *text = qc_jsonb_get_string(part, "text");
	char	   *data = qc_jsonb_get_string(part, "data");
	char	   *mime = qc_jsonb_get_string(part, "mimeType");
	JsonbContainer *resource = qc_jsonb_get_object(part, "resource");
	char	   *uri = qc_jsonb_get_string(resource ? resource : part, "uri");

	if (out->len > 0)
		appendStringInfoChar(out, '\n');
	if (type != NULL && strcmp(type, "text") == 0 && text != NULL)
		appendStringInfoString(out, text);
	else if (type != NULL && (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0))
		appendStringInfo(out, "[%s %s, %zu bytes, not shown]", type,
						 mime ? mime : "of unknown type", decoded_size(data));
	else
		appendStringInfo(out, "[%s%s%s]", type ? type : "content",
						 uri ? " " : "", uri ? uri : "");
}

char *
qc_mcp_tool_text(const char *server, const char *tool, Jsonb *args,
				 const char *audit_extra)
{
	Jsonb	   *r = qc_mcp_call(server, tool, args, audit_extra);
	JsonbContainer *content = qc_jsonb_get_array(&r->root, "content");
	JsonbValue *structured = qc_jsonb_get(&r->root, "structured");
	JsonbValue *is_error = qc_jsonb_get(&r->root, "is_error");
	StringInfoData out;

	initStringInfo(&out);
	if (content != NULL)
	{
		JsonbIterator *it = JsonbIteratorInit(content);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_ELEM && v.type == jbvBinary)
				append_part(&out, v.val.binary.data);
	}
	if (structured != NULL)
		appendStringInfo(&out, "%sstructured content: %s", out.len ? "\n" : "",
						 qc_jsonb_value_text(structured));
	if (is_error != NULL && is_error->type == jbvBool && is_error->val.boolean)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("tool %s of MCP server %s reported an error", tool, server),
				 errdetail("%s", out.data)));
	return out.data;
}
