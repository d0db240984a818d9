/*-------------------------------------------------------------------------
 *
 * html.c
 *	  Parse HTML, and the parts of the HTML code that every format uses.
 *
 * The bytes are decoded into UTF-8 first, with the character set chosen the
 * way browsers choose it, and only then handed to libxml2's HTML parser:
 * libxml2 guesses encodings badly (a non-ASCII <title> before the <meta>
 * fools it), and it stops or garbles on NUL bytes and invalid sequences,
 * which the decoder has already removed.
 *
 * content.c then has the tree written out in the format asked for: text.c
 * writes plain text, markdown.c Markdown, of the whole page or of the main
 * content that article.c finds; metadata.c reads what the page says about
 * itself.  This file holds what they share: the table of elements, the test
 * for hidden elements and the walk over the tree.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/uri.h>
#include <libxml/xmlerror.h>

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "content.h"
#include "html.h"

/* How far into the document to look for a <meta> charset (as browsers) */
#define META_SCAN_LIMIT 1024

char		qc_dropped_mark;

typedef struct QcElem
{
	const char *name;
	QcTag		tag;
	QcLayout	layout;
} QcElem;

/*
 * In alphabetical order (for a reader; qc_tag() hashes the names); libxml2
 * gives HTML names in lower case.
 *
 * <head> is not dropped whole: libxml2 2.9 does not know the HTML5 elements,
 * and when a page leaves out the optional </head><body>, it puts the
 * <header>, <nav> or <main> that follow inside <head>.  What a real <head>
 * holds is dropped anyway: <title>, <style>, <script>, and elements without
 * content.
 */
static const QcElem elements[] = {
	{"a", QC_TAG_A, QC_LAYOUT_INLINE},
	{"address", QC_TAG_ADDRESS, QC_LAYOUT_LINE},
	{"article", QC_TAG_ARTICLE, QC_LAYOUT_PARA},
	{"aside", QC_TAG_ASIDE, QC_LAYOUT_PARA},
	{"audio", QC_TAG_AUDIO, QC_LAYOUT_SKIP},
	{"b", QC_TAG_B, QC_LAYOUT_INLINE},
	{"blockquote", QC_TAG_BLOCKQUOTE, QC_LAYOUT_PARA},
	{"body", QC_TAG_BODY, QC_LAYOUT_LINE},
	{"br", QC_TAG_BR, QC_LAYOUT_BREAK},
	{"button", QC_TAG_BUTTON, QC_LAYOUT_INLINE},
	{"canvas", QC_TAG_CANVAS, QC_LAYOUT_SKIP},
	{"caption", QC_TAG_CAPTION, QC_LAYOUT_LINE},
	{"center", QC_TAG_CENTER, QC_LAYOUT_LINE},
	{"code", QC_TAG_CODE, QC_LAYOUT_INLINE},
	{"datalist", QC_TAG_DATALIST, QC_LAYOUT_SKIP},
	{"dd", QC_TAG_DD, QC_LAYOUT_LINE},
	{"del", QC_TAG_DEL, QC_LAYOUT_INLINE},
	{"details", QC_TAG_DETAILS, QC_LAYOUT_LINE},
	{"dialog", QC_TAG_DIALOG, QC_LAYOUT_LINE},
	{"dir", QC_TAG_DIR, QC_LAYOUT_LIST},
	{"div", QC_TAG_DIV, QC_LAYOUT_LINE},
	{"dl", QC_TAG_DL, QC_LAYOUT_PARA},
	{"dt", QC_TAG_DT, QC_LAYOUT_LINE},
	{"em", QC_TAG_EM, QC_LAYOUT_INLINE},
	{"embed", QC_TAG_EMBED, QC_LAYOUT_SKIP},
	{"fieldset", QC_TAG_FIELDSET, QC_LAYOUT_LINE},
	{"figcaption", QC_TAG_FIGCAPTION, QC_LAYOUT_LINE},
	{"figure", QC_TAG_FIGURE, QC_LAYOUT_PARA},
	{"footer", QC_TAG_FOOTER, QC_LAYOUT_PARA},
	{"form", QC_TAG_FORM, QC_LAYOUT_LINE},
	{"h1", QC_TAG_H1, QC_LAYOUT_PARA},
	{"h2", QC_TAG_H2, QC_LAYOUT_PARA},
	{"h3", QC_TAG_H3, QC_LAYOUT_PARA},
	{"h4", QC_TAG_H4, QC_LAYOUT_PARA},
	{"h5", QC_TAG_H5, QC_LAYOUT_PARA},
	{"h6", QC_TAG_H6, QC_LAYOUT_PARA},
	{"head", QC_TAG_HEAD, QC_LAYOUT_LINE},	/* see above */
	{"header", QC_TAG_HEADER, QC_LAYOUT_PARA},
	{"hgroup", QC_TAG_HGROUP, QC_LAYOUT_LINE},
	{"hr", QC_TAG_HR, QC_LAYOUT_PARA},
	{"html", QC_TAG_HTML, QC_LAYOUT_LINE},
	{"i", QC_TAG_I, QC_LAYOUT_INLINE},
	{"iframe", QC_TAG_IFRAME, QC_LAYOUT_SKIP},
	{"img", QC_TAG_IMG, QC_LAYOUT_INLINE},
	{"input", QC_TAG_INPUT, QC_LAYOUT_INLINE},
	{"kbd", QC_TAG_KBD, QC_LAYOUT_INLINE},
	{"label", QC_TAG_LABEL, QC_LAYOUT_INLINE},
	{"legend", QC_TAG_LEGEND, QC_LAYOUT_LINE},
	{"li", QC_TAG_LI, QC_LAYOUT_ITEM},
	{"link", QC_TAG_LINK, QC_LAYOUT_INLINE},
	{"listing", QC_TAG_LISTING, QC_LAYOUT_PRE},
	{"main", QC_TAG_MAIN, QC_LAYOUT_PARA},
	{"map", QC_TAG_MAP, QC_LAYOUT_INLINE},
	{"math", QC_TAG_MATH, QC_LAYOUT_INLINE},
	{"menu", QC_TAG_MENU, QC_LAYOUT_LIST},
	{"meta", QC_TAG_META, QC_LAYOUT_INLINE},
	{"nav", QC_TAG_NAV, QC_LAYOUT_PARA},
	{"noscript", QC_TAG_NOSCRIPT, QC_LAYOUT_SKIP},
	{"object", QC_TAG_OBJECT, QC_LAYOUT_SKIP},
	{"ol", QC_TAG_OL, QC_LAYOUT_LIST},
	{"optgroup", QC_TAG_OPTGROUP, QC_LAYOUT_LINE},
	{"option", QC_TAG_OPTION, QC_LAYOUT_LINE},
	{"p", QC_TAG_P, QC_LAYOUT_PARA},
	{"plaintext", QC_TAG_PLAINTEXT, QC_LAYOUT_PRE},
	{"pre", QC_TAG_PRE, QC_LAYOUT_PRE},
	{"s", QC_TAG_S, QC_LAYOUT_INLINE},
	{"samp", QC_TAG_SAMP, QC_LAYOUT_INLINE},
	{"script", QC_TAG_SCRIPT, QC_LAYOUT_SKIP},
	{"search", QC_TAG_SEARCH, QC_LAYOUT_LINE},
	{"section", QC_TAG_SECTION, QC_LAYOUT_PARA},
	{"select", QC_TAG_SELECT, QC_LAYOUT_LINE},
	{"strike", QC_TAG_STRIKE, QC_LAYOUT_INLINE},
	{"strong", QC_TAG_STRONG, QC_LAYOUT_INLINE},
	{"style", QC_TAG_STYLE, QC_LAYOUT_SKIP},
	{"summary", QC_TAG_SUMMARY, QC_LAYOUT_LINE},
	{"svg", QC_TAG_SVG, QC_LAYOUT_SKIP},
	{"table", QC_TAG_TABLE, QC_LAYOUT_PARA},
	{"tbody", QC_TAG_TBODY, QC_LAYOUT_LINE},
	{"td", QC_TAG_TD, QC_LAYOUT_CELL},
	{"template", QC_TAG_TEMPLATE, QC_LAYOUT_SKIP},
	{"textarea", QC_TAG_TEXTAREA, QC_LAYOUT_LINE},
	{"tfoot", QC_TAG_TFOOT, QC_LAYOUT_LINE},
	{"th", QC_TAG_TH, QC_LAYOUT_CELL},
	{"thead", QC_TAG_THEAD, QC_LAYOUT_LINE},
	{"time", QC_TAG_TIME, QC_LAYOUT_INLINE},
	{"title", QC_TAG_TITLE, QC_LAYOUT_SKIP},
	{"tr", QC_TAG_TR, QC_LAYOUT_ROW},
	{"tt", QC_TAG_TT, QC_LAYOUT_INLINE},
	{"ul", QC_TAG_UL, QC_LAYOUT_LIST},
	{"video", QC_TAG_VIDEO, QC_LAYOUT_SKIP},
	{"xmp", QC_TAG_XMP, QC_LAYOUT_PRE},
};

/*
 * The layout of each tag, and elements[] by name for qc_tag(): an
 * open-addressing hash table of indexes into elements[] (plus one; 0 is an
 * empty slot).  Every element of a page is looked up several times, and a
 * lookup costs a hash and mostly one strcmp, where a binary search of
 * elements[] cost seven.  Both are filled on first use.
 */
#define QC_TAG_SLOTS 256			/* a power of two, over twice the elements */
static QcLayout layouts[QC_TAG_XMP + 1];
static uint8 tag_slots[QC_TAG_SLOTS];
static bool tables_ready = false;

StaticAssertDecl(lengthof(elements) < QC_TAG_SLOTS / 2 && lengthof(elements) < 255,
				 "tag_slots must stay sparse and hold every index of elements[]");

/* The hash of an element name, for tag_slots */
static uint32
name_hash(const char *name)
{
	return hash_bytes((const unsigned char *) name, strlen(name));
}

static void
tables_init(void)
{
	int			i;

	for (i = 0; i < lengthof(elements); i++)
	{
		uint32		slot = name_hash(elements[i].name) & (QC_TAG_SLOTS - 1);

		while (tag_slots[slot] != 0)
			slot = (slot + 1) & (QC_TAG_SLOTS - 1);
		tag_slots[slot] = i + 1;
		layouts[elements[i].tag] = elements[i].layout;
	}
	tables_ready = true;
}

QcTag
qc_tag(const xmlNode *node)
{
	const char *name = (const char *) node->name;
	uint32		slot;

	if (node->type != XML_ELEMENT_NODE)
		return QC_TAG_OTHER;
	if (!tables_ready)
		tables_init();
	for (slot = name_hash(name) & (QC_TAG_SLOTS - 1); tag_slots[slot] != 0;
		 slot = (slot + 1) & (QC_TAG_SLOTS - 1))
	{
		const QcElem *elem = &elements[tag_slots[slot] - 1];

		if (strcmp(name, elem->name) == 0)
			return elem->tag;
	}
	return QC_TAG_OTHER;
}

QcLayout
qc_layout(QcTag tag)
{
	if (!tables_ready)
		tables_init();
	return layouts[tag];
}

static inline bool
is_ascii_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
		c == '\v';
}

/* Case-insensitive: does the run of len bytes at p equal the string s? */
static bool
bytes_equal(const char *p, size_t len, const char *s)
{
	return len == strlen(s) && pg_strncasecmp(p, s, len) == 0;
}


/*
 * Choosing the character set
 */

/*
 * Read one attribute of a tag the way the WHATWG prescan does, from *pp
 * (not past end), advancing *pp; false at the end of the tag.
 */
static bool
next_attribute(const char **pp, const char *end,
			   const char **name, size_t *namelen,
			   const char **value, size_t *valuelen)
{
	const char *p = *pp;

	while (p < end && (is_ascii_space(*p) || *p == '/'))
		p++;
	if (p >= end || *p == '>')
	{
		*pp = p;
		return false;
	}

	/* the first character belongs to the name, even an '=' */
	*name = p++;
	while (p < end && *p != '=' && *p != '>' && *p != '/' &&
		   !is_ascii_space(*p))
		p++;
	*namelen = p - *name;
	while (p < end && is_ascii_space(*p))
		p++;

	*value = p;
	*valuelen = 0;
	if (p < end && *p == '=')
	{
		p++;
		while (p < end && is_ascii_space(*p))
			p++;
		if (p < end && (*p == '"' || *p == '\''))
		{
			char		quote = *p++;

			*value = p;
			while (p < end && *p != quote)
				p++;
			*valuelen = p - *value;
			if (p < end)
				p++;
		}
		else
		{
			*value = p;
			while (p < end && *p != '>' && !is_ascii_space(*p))
				p++;
			*valuelen = p - *value;
		}
	}
	*pp = p;
	return true;
}

/*
 * The charset label a <meta> element declares, reading its attributes from
 * *pp: its charset attribute, or the charset in the content attribute of
 * <meta http-equiv="Content-Type">.  NULL when it declares none.
 */
static char *
meta_element_charset(const char **pp, const char *end)
{
	const char *name;
	const char *value;
	size_t		namelen;
	size_t		valuelen;
	bool		pragma = false;
	char	   *charset = NULL;
	char	   *content = NULL;

	while (next_attribute(pp, end, &name, &namelen, &value, &valuelen))
	{
		if (bytes_equal(name, namelen, "http-equiv"))
			pragma = pragma || bytes_equal(value, valuelen, "content-type");
		else if (bytes_equal(name, namelen, "charset") && charset == NULL)
			charset = pnstrdup(value, valuelen);
		else if (bytes_equal(name, namelen, "content") && content == NULL)
			content = pnstrdup(value, valuelen);
	}
	if (charset != NULL)
		return charset;
	if (pragma && content != NULL)
		return qc_content_type_charset(content);
	return NULL;
}

/* Skip a comment starting at p ("<!--"); returns where scanning resumes. */
static const char *
skip_comment(const char *p, const char *end)
{
	/* "<!-->" is a whole comment, so the search starts at the dashes */
	for (p += 2; p + 3 <= end; p++)
	{
		if (p[0] == '-' && p[1] == '-' && p[2] == '>')
			return p + 3;
	}
	return end;
}

/*
 * A charset label found in the document, if we know it, else NULL: a page
 * we could read as ASCII is not UTF-16, whatever it says.
 */
static const char *
usable_label(const char *label)
{
	const char *encoding = qc_charset_lookup(label);

	if (encoding == NULL)
		return NULL;
	return strncmp(encoding, "UTF-16", 6) == 0 ? "utf-8" : label;
}

/*
 * The usable charset label an XML declaration at *p names, or NULL; *p
 * moves past the declaration.
 */
static const char *
xml_declaration_charset(const char **pp, const char *end)
{
	const char *p = *pp + 5;
	const char *close = p;
	const char *label = NULL;

	while (close + 1 < end && !(close[0] == '?' && close[1] == '>'))
		close++;
	*pp = close + 1 < end ? close + 2 : end;
	for (; p + 8 <= close; p++)
	{
		const char *v;
		char		quote;
		const char *stop;

		if (strncmp(p, "encoding", 8) != 0)
			continue;
		for (v = p + 8; v < close && is_ascii_space(*v); v++)
			;
		if (v >= close || *v++ != '=')
			continue;
		while (v < close && is_ascii_space(*v))
			v++;
		if (v >= close || (*v != '"' && *v != '\''))
			continue;
		quote = *v++;
		stop = memchr(v, quote, close - v);
		if (stop == NULL)
			break;
		label = pnstrdup(v, stop - v);
		break;
	}
	return usable_label(label);
}

/*
 * The first <meta> charset declaration with a label we know, in the first
 * len bytes, following the WHATWG prescan in outline: comments are skipped,
 * and so are other tags' attributes, whose values may contain "<meta".
 */
static const char *
meta_charset(const char *html, size_t len)
{
	const char *p = html;
	const char *end = html + len;
	const char *name;
	const char *value;
	size_t		namelen;
	size_t		valuelen;

	while ((p = memchr(p, '<', end - p)) != NULL)
	{
		if (end - p >= 4 && strncmp(p, "<!--", 4) == 0)
			p = skip_comment(p, end);
		else if (end - p >= 6 && pg_strncasecmp(p, "<meta", 5) == 0 &&
				 (is_ascii_space(p[5]) || p[5] == '/'))
		{
			const char *label;

			p += 5;
			label = usable_label(meta_element_charset(&p, end));
			if (label != NULL)
				return label;
		}
		else if (end - p >= 2 && (isalpha((unsigned char) p[1]) || p[1] == '/'))
		{
			/* another tag: skip its name, then its attributes */
			p += 2;
			while (p < end && !is_ascii_space(*p) && *p != '>')
				p++;
			while (next_attribute(&p, end, &name, &namelen, &value, &valuelen))
				;
		}
		else if (end - p >= 5 && strncmp(p, "<?xml", 5) == 0)
		{
			/* an XML declaration: <?xml version="1.0" encoding="x"?> */
			const char *label = xml_declaration_charset(&p, end);

			if (label != NULL)
				return label;
		}
		else if (end - p >= 2 && (p[1] == '!' || p[1] == '?'))
		{
			/* <!DOCTYPE html>, <?xml ...?>: skip to the end of the tag */
			const char *close = memchr(p, '>', end - p);

			p = close ? close + 1 : end;
		}
		else
			p++;
		if (p >= end)
			break;
	}
	return NULL;
}

/*
 * Do the bytes look like UTF-8?  Yes when valid multi-byte sequences
 * outnumber invalid bytes: text in a legacy charset hardly ever holds a
 * valid sequence by chance, while a UTF-8 page may have the odd stray byte,
 * or a character cut in two where the download was cut short.
 */
static bool
looks_like_utf8(const char *html, size_t len)
{
	const unsigned char *p = (const unsigned char *) html;
	const unsigned char *end = p + len;
	size_t		good = 0;
	size_t		bad = 0;

	while (p < end)
	{
		int			n;

		if (!IS_HIGHBIT_SET(*p))
		{
			p++;
			continue;
		}
		n = pg_utf_mblen(p);
		if (n > end - p && pg_utf8_islegal(p, end - p))
			break;				/* cut short */
		if (n > 1 && pg_utf8_islegal(p, n))
		{
			good++;
			p += n;
		}
		else
		{
			bad++;
			p++;
		}
	}
	return bad == 0 || good > bad;
}

/*
 * The charset to decode with, decided as browsers decide it: the HTTP
 * header's if we know it, else a <meta> declaration in the first 1024
 * bytes, else UTF-8 if the bytes look like UTF-8, else windows-1252.  A byte
 * order mark overrides all of these; qc_to_utf8() sees to that.
 */
const char *
qc_html_charset(const char *html, size_t len, const char *header_charset)
{
	const char *meta;

	if (qc_charset_lookup(header_charset) != NULL)
		return header_charset;
	meta = meta_charset(html, Min(len, META_SCAN_LIMIT));
	if (meta != NULL)
		return meta;
	return looks_like_utf8(html, len) ? "utf-8" : "windows-1252";
}



/*
 * What is shown
 */

const char *
qc_attr(const xmlNode *node, const char *name)
{
	const xmlAttr *attr;

	for (attr = node->properties; attr != NULL; attr = attr->next)
	{
		if (strcmp((const char *) attr->name, name) == 0)
		{
			if (attr->children != NULL && attr->children->content != NULL)
				return (const char *) attr->children->content;
			return "";
		}
	}
	return NULL;
}

/* Does an inline style hide the element (display: none, visibility: hidden)? */
static bool
style_hides(const char *style)
{
	const char *p;

	for (p = style; *p != '\0'; p++)
	{
		const char *v;
		const char *hiding;

		if (pg_strncasecmp(p, "display", 7) == 0)
		{
			v = p + 7;
			hiding = "none";
		}
		else if (pg_strncasecmp(p, "visibility", 10) == 0)
		{
			v = p + 10;
			hiding = "hidden";
		}
		else
			continue;
		while (is_ascii_space(*v))
			v++;
		if (*v++ != ':')
			continue;
		while (is_ascii_space(*v))
			v++;
		if (pg_strncasecmp(v, hiding, strlen(hiding)) == 0 &&
			!isalnum((unsigned char) v[strlen(hiding)]) &&
			v[strlen(hiding)] != '-')
			return true;
	}
	return false;
}

/*
 * Is the element a tab panel?  The panels a page does not show at first are
 * hidden with display: none or the hidden attribute, but they are content
 * the reader opens with a click (a product's specifications, a recipe's
 * steps).
 */
static bool
is_tab_panel(const xmlNode *node)
{
	const char *role = qc_attr(node, "role");
	const char *cls = qc_attr(node, "class");

	return (role != NULL && pg_strcasecmp(role, "tabpanel") == 0) ||
		(cls != NULL && (strstr(cls, "tab-pane") != NULL ||
						 strstr(cls, "tabpanel") != NULL ||
						 strstr(cls, "tabs-panel") != NULL));
}

/*
 * aria-hidden="true" does not hide: it hides from screen readers only, and
 * what it marks is on the screen (the duplicate link around a teaser, a
 * collapsed accordion's text, the other tab of a price table).  Dropping it
 * cost 0.017 of mean recall on the development pages, up to 0.6 on one.
 */
bool
qc_hidden(const xmlNode *node)
{
	const xmlAttr *attr;
	bool		hidden = false;
	bool		streamed = false;

	for (attr = node->properties; attr != NULL; attr = attr->next)
	{
		const char *name = (const char *) attr->name;
		const char *value = "";

		if (attr->children != NULL && attr->children->content != NULL)
			value = (const char *) attr->children->content;
		if (strcmp(name, "hidden") == 0)
		{
			/* hidden="until-found" content is found by a search: it is text */
			hidden = hidden || pg_strcasecmp(value, "until-found") != 0;
		}
		else if (strcmp(name, "id") == 0)
			streamed = strncmp(value, "S:", 2) == 0;
		else if (strcmp(name, "style") == 0 && style_hides(value))
			hidden = true;
	}

	/*
	 * React's streaming server rendering (Next.js) sends content that was
	 * late in <div hidden id="S:0">, and a script moves it into place at
	 * once: it is the page's content, often all of it.
	 */
	return hidden && !streamed && !is_tab_panel(node);
}

bool
qc_shown(const xmlNode *node, QcTag tag)
{
	return qc_layout(tag) != QC_LAYOUT_SKIP && !qc_dropped(node) &&
		!qc_hidden(node);
}


/*
 * Walking the tree
 */

/* The walk of qc_walk() over the nodes below root. */
static void
walk_below(xmlNode *root, const QcWalker *walker, void *state)
{
	xmlNode    *node = root->children;

	while (node != NULL)
	{
		bool		entered = false;

		CHECK_FOR_INTERRUPTS();
		if (node->type == XML_ELEMENT_NODE)
			entered = walker->open(state, node);
		else if ((node->type == XML_TEXT_NODE ||
				  node->type == XML_CDATA_SECTION_NODE) &&
				 node->content != NULL)
			walker->text(state, (const char *) node->content);

		if (entered && node->children != NULL)
		{
			node = node->children;
			continue;
		}
		if (entered)
			walker->close(state, node);

		/* on to the next node, closing the elements that end here */
		while (node->next == NULL)
		{
			node = node->parent;
			if (node == NULL || node == root)
				return;
			walker->close(state, node);
		}
		node = node->next;
	}
}

void
qc_walk(xmlNode *root, bool include_root, const QcWalker *walker, void *state)
{
	if (include_root && root->type == XML_ELEMENT_NODE)
	{
		if (!walker->open(state, root))
			return;
		walk_below(root, walker, state);
		walker->close(state, root);
	}
	else
		walk_below(root, walker, state);
}

xmlNode *
qc_next_node(xmlNode *node, xmlNode *root, bool skip_children)
{
	if (!skip_children && node->children != NULL &&
		node->type == XML_ELEMENT_NODE)
		return node->children;
	while (node != root && node->next == NULL)
		node = node->parent;
	return node == root ? NULL : node->next;
}

xmlNode *
qc_root_element(xmlDoc *doc)
{
	return xmlDocGetRootElement(doc);
}

/* The first element child of parent with the given tag, or NULL. */
static xmlNode *
child_with_tag(xmlNode *parent, QcTag tag)
{
	xmlNode    *node;

	for (node = parent ? parent->children : NULL; node != NULL; node = node->next)
	{
		if (node->type == XML_ELEMENT_NODE && qc_tag(node) == tag)
			return node;
	}
	return NULL;
}

xmlNode *
qc_find_body(xmlDoc *doc)
{
	xmlNode    *html = qc_root_element(doc);
	xmlNode    *body = child_with_tag(html, QC_TAG_BODY);

	return body ? body : html;
}

/* Collect folded text: the state of qc_node_text()'s walk. */
typedef struct QcFolded
{
	StringInfoData buf;
	bool		space;
} QcFolded;

static bool
folded_open(void *state, xmlNode *node)
{
	QcTag		tag = qc_tag(node);

	if (qc_layout(tag) != QC_LAYOUT_INLINE)
		((QcFolded *) state)->space = true;
	return qc_layout(tag) != QC_LAYOUT_SKIP && !qc_hidden(node);
}

static void
folded_close(void *state, xmlNode *node)
{
	if (qc_layout(qc_tag(node)) != QC_LAYOUT_INLINE)
		((QcFolded *) state)->space = true;
}

static void
folded_text(void *state, const char *text)
{
	QcFolded   *f = state;
	const char *word;
	int			len;

	while ((word = qc_next_word(&text, &len, &f->space)) != NULL)
	{
		if (f->space && f->buf.len > 0)
			appendStringInfoChar(&f->buf, ' ');
		f->space = false;
		appendBinaryStringInfo(&f->buf, word, len);
	}
}

char *
qc_node_text(xmlNode *node)
{
	static const QcWalker walker = {folded_open, folded_close, folded_text};
	QcFolded	f;

	initStringInfo(&f.buf);
	f.space = false;
	if (node->type == XML_TEXT_NODE)
		folded_text(&f, (const char *) node->content);
	else
		qc_walk(node, false, &walker, &f);
	return f.buf.data;
}

char *
qc_document_title(xmlDoc *doc)
{
	xmlNode    *html = qc_root_element(doc);
	xmlNode    *title = child_with_tag(child_with_tag(html, QC_TAG_HEAD), QC_TAG_TITLE);
	char	   *text;

	/* without a <head>, libxml2 may put the <title> straight into <html> */
	if (title == NULL)
		title = child_with_tag(html, QC_TAG_TITLE);
	if (title == NULL)
		return NULL;
	text = qc_node_text(title);
	if (text[0] == '\0')
	{
		pfree(text);
		return NULL;
	}
	return text;
}

char *
qc_resolve_url(const char *base, const char *url)
{
	xmlChar    *built;
	char	   *result;

	while (qc_space_length(url) > 0)
		url += qc_space_length(url);
	if (base == NULL || base[0] == '\0')
		return pstrdup(url);
	built = xmlBuildURI((const xmlChar *) url, (const xmlChar *) base);
	if (built == NULL)
		return pstrdup(url);
	result = pstrdup((const char *) built);
	xmlFree(built);
	return result;
}


/*
 * Parsing
 */

/* Bad HTML is the normal case: libxml2's complaints are of no interest. */
#if LIBXML_VERSION >= 21200
static void
ignore_xml_error(void *data, const xmlError *error)
#else
static void
ignore_xml_error(void *data, xmlErrorPtr error)
#endif
{
}

/*
 * Parse UTF-8 HTML.  Nothing in here can raise a PostgreSQL error, so the
 * error handler is simply swapped around the call.  XML_PARSE_HUGE lifts
 * libxml2's limits of 256 levels of nesting (past which it drops the rest of
 * the page) and of 10 MB of text in a node.
 */
xmlDocPtr
qc_html_parse(const char *utf8, size_t len)
{
	xmlStructuredErrorFunc saved_handler;
	void	   *saved_context;
	xmlDocPtr	doc;

	xmlInitParser();
	saved_handler = xmlStructuredError;
	saved_context = xmlStructuredErrorContext;
	xmlSetStructuredErrorFunc(NULL, ignore_xml_error);
	doc = htmlReadMemory(utf8, (int) len, NULL, "UTF-8",
						 HTML_PARSE_RECOVER | HTML_PARSE_NOERROR |
						 HTML_PARSE_NOWARNING | HTML_PARSE_NONET |
						 HTML_PARSE_IGNORE_ENC | HTML_PARSE_COMPACT |
						 XML_PARSE_HUGE);
	xmlSetStructuredErrorFunc(saved_context, saved_handler);
	return doc;
}
