/*-------------------------------------------------------------------------
 *
 * text.c
 *	  Write HTML out as plain text: formats 'text' (the whole page) and
 *	  'article' (the nodes article.c chose).
 *
 * What the reader never sees (scripts, styles, hidden elements) is
 * dropped, block elements go on lines of their own, paragraphs and headings
 * are set off by blank lines, list items start with "- ", or "1. " in
 * ordered lists (indented two spaces a level), the cells of a table row are joined by " | ", <pre> is
 * kept verbatim, and elsewhere runs of whitespace become one space.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "html.h"
#include "text.h"

/* Lists nested deeper than this are numbered and indented as this deep */
#define MAX_LIST_DEPTH 32

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
	int			item;			/* a marker is owed, at this list depth; 0: none */
	char		marker[16];		/* the marker owed: "- ", "3. " */
	int			lists;			/* enclosing lists */
	int			items;			/* enclosing list items */
	bool		ordered[MAX_LIST_DEPTH];	/* is each enclosing list <ol>? */
	int			numbers[MAX_LIST_DEPTH];	/* and the number of its next item */
	int			cells;			/* enclosing table cells */
	int			pre;			/* enclosing verbatim elements */
	int			row_start;		/* buf.len where the current row began */
} QcTextOut;

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
			/* more of a list item: under its text */
			if (out->item == 0 && out->items > 0)
				appendStringInfoSpaces(buf, 2 * Min(out->items, MAX_LIST_DEPTH));
		}
		else if (out->cell)
			appendStringInfoString(buf, " | ");
		else if (out->space)
			appendStringInfoChar(buf, ' ');
	}
	if (out->item > 0)
	{
		appendStringInfoSpaces(buf, 2 * (Min(out->item, MAX_LIST_DEPTH) - 1));
		appendStringInfoString(buf, out->marker);
	}
	out->breaks = 0;
	out->space = false;
	out->cell = false;
	out->item = 0;
}

/* Write text with each run of whitespace folded into one space. */
static void
write_folded(QcTextOut *out, const char *text)
{
	const char *word;
	int			len;

	while ((word = qc_next_word(&text, &len, &out->space)) != NULL)
	{
		pay_separators(out);
		appendBinaryStringInfo(&out->buf, word, len);
	}
}

/* Write the text of a <pre> as it is, apart from trailing blanks. */
static void
write_verbatim(QcTextOut *out, const char *text)
{
	const char *line;
	size_t		len;
	bool		ended;

	if (out->breaks > 0)
		text = qc_skip_line_end(text);
	if (*text == '\0')
		return;
	pay_separators(out);
	while ((line = qc_next_line(&text, &len, &ended)) != NULL)
	{
		appendBinaryStringInfo(&out->buf, line, len);
		if (ended)
		{
			trim_end(out, false);
			appendStringInfoChar(&out->buf, '\n');
		}
	}
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

/* Does a table cell have a cell before it in its row? */
static bool
follows_cell(const xmlNode *node)
{
	const xmlNode *prev;

	for (prev = node->prev; prev != NULL; prev = prev->prev)
	{
		if (prev->type == XML_ELEMENT_NODE)
			return qc_layout(qc_tag(prev)) == QC_LAYOUT_CELL;
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

/* A list item starts: its marker, "- " or the next number. */
static void
open_item(QcTextOut *out)
{
	int			depth = Min(out->lists, MAX_LIST_DEPTH);

	if (depth > 0 && out->ordered[depth - 1])
		snprintf(out->marker, sizeof(out->marker), "%d. ",
				 out->numbers[depth - 1]++);
	else
		strlcpy(out->marker, "- ", sizeof(out->marker));
}

/* An element starts; false when it is not shown. */
static bool
text_open(void *state, xmlNode *node)
{
	QcTextOut  *out = state;
	QcTag		tag = qc_tag(node);

	if (!qc_shown(node, tag))
		return false;
	switch (qc_layout(tag))
	{
		case QC_LAYOUT_INLINE:
		case QC_LAYOUT_SKIP:
			break;
		case QC_LAYOUT_LINE:
			block_start(out, 1);
			break;
		case QC_LAYOUT_PARA:
			block_start(out, para_breaks(out));
			break;
		case QC_LAYOUT_BREAK:
			if (!out->cell)
				out->breaks = Min(out->breaks + 1, 2);
			break;
		case QC_LAYOUT_LIST:
			block_start(out, para_breaks(out));
			out->lists++;
			if (out->lists <= MAX_LIST_DEPTH)
			{
				const char *start = qc_attr(node, "start");

				out->ordered[out->lists - 1] = (tag == QC_TAG_OL);
				out->numbers[out->lists - 1] = start ? atoi(start) : 1;
			}
			break;
		case QC_LAYOUT_ITEM:
			block_start(out, 1);
			out->item = Max(out->lists, 1);
			open_item(out);
			out->items++;
			break;
		case QC_LAYOUT_ROW:
			block_start(out, 1);
			out->row_start = out->buf.len;
			break;
		case QC_LAYOUT_CELL:
			/* after a cell that wrote text, stay on the row's line */
			if (follows_cell(node) && out->buf.len > out->row_start)
			{
				out->breaks = 0;
				out->cell = true;
			}
			out->cells++;
			break;
		case QC_LAYOUT_PRE:
			block_start(out, 2);
			out->pre++;
			break;
	}
	return true;
}

/* An element that text_open() let in ends. */
static void
text_close(void *state, xmlNode *node)
{
	QcTextOut  *out = state;

	switch (qc_layout(qc_tag(node)))
	{
		case QC_LAYOUT_LINE:
		case QC_LAYOUT_ROW:
			block_end(out, 1);
			break;
		case QC_LAYOUT_PARA:
			block_end(out, para_breaks(out));
			break;
		case QC_LAYOUT_LIST:
			out->lists--;
			block_end(out, para_breaks(out));
			break;
		case QC_LAYOUT_CELL:
			out->cells--;
			break;
		case QC_LAYOUT_ITEM:
			out->item = 0;
			out->items--;
			block_end(out, 1);
			break;
		case QC_LAYOUT_PRE:
			out->pre--;
			block_end(out, 2);
			break;
		default:
			break;
	}
}

static void
text_text(void *state, const char *text)
{
	QcTextOut  *out = state;

	if (out->pre > 0)
		write_verbatim(out, text);
	else
		write_folded(out, text);
}

/*
 * Write roots (elements, or a document) one after another as text.  A
 * title, if given, is the first paragraph, unless the text that follows
 * begins with the same line anyway.
 */
char *
qc_write_text(List *roots, const char *title)
{
	static const QcWalker walker = {text_open, text_close, text_text};
	QcTextOut	out;
	ListCell   *lc;
	int			title_len = 0;

	memset(&out, 0, sizeof(out));
	initStringInfo(&out.buf);
	if (title != NULL)
	{
		write_folded(&out, title);
		title_len = out.buf.len;
		out.breaks = 2;
	}
	foreach(lc, roots)
	{
		qc_walk(lfirst(lc), true, &walker, &out);
		block_end(&out, 2);
	}
	trim_end(&out, true);

	if (title_len > 0 && out.buf.len > title_len + 2)
	{
		char	   *body = out.buf.data + title_len + 2;

		if (strncmp(body, out.buf.data, title_len) == 0 &&
			(body[title_len] == '\n' || body[title_len] == '\0'))
		{
			out.buf.len -= title_len + 2;
			memmove(out.buf.data, body, out.buf.len + 1);
		}
	}
	return out.buf.data;
}
