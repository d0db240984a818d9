/*-------------------------------------------------------------------------
 *
 * article.c
 *	  Find the main content of a page: formats 'article' and 'markdown'.
 *
 * (draft)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "html.h"

/* What we know of an element after the analysis pass */
typedef struct Info
{
	xmlNode    *node;
	int			parent;			/* index of the parent's Info, -1 for none */
	int			block;			/* nearest block element, itself included */
	int			end;			/* index past the last descendant */
	QcTag		tag;
	bool		is_block;
	int8		hint;			/* class/id: -1, 0, +1 */
	bool		strong_junk;	/* boilerplate by tag or role */
	bool		invisible;		/* hidden by its class, or an overlay */
	bool		comments;		/* a comment section, by its class */
	bool		repeated_link;	/* a short link whose text repeats */
	bool		junk;			/* decided: boilerplate */
	int			text;			/* characters of shown text below */
	int			link;			/* of which inside links */
	int			own_text;		/* characters directly in this block */
	int			own_link;
	int			own_links;		/* links directly in this block */
	double		good;			/* sum of positive block weights below */
	double		score;
} Info;

typedef struct Analysis
{
	Info	   *infos;
	int			ninfos;
	int			maxinfos;
	int			top;			/* innermost open element, -1: none */
	int			in_link;		/* open <a> elements */
	int			in_article;		/* open <article> and <main> elements */
	int			in_heading;		/* open <h1> to <h6> elements */
	double		link_weight;
	double		block_cost;
	double		junk_weight;
	double		keep_share;
	double		link_cost;
	double		comment_share;
	double		sibling_share;
} Analysis;

/* Non-space characters in UTF-8 text (NBSP counts as space) */
static int
count_chars(const char *p)
{
	int			n = 0;

	while (*p != '\0')
	{
		int			s = qc_space_length(p);

		if (s > 0)
		{
			p += s;
			continue;
		}
		if (((unsigned char) *p & 0xC0) != 0x80)
			n++;
		p++;
	}
	return n;
}

/* Does the lower-case string contain word as a whole token? */
static bool
has_token(const char *s, const char *word)
{
	size_t		len = strlen(word);
	const char *p = s;

	while ((p = strstr(p, word)) != NULL)
	{
		if ((p == s || !isalnum((unsigned char) p[-1])) &&
			!isalnum((unsigned char) p[len]))
			return true;
		p += len;
	}
	return false;
}

/*
 * Words in class and id attributes that mark boilerplate: navigation, site
 * chrome, sidebars, promotion, sharing, related links, consent banners,
 * overlays and controls.  Matched anywhere ("main-navigation"); the short
 * ones only as whole tokens ("ad-slot" but not "add").
 */
static const char *const negative_words[] = {
	"breadcrumb", "cookie", "consent", "gdpr", "newsletter", "subscribe",
	"signup", "sidebar", "share", "sharing", "social", "related", "recommend",
	"promo", "advert", "sponsor", "banner", "pagination", "pager", "disqus",
	"outbrain", "taboola", "footer", "masthead", "navbar", "navigation",
	"menu", "toolbar", "copyright", "button", "filter", "facet", "tooltip",
	"dropdown",
};
static const char *const negative_tokens[] = {
	"ad", "ads", "nav", "tags", "skip", "btn", "sort", "site-header",
	"top-header", "global-header",
};
static const char *const positive_words[] = {
	"article", "content", "entry", "post", "body", "main", "text", "story",
	"blog", "prose", "markdown", "docs", "documentation",
};

/* Words in class and id attributes that mark comment sections */
static const char *const comment_words[] = {
	"comment", "disqus", "respond",
};

/*
 * Class names that hide an element until a script shows it, or for good
 * (text for screen readers only), in the common CSS frameworks; and
 * overlays, which are closed when the page loads.
 */
static const char *const hiding_classes[] = {
	"hidden", "d-none", "sr-only", "visually-hidden", "screen-reader-text",
	"invisible", "is-hidden",
};
static const char *const overlay_words[] = {
	"modal", "popup", "offcanvas", "off-canvas", "lightbox",
};

/* The lower-cased class and id of an element, or NULL if it has neither */
static char *
class_and_id(const xmlNode *node)
{
	const char *cls = qc_attr(node, "class");
	const char *id = qc_attr(node, "id");
	char	   *s;
	int			i;

	if ((cls == NULL || cls[0] == '\0') && (id == NULL || id[0] == '\0'))
		return NULL;
	s = psprintf(" %s %s ", cls ? cls : "", id ? id : "");
	for (i = 0; s[i]; i++)
		s[i] = pg_ascii_tolower((unsigned char) s[i]);
	return s;
}

/* Does any of the words occur in s? */
static bool
contains_any(const char *s, const char *const *words, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		if (strstr(s, words[i]) != NULL)
			return true;
	}
	return false;
}

/* Does any of the words occur in s as a whole token? */
static bool
has_any_token(const char *s, const char *const *words, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		if (has_token(s, words[i]))
			return true;
	}
	return false;
}

/*
 * Is the element hidden by its class names?  Not when another class shows
 * it at some screen size ("hidden lg:block", "d-none d-md-flex").
 */
static bool
class_hides(const char *s)
{
	int			i;
	bool		hides = false;

	for (i = 0; i < lengthof(hiding_classes) && !hides; i++)
	{
		char		token[32];

		snprintf(token, sizeof(token), " %s ", hiding_classes[i]);
		hides = strstr(s, token) != NULL;
	}
	return hides && strchr(s, ':') == NULL &&
		strstr(s, " d-sm-") == NULL && strstr(s, " d-md-") == NULL &&
		strstr(s, " d-lg-") == NULL && strstr(s, " d-xl-") == NULL;
}

/* Do two elements have the same tag and the same first class name? */
static bool
alike(const xmlNode *a, const xmlNode *b)
{
	const char *ca;
	const char *cb;
	size_t		len;

	if (b->type != XML_ELEMENT_NODE || !xmlStrEqual(a->name, b->name))
		return false;
	ca = qc_attr(a, "class");
	cb = qc_attr(b, "class");
	if (ca == NULL || cb == NULL)
		return false;
	while (*ca == ' ')
		ca++;
	while (*cb == ' ')
		cb++;
	len = strcspn(ca, " \t\n");
	return len > 0 && strncmp(ca, cb, len) == 0 &&
		(cb[len] == '\0' || isspace((unsigned char) cb[len]));
}

/*
 * Is the element one of a run of like siblings?  Then its class names the
 * kind of item ("item filter-active", "share-count"), and whether the items
 * are boilerplate is for their container to say.
 */
static bool
repeated(const xmlNode *node)
{
	const xmlNode *sib;
	int			n;

	for (sib = node->prev, n = 0; sib != NULL && n < 10; sib = sib->prev, n++)
	{
		if (alike(node, sib))
			return true;
	}
	for (sib = node->next, n = 0; sib != NULL && n < 10; sib = sib->next, n++)
	{
		if (alike(node, sib))
			return true;
	}
	return false;
}

/* What the class and id suggest: -1 boilerplate, +1 content, 0 either */
static int
class_hint(const char *s)
{
	bool		neg;
	bool		pos;

	if (s == NULL)
		return 0;
	neg = contains_any(s, negative_words, lengthof(negative_words)) ||
		has_any_token(s, negative_tokens, lengthof(negative_tokens));
	pos = contains_any(s, positive_words, lengthof(positive_words));
	return (pos ? 1 : 0) - (neg ? 1 : 0);
}

static bool
role_is_junk(const xmlNode *node)
{
	static const char *const roles[] = {
		"navigation", "banner", "contentinfo", "complementary", "search",
		"menu", "menubar", "dialog", "alertdialog", "toolbar",
	};
	const char *role = qc_attr(node, "role");
	int			i;

	if (role == NULL)
		return false;
	for (i = 0; i < lengthof(roles); i++)
	{
		if (pg_strcasecmp(role, roles[i]) == 0)
			return true;
	}
	return false;
}

static bool
is_strong_junk(const xmlNode *node, QcTag tag)
{
	switch (tag)
	{
		case TAG_BUTTON:
		case TAG_SELECT:
		case TAG_INPUT:
		case TAG_TEXTAREA:
		case TAG_LABEL:
			return true;
		default:
			break;
	}
	return false;
}

static bool
analysis_open(void *state, xmlNode *node)
{
	Analysis   *a = state;
	QcTag		tag = qc_tag(node);
	Info	   *info;
	int			index;
	char	   *names;

	if (!qc_shown(node, tag))
		return false;
	names = class_and_id(node);
	if (a->ninfos == a->maxinfos)
		elog(ERROR, "article analysis overflow");
	index = a->ninfos++;
	info = &a->infos[index];
	memset(info, 0, sizeof(Info));
	info->node = node;
	info->parent = a->top;
	info->tag = tag;
	info->is_block = qc_layout(tag) != LAYOUT_INLINE;
	info->block = info->is_block ? index : (a->top >= 0 ? a->infos[a->top].block : -1);
	if (tag != TAG_HTML && tag != TAG_BODY && tag != TAG_HEAD)
	{
		info->strong_junk = is_strong_junk(node, tag);
		info->hint = repeated(node) ? 0 : class_hint(names);
		info->invisible = names != NULL &&
			(class_hides(names) ||
			 contains_any(names, overlay_words, lengthof(overlay_words)));
		if (info->invisible)
			info->hint = -1;
		info->comments = names != NULL &&
			contains_any(names, comment_words, lengthof(comment_words));
		if (tag == TAG_ASIDE || tag == TAG_NAV || tag == TAG_DIALOG ||
			tag == TAG_FORM ||
			role_is_junk(node))
			info->hint = -1;
		/* the header of an article is its headline and byline */
		if ((tag == TAG_HEADER || tag == TAG_FOOTER) && a->in_article == 0)
			info->hint = -1;
	}
	node->_private = info;
	if (tag == TAG_ARTICLE || tag == TAG_MAIN)
		a->in_article++;
	if (qc_heading_level(tag) > 0)
		a->in_heading++;
	if (tag == TAG_A)
		a->in_link++;
	a->top = index;
	return true;
}

static void
analysis_close(void *state, xmlNode *node)
{
	Analysis   *a = state;
	Info	   *info = node->_private;

	if (info->tag == TAG_A)
	{
		a->in_link--;
		/* an image link costs nothing: it goes with the link of its card */
		if (info->block >= 0 && info->text > 0)
			a->infos[info->block].own_links++;
	}
	if (info->tag == TAG_ARTICLE || info->tag == TAG_MAIN)
		a->in_article--;
	if (qc_heading_level(info->tag) > 0)
		a->in_heading--;
	info->end = a->ninfos;
	if (info->parent >= 0)
	{
		Info	   *parent = &a->infos[info->parent];

		parent->text += info->text;
		parent->link += info->link;
	}
	a->top = info->parent;
}

static void
analysis_text(void *state, const char *text)
{
	Analysis   *a = state;
	Info	   *top;
	int			n;
	bool		linked;

	if (a->top < 0)
		return;
	top = &a->infos[a->top];
	{
		const char *probe = GetConfigOption("qc_dev.probe", true, false);

		if (probe && probe[0] && strstr(text, probe))
		{
			StringInfoData path;
			int			j;

			initStringInfo(&path);
			for (j = a->top; j >= 0; j = a->infos[j].parent)
				appendStringInfo(&path, " < %s.%s#%s", a->infos[j].node->name,
								 qc_attr(a->infos[j].node, "class") ? qc_attr(a->infos[j].node, "class") : "",
								 qc_attr(a->infos[j].node, "id") ? qc_attr(a->infos[j].node, "id") : "");
			elog(NOTICE, "probe: %s", path.data);
		}
	}
	n = count_chars(text);
	/* a linked headline is a teaser in a listing: it counts as text */
	linked = a->in_link > 0 && a->in_heading == 0;
	top->text += n;
	if (linked)
		top->link += n;
	if (top->block >= 0)
	{
		Info	   *block = &a->infos[top->block];

		block->own_text += n;
		if (linked)
			block->own_link += n;
	}
}

/*
 * Is the element a minor part of what surrounds it: of the nearest
 * ancestor that holds more text than it?  Boilerplate hinted by its tag or
 * class is dropped only then: libxml2 may nest a page's whole content in a
 * <nav> whose </nav> it could not place, and a layout wrapper named
 * "with-sidebar" may hold the article.
 */
static bool
is_minor(Analysis *a, Info *info)
{
	int			p;
	int			steps = 0;

	for (p = info->parent; p >= 0 && steps < 30; p = a->infos[p].parent, steps++)
	{
		Info	   *anc = &a->infos[p];

		if (anc->text > info->text + info->text / 10 + 20)
			return info->good < a->keep_share * anc->good;
	}
	return false;
}

/*
 * Decide, children before parents, which elements are boilerplate and what
 * each element scores.
 */
static void
decide(Analysis *a)
{
	int			i;

	/* content mass first */
	for (i = a->ninfos - 1; i >= 0; i--)
	{
		Info	   *info = &a->infos[i];

		if (info->is_block && info->own_text > 0)
		{
			double		w = (info->own_text - info->own_link) -
				a->link_weight * info->own_link - a->block_cost -
				a->link_cost * info->own_links;

			info->score = w;
			info->good += Max(w, 0);
		}
		if (info->parent >= 0)
			a->infos[info->parent].good += info->good;
	}
	for (i = a->ninfos - 1; i >= 0; i--)
	{
		Info	   *info = &a->infos[i];

		info->junk = info->strong_junk || (info->hint < 0 && is_minor(a, info));
		if (info->junk && info->text > 1000 && GetConfigOption("qc_dev.debug", true, false))
			elog(NOTICE, "junk <%s class=%s id=%s role=%s> text %d link %d good %.0f",
				 info->node->name, qc_attr(info->node, "class"),
				 qc_attr(info->node, "id"), qc_attr(info->node, "role"), info->text, info->link, info->good);
		if (info->parent >= 0)
			a->infos[info->parent].score +=
				!info->junk ? info->score :
				info->invisible ? 0 : -a->junk_weight * info->text;
	}
}

/* The best region: the element of highest score outside boilerplate */
static Info *
choose(Analysis *a)
{
	Info	   *best = NULL;
	int			i = 0;

	while (i < a->ninfos)
	{
		Info	   *info = &a->infos[i];

		if (info->junk)
		{
			i = info->end;
			continue;
		}
		if (info->tag != TAG_HTML && info->tag != TAG_HEAD &&
			(best == NULL || info->score >= best->score))
			best = info;
		i++;
	}
	return best;
}

/* A link's text, for finding the texts that repeat */
typedef struct LinkText
{
	char	   *text;
	int			index;
} LinkText;

static int
link_text_cmp(const void *a, const void *b)
{
	return strcmp(((const LinkText *) a)->text, ((const LinkText *) b)->text);
}

/*
 * Mark the short links inside the region whose text repeats at least three
 * times ("Reply", "View details", "Read more"): they are controls, not
 * content.  Texts with digits are left alone: those are prices and dates.
 */
static void
mark_repeated_links(Analysis *a, Info *region)
{
	int			first = region - a->infos;
	LinkText   *links = palloc(sizeof(LinkText) * (region->end - first));
	int			n = 0;
	int			i;
	int			j;

	for (i = first; i < region->end; i++)
	{
		Info	   *info = &a->infos[i];

		if (info->tag == TAG_A && info->text > 0 && info->text <= 30)
		{
			char	   *text = qc_node_text(info->node);

			if (strpbrk(text, "0123456789") != NULL)
				continue;
			links[n].text = text;
			links[n].index = i;
			n++;
		}
	}
	qsort(links, n, sizeof(LinkText), link_text_cmp);
	for (i = 0; i < n; i = j)
	{
		for (j = i + 1; j < n && strcmp(links[i].text, links[j].text) == 0; j++)
			;
		if (j - i >= 3)
		{
			int			k;

			for (k = i; k < j; k++)
				a->infos[links[k].index].repeated_link = true;
		}
	}
	for (i = 0; i < n; i++)
		pfree(links[i].text);
	pfree(links);
}

/*
 * Drop the boilerplate inside the region.  Comment sections go too, unless
 * they are most of it: on a forum or a discussion page, the comments are
 * the content.
 */
static void
prune(Analysis *a, Info *region)
{
	int			first = region - a->infos;
	double		comment_good = 0;
	bool		drop_comments;
	int			i;

	for (i = first + 1; i < region->end;)
	{
		if (a->infos[i].comments)
		{
			comment_good += a->infos[i].good;
			i = a->infos[i].end;
		}
		else
			i++;
	}
	drop_comments = comment_good < a->comment_share * region->good;
	mark_repeated_links(a, region);

	for (i = first + 1; i < region->end;)
	{
		Info	   *info = &a->infos[i];

		if (info->junk || info->repeated_link ||
			(drop_comments && info->comments))
		{
			info->node->_private = &qc_dropped_mark;
			i = info->end;
		}
		else
			i++;
	}
}

/* An upper bound of the number of elements in the tree */
static int
count_elements(xmlNode *root)
{
	xmlNode    *node = root;
	int			n = 0;

	while (node != NULL)
	{
		if (node->type == XML_ELEMENT_NODE)
			n++;
		if (node->children != NULL)
		{
			node = node->children;
			continue;
		}
		while (node != NULL && node->next == NULL)
		{
			node = node->parent;
			if (node == root)
				return n;
		}
		if (node == NULL)
			break;
		node = node->next;
	}
	return n;
}

static double
env_double(const char *name, double dflt)
{
	const char *v = GetConfigOption(name, true, false);

	return v ? atof(v) : dflt;
}

/*
 * The region as a list of elements: the best one, and the siblings of the
 * wrapper it sits in that score well too (the description of a listing and
 * the listing itself, when what separates them is boilerplate).
 */
static List *
with_siblings(Analysis *a, Info *best)
{
	Info	   *top = best;
	Info	   *parent;
	List	   *roots = NIL;
	int			i;

	/* climb the wrappers that hold nothing else */
	while (top->parent >= 0 && a->infos[top->parent].text == top->text &&
		   a->infos[top->parent].tag != TAG_BODY)
		top = &a->infos[top->parent];
	if (top->parent < 0)
		return list_make1(best);
	parent = &a->infos[top->parent];
	for (i = top->parent + 1; i < parent->end; i = a->infos[i].end)
	{
		Info	   *sib = &a->infos[i];

		if (sib == top)
			roots = lappend(roots, best);
		else if (!sib->junk && sib->score > 0 &&
				 sib->score >= a->sibling_share * best->score)
		{
			prune(a, sib);
			roots = lappend(roots, sib);
		}
	}
	return roots;
}

List *
qc_article_select(xmlDoc *doc)
{
	static const QcWalker analysis = {analysis_open, analysis_close, analysis_text};
	xmlNode    *root = qc_root_element(doc);
	Analysis	a;
	Info	   *best;
	List	   *roots;
	ListCell   *lc;

	if (root == NULL)
		return NIL;
	memset(&a, 0, sizeof(a));
	a.maxinfos = count_elements(root) + 1;
	a.infos = palloc(sizeof(Info) * a.maxinfos);
	a.top = -1;
	a.link_weight = env_double("qc_dev.lw", -0.5);
	a.block_cost = env_double("qc_dev.bc", 0);
	a.junk_weight = env_double("qc_dev.jw", 1.0);
	a.keep_share = env_double("qc_dev.ks", 0.5);
	a.link_cost = env_double("qc_dev.lc", 15);
	a.comment_share = env_double("qc_dev.cs", 0.75);
	a.sibling_share = env_double("qc_dev.ss", 0.3);
	qc_walk(root, true, &analysis, &a);
	decide(&a);
	best = choose(&a);
	if (best == NULL)
		return list_make1(qc_find_body(doc));
	if (GetConfigOption("qc_dev.debug", true, false))
		elog(NOTICE, "best <%s class=%s id=%s> score %.0f text %d link %d",
			 best->node->name, qc_attr(best->node, "class"),
			 qc_attr(best->node, "id"), best->score, best->text, best->link);
	if (GetConfigOption("qc_dev.debug", true, false))
	{
		int			p;

		for (p = best - a.infos; p >= 0; p = a.infos[p].parent)
		{
			Info	   *anc = &a.infos[p];
			int			c;

			elog(NOTICE, "anc <%s class=%.40s id=%s> score %.0f text %d good %.0f junk %d hint %d",
				 anc->node->name, qc_attr(anc->node, "class"), qc_attr(anc->node, "id"),
				 anc->score, anc->text, anc->good, anc->junk, anc->hint);
			for (c = p + 1; c < anc->end; c = a.infos[c].end)
			{
				Info	   *ch = &a.infos[c];

				if (ch->text > 30)
					elog(NOTICE, "     child <%s class=%.40s id=%s> score %.0f text %d link %d good %.0f junk %d hint %d",
						 ch->node->name, qc_attr(ch->node, "class"), qc_attr(ch->node, "id"),
						 ch->score, ch->text, ch->link, ch->good, ch->junk, ch->hint);
			}
		}
	}
	{
		const char *focus = GetConfigOption("qc_dev.focus", true, false);
		int			i;

		for (i = 0; focus && i < a.ninfos; i++)
		{
			const char *c = qc_attr(a.infos[i].node, "class");

			if (c && strstr(c, focus))
			{
				int			j,
							d;

				for (j = i; j < a.infos[i].end && j < i + 80; j++)
				{
					for (d = 0, c = NULL; d < 0; d++);
					elog(NOTICE, "focus %d <%s class=%.50s> score %.0f text %d link %d own %d/%d/%d good %.0f junk %d hint %d",
						 j - i, a.infos[j].node->name, qc_attr(a.infos[j].node, "class"),
						 a.infos[j].score, a.infos[j].text, a.infos[j].link,
						 a.infos[j].own_text, a.infos[j].own_link, a.infos[j].own_links,
						 a.infos[j].good, a.infos[j].junk, a.infos[j].hint);
				}
				break;
			}
		}
	}
	prune(&a, best);
	roots = with_siblings(&a, best);
	foreach(lc, roots)
		lfirst(lc) = ((Info *) lfirst(lc))->node;
	return roots;
}
