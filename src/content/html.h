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

/* The elements the HTML code tells apart; every other one is QC_TAG_OTHER */
typedef enum QcTag
{
	QC_TAG_OTHER = 0,
	QC_TAG_A, QC_TAG_ADDRESS, QC_TAG_ARTICLE, QC_TAG_ASIDE, QC_TAG_AUDIO,
	QC_TAG_B, QC_TAG_BLOCKQUOTE, QC_TAG_BODY, QC_TAG_BR, QC_TAG_BUTTON,
	QC_TAG_CANVAS, QC_TAG_CAPTION, QC_TAG_CENTER, QC_TAG_CODE,
	QC_TAG_DATALIST, QC_TAG_DD, QC_TAG_DEL, QC_TAG_DETAILS, QC_TAG_DIALOG,
	QC_TAG_DIR, QC_TAG_DIV, QC_TAG_DL, QC_TAG_DT, QC_TAG_EM, QC_TAG_EMBED,
	QC_TAG_FIELDSET, QC_TAG_FIGCAPTION, QC_TAG_FIGURE, QC_TAG_FOOTER,
	QC_TAG_FORM, QC_TAG_H1, QC_TAG_H2, QC_TAG_H3, QC_TAG_H4, QC_TAG_H5,
	QC_TAG_H6, QC_TAG_HEAD, QC_TAG_HEADER, QC_TAG_HGROUP, QC_TAG_HR,
	QC_TAG_HTML, QC_TAG_I, QC_TAG_IFRAME, QC_TAG_IMG, QC_TAG_INPUT,
	QC_TAG_KBD, QC_TAG_LABEL, QC_TAG_LEGEND, QC_TAG_LI, QC_TAG_LINK,
	QC_TAG_LISTING, QC_TAG_MAIN, QC_TAG_MAP, QC_TAG_MATH, QC_TAG_MENU,
	QC_TAG_META, QC_TAG_NAV, QC_TAG_NOSCRIPT, QC_TAG_OBJECT, QC_TAG_OL,
	QC_TAG_OPTGROUP, QC_TAG_OPTION, QC_TAG_P, QC_TAG_PLAINTEXT, QC_TAG_PRE,
	QC_TAG_S, QC_TAG_SAMP, QC_TAG_SCRIPT, QC_TAG_SEARCH, QC_TAG_SECTION,
	QC_TAG_SELECT, QC_TAG_STRIKE, QC_TAG_STRONG, QC_TAG_STYLE, QC_TAG_SUMMARY,
	QC_TAG_SVG, QC_TAG_TABLE, QC_TAG_TBODY, QC_TAG_TD, QC_TAG_TEMPLATE,
	QC_TAG_TEXTAREA, QC_TAG_TFOOT, QC_TAG_TH, QC_TAG_THEAD, QC_TAG_TIME,
	QC_TAG_TITLE, QC_TAG_TR, QC_TAG_TT, QC_TAG_UL, QC_TAG_VIDEO, QC_TAG_XMP
} QcTag;

/* What an element means for the layout of text */
typedef enum QcLayout
{
	QC_LAYOUT_INLINE = 0,				/* its text flows on */
	QC_LAYOUT_SKIP,						/* never shown: dropped with all it contains */
	QC_LAYOUT_LINE,						/* on lines of its own */
	QC_LAYOUT_PARA,						/* set off by blank lines */
	QC_LAYOUT_BREAK,					/* <br> */
	QC_LAYOUT_LIST,						/* <ul>, <ol> */
	QC_LAYOUT_ITEM,						/* <li> */
	QC_LAYOUT_ROW,						/* <tr> */
	QC_LAYOUT_CELL,						/* <td>, <th> */
	QC_LAYOUT_PRE						/* kept verbatim */
} QcLayout;

/* The tag of an element node (QC_TAG_OTHER for any other node). */
extern QcTag qc_tag(const xmlNode *node);

/* How an element's content is laid out. */
extern QcLayout qc_layout(QcTag tag);

/* 1 to 6 for <h1> to <h6>, else 0 */
static inline int
qc_heading_level(QcTag tag)
{
	return tag >= QC_TAG_H1 && tag <= QC_TAG_H6 ? (int) (tag - QC_TAG_H1) + 1 : 0;
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
 * The charset label to decode an HTML body with, decided as browsers
 * decide it: header_charset (the HTTP header's, or NULL) if known, else a
 * <meta> declaration in the first 1024 bytes, else "utf-8" when the bytes
 * look like UTF-8, else "windows-1252".  (A byte order mark, which
 * overrides all of these, is seen to by qc_to_utf8().)
 */
extern const char *qc_html_charset(const char *html, size_t len,
								   const char *header_charset);

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

#endif							/* QC_HTML_H */
