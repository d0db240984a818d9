/*-------------------------------------------------------------------------
 *
 * content.c
 *	  HTML turned into the format asked for: the dispatch above the writers.
 *
 * html.c decides the charset and parses the page; this file hands the tree
 * to the writer of the format asked for (text.c, markdown.c, of the whole
 * page or of the main content article.c finds) and to metadata.c, then
 * makes their UTF-8 valid text in the database encoding.  It sits above
 * them all, so that the writers depend on html.c's helpers and nothing
 * depends back on them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <libxml/tree.h>

#include "miscadmin.h"

#include "article.h"
#include "content.h"
#include "html.h"
#include "markdown.h"
#include "metadata.h"
#include "text.h"

/* Forget what article.c marked as dropped, in every element. */
static void
forget_marks(xmlNode *root)
{
	xmlNode    *node;

	for (node = root; node != NULL; node = qc_next_node(node, root, false))
	{
		if (node->type == XML_ELEMENT_NODE)
			node->_private = NULL;
	}
}

/*
 * The main content as text or Markdown.  Should nothing be left of it (a
 * page of nothing but the same link, say), the whole page is written: the
 * format never answers nothing where there is text.
 */
static char *
write_article(xmlDocPtr doc, QcHtmlFormat format, const char *base_url)
{
	List	   *roots = qc_article_select(doc);
	char	   *text;

	for (;;)
	{
		text = format == QC_HTML_MARKDOWN ? qc_write_markdown(roots, base_url) :
			qc_write_text(roots, NULL);
		if (text[0] != '\0' || roots == NIL || qc_root_element(doc) == NULL ||
			linitial(roots) == (void *) qc_root_element(doc))
			return text;
		forget_marks(qc_root_element(doc));
		roots = list_make1(qc_root_element(doc));
	}
}

/* Write doc in the format asked for, and its metadata if asked; UTF-8. */
static char *
write_document(xmlDocPtr doc, QcHtmlFormat format, const char *base_url,
			   char **metadata)
{
	char	   *text = NULL;

	switch (format)
	{
		case QC_HTML_NONE:
			break;
		case QC_HTML_TEXT:
			text = qc_write_text(list_make1(doc), qc_document_title(doc));
			break;
		case QC_HTML_ARTICLE:
		case QC_HTML_MARKDOWN:
			text = write_article(doc, format, base_url);
			break;
	}
	if (metadata != NULL)
		*metadata = qc_metadata_json(doc, base_url);
	return text;
}

char *
qc_html_convert(const char *html, size_t len, const char *charset,
				QcHtmlFormat format, const char *base_url, char **metadata)
{
	const char *encoding = qc_html_charset(html, len, charset);
	size_t		utf8len;
	char	   *utf8 = qc_to_utf8(html, len, encoding, &utf8len);
	volatile xmlDocPtr doc = NULL;
	char	   *volatile text = NULL;
	char	   *meta = NULL;
	char	   *result = NULL;

	CHECK_FOR_INTERRUPTS();
	if (utf8len > 0)
		doc = qc_html_parse(utf8, utf8len);
	pfree(utf8);

	/*
	 * The writers allocate and check for interrupts, either of which may
	 * raise an error: the document is freed on every path.  (PG_CATCH rather
	 * than PG_FINALLY: gcc's -Wclobbered misfires on the latter here.)
	 */
	if (doc != NULL)
	{
		PG_TRY();
		{
			text = write_document(doc, format, base_url,
								  metadata ? &meta : NULL);
		}
		PG_CATCH();
		{
			xmlFreeDoc(doc);
			PG_RE_THROW();
		}
		PG_END_TRY();
		xmlFreeDoc(doc);
	}
	else if (metadata != NULL)
		meta = qc_metadata_json(NULL, base_url);

	if (metadata != NULL)
		*metadata = qc_to_server_text(meta, strlen(meta), NULL);
	if (format != QC_HTML_NONE)
	{
		if (text == NULL)
			text = pstrdup("");
		result = qc_to_server_text(text, strlen(text), NULL);
	}
	return result;
}
