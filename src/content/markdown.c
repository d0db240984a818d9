/*-------------------------------------------------------------------------
 *
 * markdown.c
 *	  Write HTML out as Markdown: format 'markdown'.
 *
 * The output is CommonMark with GitHub's pipe tables: headings as "#",
 * paragraphs set off by blank lines, lists as "- " and "1. " (nested ones
 * indented under their item), block quotes as "> ", <pre> as fenced code
 * blocks (with the language a "language-x" class names), <code> in
 * backticks, <strong>/<b> as **, <em>/<i> as *, links as [text](url) and
 * images, when they have alt text, as ![alt](url), with URLs resolved
 * against the page's URL.  A table whose cells hold only inline content
 * becomes a pipe table; a layout table, whose cells hold blocks, is written
 * as the blocks it holds.
 *
 * Separators are owed rather than written, as in text.c: a newline, a
 * blank line or a space is paid only when more text follows, so that
 * nothing piles up where elements end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "html.h"
#include "markdown.h"

/* Most levels of nested lists and quotes that are indented */
#define MAX_NESTING 32

/* A container that prefixes the lines inside it */
typedef struct MdBox
{
	const char *indent;			/* what each line inside starts with */
	bool		quote;			/* a block quote (its blank lines keep ">") */
	char		marker[16];		/* a list item's marker, until its first line */
} MdBox;

/* A list being written */
typedef struct MdList
{
	bool		ordered;
	int			next;			/* the number of its next item */
} MdList;

/* The pipe table being written */
typedef struct MdTable
{
	List	   *rows;			/* of List of char * */
	List	   *row;			/* the row being written */
	int			cell_start;		/* buf.len where the open cell began */
} MdTable;

typedef struct MdOut
{
	StringInfoData buf;
	const char *base_url;
	int			breaks;			/* newlines owed (0, 1 or 2) */
	int			break_boxes;	/* boxes open on both sides of them */
	bool		space;			/* a space is owed */
	bool		marker;			/* a list marker is owed (in a box) */
	StringInfoData pending;		/* inline openers owed ("**", "[") */
	MdBox		boxes[MAX_NESTING];
	int			nboxes;
	int			depth;			/* boxes that exist (may exceed nboxes) */
	MdList		lists[MAX_NESTING];
	int			nlists;
	int			pre;			/* enclosing <pre> */
	bool		pre_start;		/* nothing written yet in the <pre> */
	int			code;			/* enclosing inline <code> */
	xmlNode    *link;			/* the link being written as [text](url) */
	MdTable    *table;			/* the pipe table being written, or NULL */
	int			tables;			/* enclosing tables of any kind */
} MdOut;

static const char *const heading_markers[] = {
	"# ", "## ", "### ", "#### ", "##### ", "###### ",
};

/* Remove trailing blanks (not newlines). */
static void
trim_blanks(StringInfo buf)
{
	while (buf->len > 0 &&
		   (buf->data[buf->len - 1] == ' ' || buf->data[buf->len - 1] == '\t'))
		buf->len--;
	buf->data[buf->len] = '\0';
}

/*
 * Remove trailing whitespace, and trailing lines that hold nothing but the
 * prefixes of quotes.
 */
static void
trim_end(MdOut *out)
{
	StringInfo	buf = &out->buf;

	for (;;)
	{
		int			line;

		while (buf->len > 0 &&
			   (buf->data[buf->len - 1] == ' ' || buf->data[buf->len - 1] == '\n'))
			buf->len--;
		for (line = buf->len; line > 0 && buf->data[line - 1] != '\n'; line--)
			;
		if (line == buf->len ||
			strspn(buf->data + line, "> ") < (size_t) (buf->len - line))
			break;
		buf->len = line;
	}
	buf->data[buf->len] = '\0';
}

/*
 * Write the line prefixes of the open boxes, with the list marker owed (if
 * any) in place of the indent of the item it starts.
 */
static void
write_prefix(MdOut *out)
{
	int			i;

	for (i = 0; i < out->nboxes; i++)
	{
		MdBox	   *box = &out->boxes[i];

		if (box->marker[0] != '\0')
		{
			appendStringInfoString(&out->buf, box->marker);
			box->marker[0] = '\0';
		}
		else
			appendStringInfoString(&out->buf, box->indent);
	}
	out->marker = false;
}

/* Start a new line inside the open boxes. */
static void
new_line(MdOut *out)
{
	trim_blanks(&out->buf);
	appendStringInfoChar(&out->buf, '\n');
	write_prefix(out);
}

/*
 * Pay the separators and openers owed, before more text.  A blank line
 * belongs to the boxes that were open on both sides of it; the line after
 * it starts with the prefixes of the boxes open now (with a list marker in
 * place of the indent of the item it starts).
 */
static void
pay(MdOut *out)
{
	if (out->table != NULL)
	{
		/* inside a pipe table cell everything stays on one line */
		if ((out->breaks > 0 || out->space) &&
			out->buf.len > out->table->cell_start)
			appendStringInfoChar(&out->buf, ' ');
	}
	else if (out->buf.len == 0)
		write_prefix(out);
	else if (out->breaks > 0)
	{
		if (out->breaks > 1)
		{
			int			i;

			trim_blanks(&out->buf);
			appendStringInfoChar(&out->buf, '\n');
			for (i = 0; i < Min(out->break_boxes, out->nboxes); i++)
			{
				if (out->boxes[i].quote)
					appendStringInfoString(&out->buf, "> ");
			}
			trim_blanks(&out->buf);
		}
		new_line(out);
	}
	else if (out->space)
		appendStringInfoChar(&out->buf, ' ');
	if (out->pending.len > 0)
	{
		appendBinaryStringInfo(&out->buf, out->pending.data, out->pending.len);
		resetStringInfo(&out->pending);
	}
	out->breaks = 0;
	out->space = false;
}

/* Owe n line breaks (2: a blank line) before what follows. */
static void
owe_breaks(MdOut *out, int n)
{
	if (out->breaks == 0)
		out->break_boxes = out->nboxes;
	/* the first block of a list item starts on the marker's line */
	if (out->marker)
		n = Min(n, 1);
	out->breaks = Max(out->breaks, n);
}

/*
 * Append a word, with backslashes where it would otherwise be read as
 * Markdown.  Only what would change the meaning of a line is escaped:
 * emphasis and code markers, brackets, and at the start of a line, what
 * starts a heading, quote or list.
 */
static void
append_escaped(MdOut *out, const char *word, int len, bool line_start)
{
	int			i;

	if (out->pre > 0 || out->code > 0)
	{
		appendBinaryStringInfo(&out->buf, word, len);
		return;
	}
	if (line_start && len > 0 &&
		(word[0] == '#' || word[0] == '>' || word[0] == '+' ||
		 (word[0] == '-' && len == 1) || (word[0] == '=' && len > 1)))
		appendStringInfoChar(&out->buf, '\\');
	for (i = 0; i < len; i++)
	{
		char		c = word[i];

		if (c == '*' || c == '_' || c == '`' || c == '[' || c == ']' ||
			c == '\\' || (c == '|' && out->table != NULL) ||
			(c == '<' && i + 1 < len && isalpha((unsigned char) word[i + 1])))
			appendStringInfoChar(&out->buf, '\\');
		appendStringInfoChar(&out->buf, c);
	}
	/* "1." at the start of a line would begin a list */
	if (line_start && len >= 2 && word[len - 1] == '.' &&
		strspn(word, "0123456789") == len - 1)
	{
		out->buf.data[out->buf.len - 1] = '\\';
		appendStringInfoChar(&out->buf, '.');
	}
}

/* Write text with each run of whitespace folded into one space. */
static void
write_folded(MdOut *out, const char *text)
{
	const char *word;
	int			len;

	while ((word = qc_next_word(&text, &len, &out->space)) != NULL)
	{
		bool		line_start = out->breaks > 0 || out->buf.len == 0 ||
			out->marker;

		pay(out);
		append_escaped(out, word, len, line_start && out->pending.len == 0);
	}
}

/* Write the text of a <pre> as it is, inside its fence. */
static void
write_verbatim(MdOut *out, const char *text)
{
	const char *line;
	size_t		len;
	bool		ended;

	if (out->pre_start)
		text = qc_skip_line_end(text);
	out->pre_start = false;
	while ((line = qc_next_line(&text, &len, &ended)) != NULL)
	{
		if (len > 0)
		{
			pay(out);
			appendBinaryStringInfo(&out->buf, line, len);
		}
		if (ended)
		{
			pay(out);
			new_line(out);
		}
	}
}

static void
md_text(void *state, const char *text)
{
	MdOut	   *out = state;

	if (out->pre > 0)
		write_verbatim(out, text);
	else
		write_folded(out, text);
}

/* Push a box whose lines start with indent. */
static void
push_box(MdOut *out, const char *indent, bool quote)
{
	if (out->depth++ < MAX_NESTING)
	{
		out->boxes[out->nboxes].indent = indent;
		out->boxes[out->nboxes].quote = quote;
		out->boxes[out->nboxes].marker[0] = '\0';
		out->nboxes++;
	}
}

static void
pop_box(MdOut *out)
{
	if (--out->depth < MAX_NESTING)
		out->nboxes--;
	out->break_boxes = Min(out->break_boxes, out->nboxes);
}

/* An inline marker ("**", "*", "`") starts: owed until text follows. */
static void
open_inline(MdOut *out, const char *marker)
{
	appendStringInfoString(&out->pending, marker);
}

/* Take back an opener still owed; false when it was written. */
static bool
take_back(MdOut *out, const char *marker)
{
	size_t		len = strlen(marker);

	if (out->pending.len >= (int) len &&
		strcmp(out->pending.data + out->pending.len - len, marker) == 0)
	{
		out->pending.len -= len;
		out->pending.data[out->pending.len] = '\0';
		return true;
	}
	return false;
}

/*
 * An inline marker ends: its closer is written right after the last text,
 * or, when no text came since it was opened, the opener is taken back.
 */
static void
close_inline(MdOut *out, const char *opener, const char *closer)
{
	if (!take_back(out, opener))
		appendStringInfoString(&out->buf, closer);
}

/* Is the URL worth linking to (not a script, not a bare fragment)? */
static bool
linkable(const char *href)
{
	while (qc_space_length(href) > 0)
		href += qc_space_length(href);
	return href[0] != '\0' && href[0] != '#' &&
		pg_strncasecmp(href, "javascript:", 11) != 0 &&
		pg_strncasecmp(href, "data:", 5) != 0;
}

/* The URL, resolved and made safe inside (...): spaces and parentheses escaped */
static void
append_url(MdOut *out, const char *href)
{
	char	   *url = qc_resolve_url(out->base_url, href);
	const char *p;

	for (p = url; *p != '\0'; p++)
	{
		if (*p == ' ')
			appendStringInfoString(&out->buf, "%20");
		else if (*p == '(')
			appendStringInfoString(&out->buf, "%28");
		else if (*p == ')')
			appendStringInfoString(&out->buf, "%29");
		else if (*p != '\n' && *p != '\r' && *p != '\t')
			appendStringInfoChar(&out->buf, *p);
	}
	pfree(url);
}

/*
 * Does the element hold block content, which a link or a pipe table cell
 * cannot?  Inline elements are looked into, without recursion; past
 * HOLDS_BLOCKS_BUDGET nodes the answer is yes, which only costs a link its
 * brackets or a table its pipes.
 */
#define HOLDS_BLOCKS_BUDGET 500

static bool
holds_blocks(xmlNode *node)
{
	xmlNode    *child = node->children;
	int			budget = HOLDS_BLOCKS_BUDGET;

	while (child != NULL)
	{
		if (--budget < 0)
			return true;
		if (child->type == XML_ELEMENT_NODE)
		{
			QcTag		tag = qc_tag(child);
			QcLayout	layout = qc_layout(tag);

			if (layout == QC_LAYOUT_INLINE && child->children != NULL)
			{
				child = child->children;
				continue;
			}
			if (layout != QC_LAYOUT_INLINE && layout != QC_LAYOUT_SKIP &&
				layout != QC_LAYOUT_BREAK && qc_shown(child, tag))
				return true;
		}
		/* the next node, climbing out of the inline elements that end */
		while (child->next == NULL)
		{
			child = child->parent;
			if (child == node)
				return false;
		}
		child = child->next;
	}
	return false;
}

/* Is the table a data table: rows of cells that hold only inline content? */
static bool
is_data_table(xmlNode *table)
{
	xmlNode    *node = table->children;
	int			cells = 0;

	/* the rows may sit in <thead>, <tbody>, <tfoot> */
	while (node != NULL)
	{
		QcTag		tag = node->type == XML_ELEMENT_NODE ? qc_tag(node) : QC_TAG_OTHER;

		if (tag == QC_TAG_THEAD || tag == QC_TAG_TBODY || tag == QC_TAG_TFOOT ||
			tag == QC_TAG_TR)
		{
			node = node->children;
			continue;
		}
		if (tag == QC_TAG_TD || tag == QC_TAG_TH)
		{
			if (holds_blocks(node))
				return false;
			cells++;
		}
		while (node != NULL && node->next == NULL && node != table)
		{
			node = node->parent;
			if (node == table)
				return cells > 0;
		}
		if (node == NULL || node == table)
			break;
		node = node->next;
	}
	return cells > 0;
}

/* Write the finished pipe table as a block. */
static void
write_table(MdOut *out, MdTable *table)
{
	int			columns = 0;
	ListCell   *lr;
	int			r = 0;

	foreach(lr, table->rows)
		columns = Max(columns, list_length((List *) lfirst(lr)));
	if (columns == 0)
		return;
	owe_breaks(out, 2);
	foreach(lr, table->rows)
	{
		List	   *row = lfirst(lr);
		int			c;

		if (r > 0)
			owe_breaks(out, 1);
		pay(out);
		appendStringInfoChar(&out->buf, '|');
		for (c = 0; c < columns; c++)
			appendStringInfo(&out->buf, " %s |",
							 c < list_length(row) ? (char *) list_nth(row, c) : "");
		if (r == 0)
		{
			new_line(out);
			appendStringInfoChar(&out->buf, '|');
			for (c = 0; c < columns; c++)
				appendStringInfoString(&out->buf, " --- |");
		}
		r++;
	}
	owe_breaks(out, 2);
}

/* A table cell of a pipe table ends: its text becomes the row's. */
static void
end_cell(MdOut *out)
{
	MdTable    *table = out->table;
	char	   *cell;

	trim_blanks(&out->buf);
	cell = pstrdup(out->buf.data + table->cell_start);
	out->buf.len = table->cell_start;
	out->buf.data[out->buf.len] = '\0';
	table->row = lappend(table->row, cell);
	resetStringInfo(&out->pending);
	out->space = false;
	out->breaks = 0;
}

/*
 * The marker around inline code: a backtick, or when the code holds one,
 * two with a space inside (CommonMark's way).
 */
static const char *
code_marker(xmlNode *node)
{
	char	   *text = qc_node_text(node);
	bool		ticks = strchr(text, '`') != NULL;

	pfree(text);
	return ticks ? "`` " : "`";
}

/* The language of a code block, from a "language-x" or "lang-x" class. */
static const char *
code_language(xmlNode *pre)
{
	xmlNode    *nodes[2];
	int			i;

	nodes[0] = pre;
	nodes[1] = pre->children;
	for (i = 0; i < 2; i++)
	{
		const char *cls = nodes[i] && nodes[i]->type == XML_ELEMENT_NODE ?
		qc_attr(nodes[i], "class") : NULL;
		const char *lang;

		if (cls == NULL)
			continue;
		lang = strstr(cls, "language-");
		if (lang != NULL)
			lang += 9;
		else if ((lang = strstr(cls, "lang-")) != NULL)
			lang += 5;
		if (lang != NULL)
			return pnstrdup(lang, strcspn(lang, " \t\n"));
	}
	return "";
}

/* The fence for a code block: longer than any run of backticks in it. */
static char *
code_fence(xmlNode *pre)
{
	char	   *text = qc_node_text(pre);
	int			longest = 0;
	int			run = 0;
	const char *p;

	for (p = text; *p != '\0'; p++)
	{
		run = (*p == '`') ? run + 1 : 0;
		longest = Max(longest, run);
	}
	pfree(text);
	return psprintf("%.*s", Max(3, longest + 1), "````````````````````````````````");
}

/* An image: ![alt](url), only when it has alt text and a real source. */
static void
write_image(MdOut *out, xmlNode *node)
{
	const char *alt = qc_attr(node, "alt");
	const char *src = qc_attr(node, "src");
	const char *lazy = qc_attr(node, "data-src");

	/* lazy loading puts a placeholder in src and the image in data-src */
	if (lazy != NULL && linkable(lazy) && (src == NULL || !linkable(src)))
		src = lazy;
	if (alt == NULL || src == NULL || !linkable(src) ||
		strspn(alt, " \t\n\r") == strlen(alt))
		return;
	pay(out);
	appendStringInfoString(&out->buf, "![");
	out->space = false;
	write_folded(out, alt);
	out->space = false;
	appendStringInfoString(&out->buf, "](");
	append_url(out, src);
	appendStringInfoChar(&out->buf, ')');
}

/* A list item starts: a box whose first line starts with its marker. */
static void
open_item(MdOut *out)
{
	MdList	   *list = out->nlists > 0 ? &out->lists[out->nlists - 1] : NULL;
	bool		ordered = list != NULL && list->ordered;

	owe_breaks(out, 1);
	push_box(out, ordered ? "   " : "  ", false);
	if (out->depth <= MAX_NESTING)
	{
		MdBox	   *box = &out->boxes[out->nboxes - 1];

		if (ordered)
			snprintf(box->marker, sizeof(box->marker), "%d. ", list->next++);
		else
			strlcpy(box->marker, "- ", sizeof(box->marker));
		out->marker = true;
	}
}

/*
 * Any other block element starts or ends: paragraphs are set off by blank
 * lines; inside lists, other blocks only by line breaks.
 */
static void
block_breaks(MdOut *out, QcTag tag)
{
	QcLayout	layout = qc_layout(tag);

	if (layout == QC_LAYOUT_LINE || layout == QC_LAYOUT_PARA)
		owe_breaks(out, out->nlists > 0 && tag != QC_TAG_P ? 1 : 2);
}

static bool
md_open(void *state, xmlNode *node)
{
	MdOut	   *out = state;
	QcTag		tag = qc_tag(node);
	int			level = qc_heading_level(tag);

	if (!qc_shown(node, tag))
		return false;
	if (out->table != NULL && qc_layout(tag) != QC_LAYOUT_INLINE &&
		tag != QC_TAG_TD && tag != QC_TAG_TH && tag != QC_TAG_TR && tag != QC_TAG_BR &&
		tag != QC_TAG_TABLE)
	{
		/* block content inside a pipe table cell flows on */
		out->space = true;
		return true;
	}

	if (level > 0)
	{
		owe_breaks(out, 2);
		open_inline(out, heading_markers[level - 1]);
		return true;
	}
	switch (tag)
	{
		case QC_TAG_UL:
		case QC_TAG_OL:
		case QC_TAG_MENU:
		case QC_TAG_DIR:
			if (out->nlists < MAX_NESTING)
			{
				const char *start = qc_attr(node, "start");

				out->lists[out->nlists].ordered = (tag == QC_TAG_OL);
				out->lists[out->nlists].next = start ? atoi(start) : 1;
				out->nlists++;
			}
			owe_breaks(out, out->nlists > 1 ? 1 : 2);
			return true;
		case QC_TAG_LI:
			open_item(out);
			return true;
		case QC_TAG_BLOCKQUOTE:
			owe_breaks(out, 2);
			push_box(out, "> ", true);
			return true;
		case QC_TAG_PRE:
		case QC_TAG_LISTING:
		case QC_TAG_XMP:
		case QC_TAG_PLAINTEXT:
			owe_breaks(out, 2);
			pay(out);
			appendStringInfo(&out->buf, "%s%s", code_fence(node), code_language(node));
			new_line(out);
			out->pre++;
			out->pre_start = true;
			return true;
		case QC_TAG_CODE:
		case QC_TAG_KBD:
		case QC_TAG_SAMP:
		case QC_TAG_TT:
			if (out->pre == 0 && out->code++ == 0)
				open_inline(out, code_marker(node));
			return true;
		case QC_TAG_STRONG:
		case QC_TAG_B:
			if (out->pre == 0 && out->code == 0)
				open_inline(out, "**");
			return true;
		case QC_TAG_EM:
		case QC_TAG_I:
			if (out->pre == 0 && out->code == 0)
				open_inline(out, "*");
			return true;
		case QC_TAG_A:
			{
				const char *href = qc_attr(node, "href");

				/* a link around blocks (a card) cannot be written as one */
				if (out->link == NULL && out->pre == 0 && href != NULL &&
					linkable(href) && !holds_blocks(node))
				{
					open_inline(out, "[");
					out->link = node;
				}
			}
			return true;
		case QC_TAG_IMG:
			write_image(out, node);
			return false;
		case QC_TAG_BR:
			if (out->pre > 0)
				new_line(out);
			else if (out->table != NULL)
				out->space = true;
			else if (out->buf.len > 0)
			{
				appendStringInfoString(&out->buf, "  ");
				new_line(out);
			}
			return false;
		case QC_TAG_HR:
			owe_breaks(out, 2);
			pay(out);
			appendStringInfoString(&out->buf, "---");
			owe_breaks(out, 2);
			return false;
		case QC_TAG_TABLE:
			/* counted even inside a pipe table, as md_close counts it */
			out->tables++;
			if (out->table != NULL)
			{
				out->space = true;
				return true;
			}
			if (out->tables == 1 && is_data_table(node))
			{
				out->table = palloc0(sizeof(MdTable));
				return true;
			}
			owe_breaks(out, 2);
			return true;
		case QC_TAG_TR:
			if (out->table != NULL)
				out->table->row = NIL;
			else
				owe_breaks(out, 1);
			return true;
		case QC_TAG_TD:
		case QC_TAG_TH:
			if (out->table != NULL)
			{
				out->table->cell_start = out->buf.len;
				out->breaks = 0;
				out->space = false;
			}
			else
				owe_breaks(out, 1);
			return true;
		default:
			break;
	}
	block_breaks(out, tag);
	return true;
}

static void
md_close(void *state, xmlNode *node)
{
	MdOut	   *out = state;
	QcTag		tag = qc_tag(node);

	if (out->table != NULL && qc_layout(tag) != QC_LAYOUT_INLINE &&
		tag != QC_TAG_TD && tag != QC_TAG_TH && tag != QC_TAG_TR && tag != QC_TAG_TABLE)
	{
		out->space = true;
		return;
	}
	if (qc_heading_level(tag) > 0)
	{
		/* an empty heading leaves nothing */
		take_back(out, heading_markers[qc_heading_level(tag) - 1]);
		owe_breaks(out, 2);
		return;
	}
	switch (tag)
	{
		case QC_TAG_UL:
		case QC_TAG_OL:
		case QC_TAG_MENU:
		case QC_TAG_DIR:
			if (out->nlists > 0)
				out->nlists--;
			owe_breaks(out, out->nlists > 0 ? 1 : 2);
			return;
		case QC_TAG_LI:
			pop_box(out);
			owe_breaks(out, 1);
			return;
		case QC_TAG_BLOCKQUOTE:
			pop_box(out);
			owe_breaks(out, 2);
			return;
		case QC_TAG_PRE:
		case QC_TAG_LISTING:
		case QC_TAG_XMP:
		case QC_TAG_PLAINTEXT:
			out->pre--;
			trim_blanks(&out->buf);
			if (out->buf.len > 0 && out->buf.data[out->buf.len - 1] != '\n')
				new_line(out);
			appendStringInfoString(&out->buf, code_fence(node));
			owe_breaks(out, 2);
			return;
		case QC_TAG_CODE:
		case QC_TAG_KBD:
		case QC_TAG_SAMP:
		case QC_TAG_TT:
			if (out->pre == 0 && --out->code == 0)
			{
				const char *marker = code_marker(node);

				close_inline(out, marker, marker[1] == '`' ? " ``" : marker);
			}
			return;
		case QC_TAG_STRONG:
		case QC_TAG_B:
			if (out->pre == 0 && out->code == 0)
				close_inline(out, "**", "**");
			return;
		case QC_TAG_EM:
		case QC_TAG_I:
			if (out->pre == 0 && out->code == 0)
				close_inline(out, "*", "*");
			return;
		case QC_TAG_A:
			if (out->link == node)
			{
				out->link = NULL;
				if (out->pending.len > 0 &&
					out->pending.data[out->pending.len - 1] == '[')
				{
					/* a link without text is not written */
					out->pending.len--;
					out->pending.data[out->pending.len] = '\0';
					return;
				}
				appendStringInfoString(&out->buf, "](");
				append_url(out, qc_attr(node, "href"));
				appendStringInfoChar(&out->buf, ')');
			}
			return;
		case QC_TAG_TABLE:
			out->tables--;
			if (out->table != NULL && out->tables == 0)
			{
				MdTable    *table = out->table;

				out->table = NULL;
				write_table(out, table);
				return;
			}
			if (out->table != NULL)
			{
				/* a table inside a pipe table's cell flows on */
				out->space = true;
				return;
			}
			owe_breaks(out, 2);
			return;
		case QC_TAG_TR:
			if (out->table != NULL)
			{
				if (out->table->row != NIL)
					out->table->rows = lappend(out->table->rows, out->table->row);
				out->table->row = NIL;
			}
			else
				owe_breaks(out, 1);
			return;
		case QC_TAG_TD:
		case QC_TAG_TH:
			if (out->table != NULL)
				end_cell(out);
			else
				owe_breaks(out, 1);
			return;
		default:
			break;
	}
	block_breaks(out, tag);
}

char *
qc_write_markdown(List *roots, const char *base_url)
{
	static const QcWalker walker = {md_open, md_close, md_text};
	MdOut		out;
	ListCell   *lc;

	memset(&out, 0, sizeof(out));
	initStringInfo(&out.buf);
	initStringInfo(&out.pending);
	out.base_url = base_url;
	foreach(lc, roots)
	{
		qc_walk(lfirst(lc), true, &walker, &out);
		owe_breaks(&out, 2);
	}
	trim_end(&out);
	return out.buf.data;
}
