/*-------------------------------------------------------------------------
 *
 * metadata.c
 *	  What a page says about itself: format 'metadata', and the metadata
 *	  key of api_call's result for HTML.
 *
 * Pages state their title, description, language, canonical URL, dates
 * and author in several places: <meta> elements (plain, Open Graph's og:
 * and article:, Twitter's, Dublin Core's), <link rel="canonical">,
 * schema.org JSON-LD scripts and microdata (itemprop), the lang attribute
 * and <title>.  Each field is taken from the most specific source the page
 * has, in a fixed order of preference (see the table below), so that the
 * answer does not depend on the order of the elements in the page.
 *
 * The result is a JSON object with every key present, null where the page
 * says nothing: url, title, description, lang, canonical_url, published,
 * modified, author, site_name, image, type.  URLs are made absolute against
 * the page's URL; dates are returned as the page wrote them (usually ISO
 * 8601).  Each value is cut at MAX_VALUE_BYTES.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <cJSON.h>

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

#include "html.h"
#include "metadata.h"
#include "json.h"

/* Longest value kept, in bytes of UTF-8 */
#define MAX_VALUE_BYTES 4000

typedef enum QcField
{
	F_TITLE, F_DESCRIPTION, F_LANG, F_CANONICAL, F_PUBLISHED, F_MODIFIED,
	F_AUTHOR, F_SITE_NAME, F_IMAGE, F_TYPE, NUM_FIELDS
} QcField;

/* JSON keys, in the order of QcField */
static const char *const field_keys[NUM_FIELDS] = {
	"title", "description", "lang", "canonical_url", "published", "modified",
	"author", "site_name", "image", "type",
};

/* Fields that hold URLs, resolved against the page's URL */
static const bool field_is_url[NUM_FIELDS] = {
	[F_CANONICAL] = true, [F_IMAGE] = true,
};

/*
 * Where a value may come from, best first within each field (lower rank
 * wins).  Names are compared without regard to case; they are <meta> name
 * or property values, "itemprop:x" for microdata, "ld:x" for JSON-LD.
 */
typedef struct QcSource
{
	const char *name;
	QcField		field;
	int			rank;
} QcSource;

static const QcSource sources[] = {
	{"og:title", F_TITLE, 1},
	{"ld:headline", F_TITLE, 2},
	{"itemprop:headline", F_TITLE, 2},
	{"twitter:title", F_TITLE, 3},
	{"dc.title", F_TITLE, 3},
	/* <title> is rank 4, the first <h1> rank 5 */
	{"description", F_DESCRIPTION, 1},
	{"og:description", F_DESCRIPTION, 2},
	{"twitter:description", F_DESCRIPTION, 3},
	{"ld:description", F_DESCRIPTION, 4},
	{"dc.description", F_DESCRIPTION, 4},
	/* <html lang> is rank 1 */
	{"content-language", F_LANG, 2},
	{"ld:inlanguage", F_LANG, 2},
	{"og:locale", F_LANG, 3},
	/* <link rel="canonical"> is rank 1 */
	{"og:url", F_CANONICAL, 2},
	{"ld:url", F_CANONICAL, 3},
	{"article:published_time", F_PUBLISHED, 1},
	{"ld:datepublished", F_PUBLISHED, 2},
	{"itemprop:datepublished", F_PUBLISHED, 2},
	{"og:published_time", F_PUBLISHED, 3},
	{"citation_publication_date", F_PUBLISHED, 3},
	{"dcterms.created", F_PUBLISHED, 3},
	{"dcterms.issued", F_PUBLISHED, 3},
	{"dc.date.issued", F_PUBLISHED, 3},
	{"dc.date", F_PUBLISHED, 4},
	{"pubdate", F_PUBLISHED, 4},
	{"publishdate", F_PUBLISHED, 4},
	{"publish-date", F_PUBLISHED, 4},
	{"parsely-pub-date", F_PUBLISHED, 4},
	{"sailthru.date", F_PUBLISHED, 4},
	{"date", F_PUBLISHED, 5},
	{"article:modified_time", F_MODIFIED, 1},
	{"ld:datemodified", F_MODIFIED, 2},
	{"itemprop:datemodified", F_MODIFIED, 2},
	{"og:updated_time", F_MODIFIED, 3},
	{"dcterms.modified", F_MODIFIED, 3},
	{"author", F_AUTHOR, 1},
	{"ld:author", F_AUTHOR, 2},
	{"itemprop:author", F_AUTHOR, 2},
	{"article:author", F_AUTHOR, 3},
	{"dc.creator", F_AUTHOR, 3},
	{"citation_author", F_AUTHOR, 3},
	{"parsely-author", F_AUTHOR, 4},
	{"sailthru.author", F_AUTHOR, 4},
	{"twitter:creator", F_AUTHOR, 5},
	{"og:site_name", F_SITE_NAME, 1},
	{"ld:publisher", F_SITE_NAME, 2},
	{"application-name", F_SITE_NAME, 3},
	{"og:image", F_IMAGE, 1},
	{"ld:image", F_IMAGE, 2},
	{"twitter:image", F_IMAGE, 3},
	{"og:type", F_TYPE, 1},
	{"ld:@type", F_TYPE, 2},
};

typedef struct QcMeta
{
	char	   *value[NUM_FIELDS];
	int			rank[NUM_FIELDS];	/* of the value kept; 0: none yet */
} QcMeta;

/* Keep value for field if it comes from a better source than the one kept. */
static void
offer(QcMeta *meta, QcField field, int rank, const char *value)
{
	char	   *folded;
	const char *p;
	StringInfoData buf;
	bool		space = false;

	if (value == NULL || (meta->rank[field] != 0 && meta->rank[field] <= rank))
		return;

	/* fold whitespace, trim, and cut */
	initStringInfo(&buf);
	for (p = value; *p != '\0';)
	{
		int			n = qc_space_length(p);

		if (n > 0)
		{
			space = buf.len > 0;
			p += n;
			continue;
		}
		if (space)
			appendStringInfoChar(&buf, ' ');
		space = false;
		n = pg_utf_mblen((const unsigned char *) p);
		appendBinaryStringInfo(&buf, p, n);
		p += n;
	}
	folded = buf.data;
	if (folded[0] == '\0')
	{
		pfree(folded);
		return;
	}
	folded[pg_encoding_mbcliplen(PG_UTF8, folded, buf.len, MAX_VALUE_BYTES)] = '\0';
	if (meta->value[field] != NULL)
		pfree(meta->value[field]);
	meta->value[field] = folded;
	meta->rank[field] = rank;
}

/* Offer a value under a source name (see sources[]). */
static void
offer_named(QcMeta *meta, const char *name, const char *value)
{
	int			i;

	for (i = 0; i < lengthof(sources); i++)
	{
		if (pg_strcasecmp(name, sources[i].name) == 0)
		{
			/* article:author is often a profile URL, not a name */
			if (sources[i].field == F_AUTHOR && value != NULL &&
				(strncmp(value, "http://", 7) == 0 ||
				 strncmp(value, "https://", 8) == 0))
				return;
			offer(meta, sources[i].field, sources[i].rank, value);
		}
	}
}

/* A <meta> element: name, property or http-equiv, with content. */
static void
read_meta(QcMeta *meta, xmlNode *node)
{
	const char *content = qc_attr(node, "content");
	const char *keys[3];
	int			i;

	if (content == NULL)
		return;
	keys[0] = qc_attr(node, "property");
	keys[1] = qc_attr(node, "name");
	keys[2] = qc_attr(node, "http-equiv");
	for (i = 0; i < 3; i++)
	{
		if (keys[i] == NULL)
			continue;
		if (pg_strcasecmp(keys[i], "og:locale") == 0)
		{
			/* "en_US" is written "en-US" in a language tag */
			char	   *tag = pstrdup(content);
			char	   *c;

			for (c = tag; *c != '\0'; c++)
				if (*c == '_')
					*c = '-';
			offer_named(meta, keys[i], tag);
		}
		else
			offer_named(meta, keys[i], content);
	}
	if (qc_attr(node, "itemprop") != NULL)
	{
		char	   *name = psprintf("itemprop:%s", qc_attr(node, "itemprop"));

		offer_named(meta, name, content);
	}
}

/* Does a space-separated list of tokens (rel="canonical x") hold word? */
static bool
has_word(const char *list, const char *word)
{
	size_t		len = strlen(word);
	const char *p;

	for (p = list; *p != '\0';)
	{
		size_t		n;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		n = strcspn(p, " \t\n");
		if (n == len && pg_strncasecmp(p, word, len) == 0)
			return true;
		p += n;
	}
	return false;
}

/* A microdata property on an element that is not <meta>. */
static void
read_itemprop(QcMeta *meta, xmlNode *node, const char *prop)
{
	char	   *name;
	const char *value = qc_attr(node, "content");
	char	   *text = NULL;

	if (pg_strcasecmp(prop, "datePublished") != 0 &&
		pg_strcasecmp(prop, "dateModified") != 0 &&
		pg_strcasecmp(prop, "author") != 0 &&
		pg_strcasecmp(prop, "headline") != 0)
		return;
	if (value == NULL)
		value = qc_attr(node, "datetime");
	if (value == NULL)
	{
		/* an author given as a Person: its name */
		xmlNode    *child = node;

		if (qc_attr(node, "itemscope") != NULL)
		{
			for (child = node->children; child != NULL; child = child->next)
			{
				const char *p = child->type == XML_ELEMENT_NODE ?
				qc_attr(child, "itemprop") : NULL;

				if (p != NULL && strcmp(p, "name") == 0)
					break;
			}
		}
		if (child == NULL)
			return;
		text = qc_node_text(child);
		value = text;
	}
	name = psprintf("itemprop:%s", prop);
	offer_named(meta, name, value);
	pfree(name);
	if (text != NULL)
		pfree(text);
}


/*
 * JSON-LD
 */

/* A JSON value as text: a string, or the name / url of an object. */
static const char *
json_text(const cJSON *item, const char *key)
{
	if (cJSON_IsString(item))
		return item->valuestring;
	if (cJSON_IsObject(item))
	{
		const cJSON *sub = cJSON_GetObjectItemCaseSensitive(item, key);

		return cJSON_IsString(sub) ? sub->valuestring : NULL;
	}
	if (cJSON_IsArray(item) && cJSON_GetArraySize(item) > 0)
		return json_text(cJSON_GetArrayItem(item, 0), key);
	return NULL;
}

/* Authors: one name, or the names of an array joined by ", ". */
static char *
json_authors(const cJSON *item)
{
	StringInfoData buf;
	const cJSON *elem;

	if (!cJSON_IsArray(item))
	{
		const char *name = json_text(item, "name");

		return name ? pstrdup(name) : NULL;
	}
	initStringInfo(&buf);
	cJSON_ArrayForEach(elem, item)
	{
		const char *name = json_text(elem, "name");

		if (name == NULL || name[0] == '\0')
			continue;
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, name);
	}
	return buf.len > 0 ? buf.data : NULL;
}

/*
 * How surely a JSON-LD object is about the page, by its @type: 1 for an
 * article, 2 for another main thing, 3 for the web page, 9 (not at all)
 * for the rest (organisations, breadcrumbs, web sites).
 */
static int
json_type_rank(const cJSON *obj)
{
	const char *type = json_text(cJSON_GetObjectItemCaseSensitive(obj, "@type"), "");

	if (type == NULL)
		return 9;
	if (strstr(type, "Article") || strstr(type, "Posting") ||
		strcmp(type, "Report") == 0 || strcmp(type, "Recipe") == 0)
		return 1;
	if (strcmp(type, "Product") == 0 || strcmp(type, "QAPage") == 0 ||
		strcmp(type, "DiscussionForumPosting") == 0 || strcmp(type, "Event") == 0)
		return 2;
	if (strstr(type, "WebPage") || strcmp(type, "CollectionPage") == 0)
		return 3;
	return 9;
}

/*
 * The JSON-LD properties read, with the key to read inside when the value
 * is an object (publisher: {"name": ...}), and the source they stand for.
 */
static const struct
{
	const char *key;
	const char *subkey;
	const char *source;
}			json_properties[] = {
	{"@type", "", "ld:@type"},
	{"headline", "", "ld:headline"},
	{"description", "", "ld:description"},
	{"datePublished", "", "ld:datePublished"},
	{"dateModified", "", "ld:dateModified"},
	{"inLanguage", "name", "ld:inLanguage"},
	{"url", "", "ld:url"},
	{"image", "url", "ld:image"},
	{"publisher", "name", "ld:publisher"},
};

/* Take what a JSON-LD object says (the main one, see json_type_rank). */
static void
read_json_object(QcMeta *meta, const cJSON *obj)
{
	int			i;

	for (i = 0; i < lengthof(json_properties); i++)
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, json_properties[i].key);

		offer_named(meta, json_properties[i].source,
					json_text(v, json_properties[i].subkey));
	}
	offer_named(meta, "ld:author",
				json_authors(cJSON_GetObjectItemCaseSensitive(obj, "author")));
}

/* The best object of a JSON-LD document: a top-level one or in @graph. */
static const cJSON *
json_main_object(const cJSON *doc, int *best_rank)
{
	const cJSON *best = NULL;
	const cJSON *item;
	const cJSON *graph;

	if (cJSON_IsObject(doc))
	{
		graph = cJSON_GetObjectItemCaseSensitive(doc, "@graph");
		if (cJSON_IsArray(graph))
			return json_main_object(graph, best_rank);
		*best_rank = json_type_rank(doc);
		return doc;
	}
	if (!cJSON_IsArray(doc))
		return NULL;
	cJSON_ArrayForEach(item, doc)
	{
		int			rank;

		if (!cJSON_IsObject(item))
			continue;
		graph = cJSON_GetObjectItemCaseSensitive(item, "@graph");
		if (cJSON_IsArray(graph))
		{
			const cJSON *inner = json_main_object(graph, &rank);

			if (inner != NULL && (best == NULL || rank < *best_rank))
			{
				best = inner;
				*best_rank = rank;
			}
			continue;
		}
		rank = json_type_rank(item);
		if (best == NULL || rank < *best_rank)
		{
			best = item;
			*best_rank = rank;
		}
	}
	return best;
}

/*
 * A <script type="application/ld+json">.  The tree cJSON allocates is freed
 * on every path: offering values allocates, which may raise an error.
 */
static void
read_json_ld(QcMeta *meta, xmlNode *script, int *json_rank)
{
	char	   *text;
	cJSON	   *volatile doc;
	const cJSON *obj;
	int			rank = 9;

	if (script->children == NULL || script->children->content == NULL)
		return;
	text = (char *) script->children->content;
	doc = cJSON_Parse(text);
	if (doc == NULL)
		return;
	PG_TRY();
	{
		obj = json_main_object(doc, &rank);
		/* the first script with the best object speaks */
		if (obj != NULL && rank < 9 && rank < *json_rank)
		{
			*json_rank = rank;
			read_json_object(meta, obj);
		}
	}
	PG_CATCH();
	{
		cJSON_Delete(doc);
		PG_RE_THROW();
	}
	PG_END_TRY();
	cJSON_Delete(doc);
}


/*
 * The walk
 */

typedef struct QcMetaWalk
{
	QcMeta		meta;
	int			json_rank;		/* of the JSON-LD object read so far */
	xmlNode    *first_h1;
} QcMetaWalk;

static bool
meta_open(void *state, xmlNode *node)
{
	QcMetaWalk *w = state;
	QcMeta	   *meta = &w->meta;
	QcTag		tag = qc_tag(node);
	const char *prop;

	switch (tag)
	{
		case QC_TAG_HTML:
			offer(meta, F_LANG, 1, qc_attr(node, "lang"));
			if (qc_attr(node, "lang") == NULL)
				offer(meta, F_LANG, 1, qc_attr(node, "xml:lang"));
			break;
		case QC_TAG_META:
			read_meta(meta, node);
			return false;
		case QC_TAG_LINK:
			if (qc_attr(node, "rel") && has_word(qc_attr(node, "rel"), "canonical"))
				offer(meta, F_CANONICAL, 1, qc_attr(node, "href"));
			return false;
		case QC_TAG_TITLE:
			{
				char	   *title = qc_node_text(node);

				offer(meta, F_TITLE, 4, title);
				pfree(title);
			}
			return false;
		case QC_TAG_SCRIPT:
			{
				const char *type = qc_attr(node, "type");

				if (type != NULL && pg_strcasecmp(type, "application/ld+json") == 0)
					read_json_ld(meta, node, &w->json_rank);
			}
			return false;
		case QC_TAG_H1:
			if (w->first_h1 == NULL)
				w->first_h1 = node;
			break;
		default:
			if (qc_layout(tag) == QC_LAYOUT_SKIP)
				return false;
			break;
	}
	prop = qc_attr(node, "itemprop");
	if (prop != NULL)
		read_itemprop(meta, node, prop);
	return true;
}

static void
meta_close(void *state, xmlNode *node)
{
}

static void
meta_text(void *state, const char *text)
{
}

char *
qc_metadata_json(xmlDoc *doc, const char *base_url)
{
	static const QcWalker walker = {meta_open, meta_close, meta_text};
	QcMetaWalk	w;
	StringInfoData out;
	int			i;

	memset(&w, 0, sizeof(w));
	w.json_rank = 10;
	if (doc != NULL)
		qc_walk((xmlNode *) doc, false, &walker, &w);
	if (w.first_h1 != NULL)
	{
		char	   *h1 = qc_node_text(w.first_h1);

		offer(&w.meta, F_TITLE, 5, h1);
		pfree(h1);
	}

	initStringInfo(&out);
	appendStringInfoString(&out, "{\"url\": ");
	qc_json_append_string(&out, base_url);
	for (i = 0; i < NUM_FIELDS; i++)
	{
		char	   *value = w.meta.value[i];

		if (value != NULL && field_is_url[i])
			value = qc_resolve_url(base_url, value);
		appendStringInfo(&out, ", \"%s\": ", field_keys[i]);
		qc_json_append_string(&out, value);
	}
	appendStringInfoChar(&out, '}');
	return out.data;
}
