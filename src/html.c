/*-------------------------------------------------------------------------
 *
 * html.c
 *	  Turn HTML into readable plain text.
 *
 * The bytes are decoded into UTF-8 first, with the character set chosen the
 * way browsers choose it, and only then handed to libxml2's HTML parser:
 * libxml2 guesses encodings badly (a non-ASCII <title> before the <meta>
 * fools it), and it stops or garbles on NUL bytes and invalid sequences,
 * which the decoder has already removed.
 *
 * The tree is then walked without recursion and written out as text: what
 * the reader never sees (scripts, styles, <head>, hidden elements) is
 * dropped, block elements go on lines of their own, paragraphs and headings
 * are set off by blank lines, list items start with "- ", the cells of a
 * table row are joined by " | ", <pre> is kept verbatim, and elsewhere runs
 * of whitespace become one space.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "content.h"

/* How far into the document to look for a <meta> charset (as browsers) */
#define META_SCAN_LIMIT 1024

/* What an element means for the text */
typedef enum QcElemKind
{
	ELEM_INLINE = 0,			/* not in the table: its text flows on */
	ELEM_SKIP,					/* dropped with all it contains */
	ELEM_LINE,					/* on lines of its own */
	ELEM_PARA,					/* set off by blank lines */
	ELEM_BREAK,					/* <br> */
	ELEM_LIST,					/* <ul>, <ol> */
	ELEM_ITEM,					/* <li> */
	ELEM_ROW,					/* <tr> */
	ELEM_CELL,					/* <td>, <th> */
	ELEM_PRE					/* kept verbatim */
} QcElemKind;

typedef struct QcElem
{
	const char *name;
	QcElemKind	kind;
} QcElem;

/*
 * Sorted by name, for bsearch(); libxml2 gives HTML names in lower case.
 *
 * <head> is not dropped whole: libxml2 2.9 does not know the HTML5 elements,
 * and when a page leaves out the optional </head><body>, it puts the
 * <header>, <nav> or <main> that follow inside <head>.  What a real <head>
 * holds is dropped anyway: <title>, <style>, <script>, and elements without
 * content.
 */
static const QcElem elements[] = {
	{"address", ELEM_LINE},
	{"article", ELEM_PARA},
	{"aside", ELEM_PARA},
	{"audio", ELEM_SKIP},
	{"blockquote", ELEM_PARA},
	{"body", ELEM_LINE},
	{"br", ELEM_BREAK},
	{"canvas", ELEM_SKIP},
	{"caption", ELEM_LINE},
	{"center", ELEM_LINE},
	{"datalist", ELEM_SKIP},
	{"dd", ELEM_LINE},
	{"details", ELEM_LINE},
	{"dialog", ELEM_LINE},
	{"dir", ELEM_LIST},
	{"div", ELEM_LINE},
	{"dl", ELEM_PARA},
	{"dt", ELEM_LINE},
	{"fieldset", ELEM_LINE},
	{"figcaption", ELEM_LINE},
	{"figure", ELEM_PARA},
	{"footer", ELEM_PARA},
	{"form", ELEM_LINE},
	{"h1", ELEM_PARA},
	{"h2", ELEM_PARA},
	{"h3", ELEM_PARA},
	{"h4", ELEM_PARA},
	{"h5", ELEM_PARA},
	{"h6", ELEM_PARA},
	{"head", ELEM_LINE},		/* see above */
	{"header", ELEM_PARA},
	{"hgroup", ELEM_LINE},
	{"hr", ELEM_PARA},
	{"html", ELEM_LINE},
	{"iframe", ELEM_SKIP},
	{"legend", ELEM_LINE},
	{"li", ELEM_ITEM},
	{"listing", ELEM_PRE},
	{"main", ELEM_PARA},
	{"menu", ELEM_LIST},
	{"nav", ELEM_PARA},
	{"noscript", ELEM_SKIP},
	{"object", ELEM_SKIP},
	{"ol", ELEM_LIST},
	{"optgroup", ELEM_LINE},
	{"option", ELEM_LINE},
	{"p", ELEM_PARA},
	{"plaintext", ELEM_PRE},
	{"pre", ELEM_PRE},
	{"script", ELEM_SKIP},
	{"search", ELEM_LINE},
	{"section", ELEM_PARA},
	{"style", ELEM_SKIP},
	{"summary", ELEM_LINE},
	{"svg", ELEM_SKIP},
	{"table", ELEM_PARA},
	{"tbody", ELEM_LINE},
	{"td", ELEM_CELL},
	{"template", ELEM_SKIP},
	{"tfoot", ELEM_LINE},
	{"th", ELEM_CELL},
	{"thead", ELEM_LINE},
	{"title", ELEM_SKIP},
	{"tr", ELEM_ROW},
	{"ul", ELEM_LIST},
	{"video", ELEM_SKIP},
	{"xmp", ELEM_PRE},
};

/*
 * The text being written, in UTF-8.  Separators are owed rather than
 * written, and paid only when more text follows: that is what keeps blank
 * lines, spaces and " | " from piling up at the ends of lines and of the
 * document.
 */
typedef struct QcTextOut
{
	StringInfoData buf;
	int			breaks;			/* newlines owed (0, 1 or 2) */
	bool		space;			/* a space is owed */
	bool		cell;			/* " | " is owed: a cell follows a cell */
	int			item;			/* "- " owed, at this list depth; 0: none */
	int			lists;			/* enclosing lists */
	int			cells;			/* enclosing table cells */
	int			pre;			/* enclosing verbatim elements */
	int			row_start;		/* buf.len where the current row began */
} QcTextOut;

static int
elem_cmp(const void *key, const void *elem)
{
	return strcmp((const char *) key, ((const QcElem *) elem)->name);
}

static QcElemKind
element_kind(const xmlChar *name)
{
	const QcElem *elem = bsearch(name, elements, lengthof(elements),
								 sizeof(QcElem), elem_cmp);

	return elem ? elem->kind : ELEM_INLINE;
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
			char	   *label;
			const char *encoding;

			p += 5;
			label = meta_element_charset(&p, end);
			encoding = qc_charset_lookup(label);
			/* a page we could read as ASCII is not UTF-16, whatever it says */
			if (encoding != NULL)
				return strncmp(encoding, "UTF-16", 6) == 0 ? "utf-8" : label;
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
static const char *
decide_charset(const char *html, size_t len, const char *header_charset)
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
 * Writing the text
 */

/* Remove trailing blanks, and trailing newlines too if asked. */
static void
trim_end(QcTextOut *out, bool newlines)
{
	StringInfo	buf = &out->buf;

	while (buf->len > 0 &&
		   (buf->data[buf->len - 1] == ' ' || buf->data[buf->len - 1] == '\t' ||
			(newlines && buf->data[buf->len - 1] == '\n')))
		buf->len--;
	buf->data[buf->len] = '\0';
}

/* Pay the separators owed, before more text. */
static void
pay_separators(QcTextOut *out)
{
	StringInfo	buf = &out->buf;

	if (buf->len > 0)
	{
		if (out->breaks > 0)
		{
			/* verbatim text may have left blanks or newlines */
			trim_end(out, true);
			appendStringInfoString(buf, out->breaks > 1 ? "\n\n" : "\n");
		}
		else if (out->cell)
			appendStringInfoString(buf, " | ");
		else if (out->space)
			appendStringInfoChar(buf, ' ');
	}
	if (out->item > 0)
	{
		appendStringInfoSpaces(buf, 2 * (out->item - 1));
		appendStringInfoString(buf, "- ");
	}
	out->breaks = 0;
	out->space = false;
	out->cell = false;
	out->item = 0;
}

/* The length of the whitespace character at p, 0 if it is none. */
static inline int
space_length(const char *p)
{
	if (is_ascii_space(*p))
		return 1;
	/* U+00A0 NO-BREAK SPACE, often used for layout */
	if ((unsigned char) p[0] == 0xC2 && (unsigned char) p[1] == 0xA0)
		return 2;
	return 0;
}

/* Write text with each run of whitespace folded into one space. */
static void
write_folded(QcTextOut *out, const char *text)
{
	const char *p = text;

	while (*p != '\0')
	{
		const char *word = p;
		int			n = space_length(p);

		if (n > 0)
		{
			out->space = true;
			p += n;
			continue;
		}
		while (*p != '\0' && space_length(p) == 0)
			p++;
		pay_separators(out);
		appendBinaryStringInfo(&out->buf, word, p - word);
	}
}

/* Write the text of a <pre> as it is, apart from trailing blanks. */
static void
write_verbatim(QcTextOut *out, const char *text)
{
	const char *p = text;

	/* a newline right after <pre> is not content (HTML says so) */
	if (out->breaks > 0 && p[0] == '\r')
		p++;
	if (out->breaks > 0 && p[0] == '\n')
		p++;
	if (*p == '\0')
		return;
	pay_separators(out);
	while (*p != '\0')
	{
		size_t		run = strcspn(p, "\r\n");

		appendBinaryStringInfo(&out->buf, p, run);
		p += run;
		if (*p == '\0')
			break;
		if (p[0] == '\r' && p[1] == '\n')
			p++;
		p++;
		trim_end(out, false);
		appendStringInfoChar(&out->buf, '\n');
	}
}

/* Write a text node's content. */
static void
write_text(QcTextOut *out, const char *text)
{
	if (text == NULL)
		return;
	if (out->pre > 0)
		write_verbatim(out, text);
	else
		write_folded(out, text);
}

/* A block element starts: owe n line breaks (2: a blank line). */
static void
block_start(QcTextOut *out, int n)
{
	/* a block that opens a table cell stays on the row's line */
	if (!out->cell)
		out->breaks = Max(out->breaks, n);
}

/* A block element ends: owe n line breaks. */
static void
block_end(QcTextOut *out, int n)
{
	out->cell = false;
	out->breaks = Max(out->breaks, n);
}


/*
 * Walking the tree
 */

/* An attribute's value as the HTML parser stores it; "" if it has none. */
static const char *
attr_value(const xmlAttr *attr)
{
	if (attr->children != NULL && attr->children->content != NULL)
		return (const char *) attr->children->content;
	return "";
}

/* Does an inline style say display: none? */
static bool
style_hides(const char *style)
{
	const char *p;

	for (p = style; *p != '\0'; p++)
	{
		const char *v;

		if (pg_strncasecmp(p, "display", 7) != 0)
			continue;
		for (v = p + 7; is_ascii_space(*v); v++)
			;
		if (*v++ != ':')
			continue;
		while (is_ascii_space(*v))
			v++;
		if (pg_strncasecmp(v, "none", 4) == 0 &&
			!isalnum((unsigned char) v[4]) && v[4] != '-')
			return true;
	}
	return false;
}

/*
 * Is the element hidden from the reader by its attributes: the hidden
 * attribute, or an inline style with display: none?
 *
 * aria-hidden="true" is not among them: it hides from screen readers only,
 * and what it marks is on the screen (duplicate links around teasers, open
 * accordions).  Dropping it cost 0.017 of mean recall on the development
 * pages, up to 0.6 on one page.
 */
static bool
is_hidden(const xmlNode *node)
{
	const xmlAttr *attr;
	bool		hidden = false;
	bool		streamed = false;

	for (attr = node->properties; attr != NULL; attr = attr->next)
	{
		const char *name = (const char *) attr->name;
		const char *value = attr_value(attr);

		if (strcmp(name, "hidden") == 0)
			hidden = true;
		else if (strcmp(name, "id") == 0)
			streamed = strncmp(value, "S:", 2) == 0;
		else if (strcmp(name, "style") == 0 && style_hides(value))
			return true;
	}

	/*
	 * React's streaming server rendering (Next.js) sends content that was
	 * late in <div hidden id="S:0">, and a script moves it into place at
	 * once: it is the page's content, often all of it.
	 */
	return hidden && !streamed;
}

/* Does a table cell have a cell before it in its row? */
static bool
follows_cell(const xmlNode *node)
{
	const xmlNode *prev;

	for (prev = node->prev; prev != NULL; prev = prev->prev)
	{
		if (prev->type == XML_ELEMENT_NODE)
			return element_kind(prev->name) == ELEM_CELL;
	}
	return false;
}

/*
 * The breaks around a paragraph: a blank line, except inside a list item or
 * a table cell, where a blank line would pull the item or row apart.
 */
static int
para_breaks(QcTextOut *out)
{
	return out->lists > 0 || out->cells > 0 ? 1 : 2;
}

/* An element starts; false when it is dropped with all it contains. */
static bool
open_element(QcTextOut *out, const xmlNode *node)
{
	QcElemKind	kind = element_kind(node->name);

	if (kind == ELEM_SKIP || is_hidden(node))
		return false;
	switch (kind)
	{
		case ELEM_INLINE:
		case ELEM_SKIP:
			break;
		case ELEM_LINE:
			block_start(out, 1);
			break;
		case ELEM_PARA:
			block_start(out, para_breaks(out));
			break;
		case ELEM_BREAK:
			if (!out->cell)
				out->breaks = Min(out->breaks + 1, 2);
			break;
		case ELEM_LIST:
			block_start(out, para_breaks(out));
			out->lists++;
			break;
		case ELEM_ITEM:
			block_start(out, 1);
			out->item = Max(out->lists, 1);
			break;
		case ELEM_ROW:
			block_start(out, 1);
			out->row_start = out->buf.len;
			break;
		case ELEM_CELL:
			/* after a cell that wrote text, stay on the row's line */
			if (follows_cell(node) && out->buf.len > out->row_start)
			{
				out->breaks = 0;
				out->cell = true;
			}
			out->cells++;
			break;
		case ELEM_PRE:
			block_start(out, 2);
			out->pre++;
			break;
	}
	return true;
}

/* An element that open_element() let in ends. */
static void
close_element(QcTextOut *out, const xmlNode *node)
{
	switch (element_kind(node->name))
	{
		case ELEM_LINE:
		case ELEM_ROW:
			block_end(out, 1);
			break;
		case ELEM_PARA:
			block_end(out, para_breaks(out));
			break;
		case ELEM_LIST:
			out->lists--;
			block_end(out, para_breaks(out));
			break;
		case ELEM_CELL:
			out->cells--;
			break;
		case ELEM_ITEM:
			out->item = 0;
			block_end(out, 1);
			break;
		case ELEM_PRE:
			out->pre--;
			block_end(out, 2);
			break;
		default:
			break;
	}
}

/*
 * Write the text under root.  The walk follows the tree's own links instead
 * of recursing, so a page of 100,000 nested <div>s needs no stack.
 */
static void
write_tree(QcTextOut *out, xmlNode *root)
{
	xmlNode    *node = root->children;

	while (node != NULL)
	{
		bool		entered = false;

		CHECK_FOR_INTERRUPTS();
		if (node->type == XML_ELEMENT_NODE)
			entered = open_element(out, node);
		else if (node->type == XML_TEXT_NODE ||
				 node->type == XML_CDATA_SECTION_NODE)
			write_text(out, (const char *) node->content);

		if (entered && node->children != NULL)
		{
			node = node->children;
			continue;
		}
		if (entered)
			close_element(out, node);

		/* on to the next node, closing the elements that end here */
		while (node->next == NULL)
		{
			node = node->parent;
			if (node == NULL || node == root)
				return;
			close_element(out, node);
		}
		node = node->next;
	}
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
static xmlDocPtr
parse_html(const char *utf8, size_t len)
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

/*
 * Write the text of doc and free doc, on every path: the walk allocates and
 * checks for interrupts, either of which may raise an error.  (PG_CATCH
 * rather than PG_FINALLY: gcc's -Wclobbered misfires on the latter here.)
 */
static void
write_document(QcTextOut *out, xmlDocPtr doc)
{
	PG_TRY();
	{
		write_tree(out, (xmlNode *) doc);
	}
	PG_CATCH();
	{
		xmlFreeDoc(doc);
		PG_RE_THROW();
	}
	PG_END_TRY();
	xmlFreeDoc(doc);
}

char *
qc_html_to_text(const char *html, size_t len, const char *charset)
{
	const char *encoding = decide_charset(html, len, charset);
	size_t		utf8len;
	char	   *utf8 = qc_to_utf8(html, len, encoding, &utf8len);
	xmlDocPtr	doc = NULL;
	QcTextOut	out;
	char	   *result;

	CHECK_FOR_INTERRUPTS();
	if (utf8len > 0)
		doc = parse_html(utf8, utf8len);
	pfree(utf8);

	memset(&out, 0, sizeof(out));
	initStringInfo(&out.buf);
	if (doc != NULL)
		write_document(&out, doc);
	trim_end(&out, true);

	result = qc_to_server_text(out.buf.data, out.buf.len, NULL);
	pfree(out.buf.data);
	return result;
}
