/*-------------------------------------------------------------------------
 *
 * html.h
 *	  Internals shared by the HTML code: the parsed document, what each
 *	  element means, and the walk over the tree.
 *
 * html.c decides the charset and parses the document; text.c and
 * markdown.c write it out; article.c chooses the part of it worth
 * writing; metadata.c reads what the page says about itself; content.c,
 * above them all, hands the document to the format asked for and frees
 * it.  Everything here works on libxml2's tree of UTF-8 strings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HTML_H
#define QC_HTML_H

#include <libxml/tree.h>

#include "nodes/pg_list.h"

/* The elements the HTML code tells apart; every other one is TAG_OTHER */
typedef enum QcTag
{
	TAG_OTHER = 0,
	TAG_A, TAG_ADDRESS, TAG_ARTICLE, TAG_ASIDE, TAG_AUDIO, TAG_B,
	TAG_BLOCKQUOTE, TAG_BODY, TAG_BR, TAG_BUTTON, TAG_CANVAS, TAG_CAPTION,
	TAG_CENTER, TAG_CODE, TAG_DATALIST, TAG_DD, TAG_DEL, TAG_DETAILS,
	TAG_DIALOG, TAG_DIR, TAG_DIV, TAG_DL, TAG_DT, TAG_EM, TAG_EMBED,
	TAG_FIELDSET, TAG_FIGCAPTION, TAG_FIGURE, TAG_FOOTER, TAG_FORM,
	TAG_H1, TAG_H2, TAG_H3, TAG_H4, TAG_H5, TAG_H6, TAG_HEAD, TAG_HEADER,
	TAG_HGROUP, TAG_HR, TAG_HTML, TAG_I, TAG_IFRAME, TAG_IMG, TAG_INPUT,
	TAG_KBD, TAG_LABEL, TAG_LEGEND, TAG_LI, TAG_LINK, TAG_LISTING, TAG_MAIN,
	TAG_MAP, TAG_MATH, TAG_MENU, TAG_META, TAG_NAV, TAG_NOSCRIPT, TAG_OBJECT,
	TAG_OL, TAG_OPTGROUP, TAG_OPTION, TAG_P, TAG_PLAINTEXT, TAG_PRE, TAG_S,
	TAG_SAMP, TAG_SCRIPT, TAG_SEARCH, TAG_SECTION, TAG_SELECT, TAG_STRIKE,
	TAG_STRONG, TAG_STYLE, TAG_SUMMARY, TAG_SVG, TAG_TABLE, TAG_TBODY,
	TAG_TD, TAG_TEMPLATE, TAG_TEXTAREA, TAG_TFOOT, TAG_TH, TAG_THEAD,
	TAG_TIME, TAG_TITLE, TAG_TR, TAG_TT, TAG_UL, TAG_VIDEO, TAG_XMP
} QcTag;

/* What an element means for the layout of text */
typedef enum QcLayout
{
	LAYOUT_INLINE = 0,			/* its text flows on */
	LAYOUT_SKIP,				/* never shown: dropped with all it contains */
	LAYOUT_LINE,				/* on lines of its own */
	LAYOUT_PARA,				/* set off by blank lines */
	LAYOUT_BREAK,				/* <br> */
	LAYOUT_LIST,				/* <ul>, <ol> */
	LAYOUT_ITEM,				/* <li> */
	LAYOUT_ROW,					/* <tr> */
	LAYOUT_CELL,				/* <td>, <th> */
	LAYOUT_PRE					/* kept verbatim */
} QcLayout;

/* The tag of an element node (TAG_OTHER for any other node). */
extern QcTag qc_tag(const xmlNode *node);

/* How an element's content is laid out. */
extern QcLayout qc_layout(QcTag tag);

/* 1 to 6 for <h1> to <h6>, else 0 */
static inline int
qc_heading_level(QcTag tag)
{
	return tag >= TAG_H1 && tag <= TAG_H6 ? (int) (tag - TAG_H1) + 1 : 0;
}

/* An attribute's value (NULL when absent, "" when it has no value). */
extern const char *qc_attr(const xmlNode *node, const char *name);

/*
 * Is the element hidden from the reader: the hidden attribute, or an
 * inline style with display: none or visibility: hidden?
 */
extern bool qc_hidden(const xmlNode *node);

/*
 * Marks that article.c leaves on elements for the writers, in _private:
 * a dropped element is not written, with all it contains.
 */
extern char qc_dropped_mark;

static inline bool
qc_dropped(const xmlNode *node)
{
	return node->_private == &qc_dropped_mark;
}

/* Is the element shown and written: not SKIP, not hidden, not dropped? */
extern bool qc_shown(const xmlNode *node, QcTag tag);

/*
 * A walk over a subtree in document order, without recursion (a page of
 * 100,000 nested <div>s needs no stack).  open() is called as an element
 * starts and returns whether to enter it; close() as an element that was
 * entered ends; text() for each text or CDATA node.  With include_root,
 * root itself is opened and closed too.  Interrupts are checked on every
 * node.
 */
typedef struct QcWalker
{
	bool		(*open) (void *state, xmlNode *node);
	void		(*close) (void *state, xmlNode *node);
	void		(*text) (void *state, const char *text);
} QcWalker;

extern void qc_walk(xmlNode *root, bool include_root, const QcWalker *walker,
					void *state);

/*
 * The node after node in document order inside root's subtree (children
 * first), or NULL past its end: for loops over a whole subtree without
 * recursion.  With skip_children, node's children are passed over.
 */
extern xmlNode *qc_next_node(xmlNode *node, xmlNode *root, bool skip_children);

/* The document's root element, <body>, <title> text (NULL if none). */
extern xmlNode *qc_root_element(xmlDoc *doc);
extern xmlNode *qc_find_body(xmlDoc *doc);
extern char *qc_document_title(xmlDoc *doc);

/*
 * Text helpers: whitespace in HTML (ASCII space, tab, newlines, form feed;
 * and U+00A0, which pages use for layout) and folding of runs of it.
 */
static inline int
qc_space_length(const char *p)
{
	if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' ||
		*p == '\v')
		return 1;
	if ((unsigned char) p[0] == 0xC2 && (unsigned char) p[1] == 0xA0)
		return 2;
	return 0;
}

/*
 * The next word of the text at *pp, advancing *pp past it: its start, with
 * its length in *len, and whether whitespace came before it in *space (set
 * to true, never cleared); NULL when only whitespace is left.
 */
static inline const char *
qc_next_word(const char **pp, int *len, bool *space)
{
	const char *p = *pp;
	const char *word;
	int			n;

	while ((n = qc_space_length(p)) > 0)
	{
		*space = true;
		p += n;
	}
	if (*p == '\0')
	{
		*pp = p;
		return NULL;
	}
	word = p;
	while (*p != '\0' && qc_space_length(p) == 0)
		p++;
	*len = p - word;
	*pp = p;
	return word;
}

/*
 * The next line of verbatim text at *pp, advancing *pp past it and its line
 * end (LF, CR LF or CR): its start, with its length in *len and whether a
 * line end followed in *ended; NULL at the end of the text.
 */
static inline const char *
qc_next_line(const char **pp, size_t *len, bool *ended)
{
	const char *line = *pp;
	const char *p = line;

	if (*p == '\0')
		return NULL;
	p += strcspn(p, "\r\n");
	*len = p - line;
	*ended = *p != '\0';
	if (p[0] == '\r' && p[1] == '\n')
		p++;
	if (*p != '\0')
		p++;
	*pp = p;
	return line;
}

/* Skip the line end right after <pre>, which HTML says is not content. */
static inline const char *
qc_skip_line_end(const char *p)
{
	if (p[0] == '\r')
		p++;
	if (p[0] == '\n')
		p++;
	return p;
}

/*
 * Parse UTF-8 HTML into a tree the caller frees with xmlFreeDoc(); NULL
 * when libxml2 makes nothing of it.  Never raises.
 */
extern xmlDocPtr qc_html_parse(const char *utf8, size_t len);

/* All the text under node, with whitespace folded and trimmed (palloc'd). */
extern char *qc_node_text(xmlNode *node);

/*
 * url resolved against base (both UTF-8); url itself when base is NULL or
 * either cannot be parsed.  Returns palloc'd memory.
 */
extern char *qc_resolve_url(const char *base, const char *url);

/* article.c: the nodes that make up the main content, in document order. */
extern List *qc_article_select(xmlDoc *doc);

/* text.c and markdown.c: write nodes (with what they contain) as UTF-8. */
extern char *qc_write_text(List *roots, const char *title);
extern char *qc_write_markdown(List *roots, const char *base_url);

/*
 * metadata.c: the page's metadata as a JSON object (UTF-8); with doc NULL,
 * the object with every value null.
 */
extern char *qc_metadata_json(xmlDoc *doc, const char *base_url);

#endif							/* QC_HTML_H */
