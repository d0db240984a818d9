/*-------------------------------------------------------------------------
 *
 * article.c
 *	  Find the main content of a page: formats 'article' and 'markdown'.
 *
 * The main content is the article, the product, the documentation body,
 * the forum thread or the listing; what is left out is the page's chrome:
 * navigation, site header and footer, sidebars, related links, sharing,
 * cookie and newsletter banners, comment sections, controls.
 *
 * One pass over the tree measures each element: its characters of text,
 * how many of them are in links, and for each block element (a paragraph,
 * a heading, a list item, a cell) a weight: its own text, with link text
 * counting half, less LINK_COST characters for each link in it.  Prose
 * weighs by its length; a menu, whose blocks are one short link each,
 * weighs less than nothing.  A linked headline counts as text: a listing's
 * teasers are content.
 *
 * Then, children before parents, each element gets a score: the weights
 * of its blocks, plus its children's scores, except that a child that is
 * boilerplate counts as minus its text.  Boilerplate is what the page says
 * is boilerplate: <nav>, <aside>, a <header> or <footer> outside any
 * <article> or <main>, ARIA landmark roles, class and id names ("sidebar",
 * "share", "cookie", "related"...), and form controls.  Names mislead
 * (a layout wrapper called "with-sidebar" may hold the article, and
 * libxml2 may nest a whole page in a <nav> whose end tag it could not
 * place), so such an element counts as boilerplate only when it is a minor
 * part of what surrounds it.
 *
 * The main region is the element of highest score outside boilerplate:
 * the smallest element that holds the content while leaving the chrome
 * out.  Its siblings that score well too join it (the description above a
 * listing and the listing), and inside it the boilerplate, the comment
 * sections (unless they are most of it: on a forum they are the content),
 * links repeated as controls ("Reply", "Read more"), the copies of a
 * sentence printed again (a promotion on every card, a carousel's cloned
 * slide, a block laid out twice for two screen sizes) and the teaser cards
 * for other pages below the content (related posts, author bios) are
 * dropped.  When
 * nothing scores above zero there is no clear main region, and the whole
 * <body> is the region.
 *
 * The weights were set on a development corpus of 50 real pages of seven
 * kinds (see test/bench/content.sh) and kept round; no rule names a site.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"

#include "article.h"
#include "html.h"

/* What a link costs its block, in characters of text */
#define LINK_COST 15
/* What a character of link text weighs, against 1 for other text */
#define LINK_TEXT_WEIGHT 0.5
/* Boilerplate is minor when it holds less than this share of the content
 * around it, or less than half this share of the text */
#define MINOR_SHARE 0.5
/* Comment sections are kept when they hold at least this share */
#define COMMENTS_SHARE 0.75
/* Siblings of the region join it when they score this share of it */
#define SIBLING_SHARE 0.3
/* Links at most this long whose text repeats this often are controls */
#define CONTROL_LINK_CHARS 30
#define CONTROL_LINK_REPEATS 3
/* Blocks at least this long whose text repeats are copies */
#define REPEATED_BLOCK_CHARS 25
/* A teaser card has at most this much text, and this much not linked */
#define TEASER_CARD_CHARS 400
#define TEASER_DESCRIPTION_CHARS 40
/* Teasers below the content are dropped when they hold less than this */
#define TEASER_SHARE 0.25

/* What the analysis knows of a shown element */
typedef struct Info
{
	xmlNode    *node;
	int			parent;			/* index of the parent's Info, -1 for none */
	int			block;			/* nearest block element, itself included */
	int			end;			/* index past its last descendant */
	QcTag		tag;
	bool		is_block;
	int8		hint;			/* -1 boilerplate, +1 content, 0 either */
	bool		control;		/* a form control: always boilerplate */
	bool		invisible;		/* hidden by its class, or an overlay */
	bool		comments;		/* a comment section */
	bool		author_card;	/* a post's author card */
	bool		repeated;		/* a control link, or a block's copy */
	bool		junk;			/* decided: boilerplate */
	int			text;			/* characters of shown text below */
	int			link;			/* of which in links */
	int			own_text;		/* characters in this block itself */
	int			own_link;
	int			own_links;		/* links with text in this block itself */
	double		good;			/* the positive block weights below */
	double		score;
	long		text_before;	/* characters of shown text before it */
} Info;

/*
 * The analysis: one Info per shown element, in document order, so that an
 * element's descendants are the Infos from its index to its end.
 */
typedef struct NamesCacheEntry
{
	uint32		hash;
	const char *value;			/* the attribute's value, in the tree */
	uint8		flags;
} NamesCacheEntry;

typedef struct Analysis
{
	Info	   *infos;
	int			ninfos;
	int			maxinfos;
	int			top;			/* innermost open element, -1: none */
	int			in_link;		/* open <a> elements */
	int			in_article;		/* open <article> and <main> elements */
	int			in_heading;		/* open <h1> to <h6> elements */
	long		text_so_far;	/* characters of shown text so far */
	NamesCacheEntry *names_cache;	/* NAMES_CACHE_SIZE entries */
} Analysis;


/*
 * What class and id names say
 */

/*
 * Words in class and id attributes that mark boilerplate: navigation, site
 * chrome, sidebars, promotion, sharing, related links, consent banners and
 * controls.  Matched anywhere ("main-navigation"); the short ones only as
 * whole tokens ("ad-slot" but not "add").
 */
static const char *const boilerplate_words[] = {
	"breadcrumb", "cookie", "consent", "gdpr", "newsletter", "subscribe",
	"signup", "sidebar", "share", "sharing", "social", "related", "recommend",
	"promo", "advert", "sponsor", "banner", "pagination", "pager", "disqus",
	"outbrain", "taboola", "footer", "masthead", "navbar", "navigation",
	"menu", "toolbar", "copyright", "button", "filter", "facet", "tooltip",
	"dropdown", "cross-sell", "crosssell", "upsell", "up-sell", "signature",
};
static const char *const boilerplate_tokens[] = {
	"ad", "ads", "nav", "tags", "skip", "btn", "sort", "site-header",
	"top-header", "global-header", "tab-nav", "tab-navs", "loader", "spinner",
};
static const char *const content_words[] = {
	"article", "content", "entry", "post", "body", "main", "text", "story",
	"blog", "prose", "markdown", "docs", "documentation",
};

/* Words that mark layout wrappers, which hold content and chrome alike */
static const char *const layout_words[] = {
	"wrap", "container", "layout", "inner", "outer",
};

/*
 * Words that mark the card of a post's author in a thread: rank, join date,
 * post count.  Dropped from the region, but not held against it when it is
 * chosen: every post of a thread has one, and a thread of short replies is
 * still the content.
 */
static const char *const author_card_words[] = {
	"userinfo", "user-info", "userdetails", "user-details", "postprofile",
	"postbit", "author-info", "usertitle", "user-title", "userbanner",
};

/* Words that mark comment sections */
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
	"invisible", "is-hidden", "hide", "w-condition-invisible", "w-form-done",
	"w-form-fail",
};
static const char *const overlay_words[] = {
	"modal", "popup", "offcanvas", "off-canvas", "lightbox",
};

/* ARIA roles of boilerplate */
static const char *const boilerplate_roles[] = {
	"navigation", "banner", "contentinfo", "complementary", "search", "menu",
	"menubar", "dialog", "alertdialog", "toolbar", "tablist",
};

/* What the names of a class or id attribute say */
#define NAMES_BOILERPLATE	0x01
#define NAMES_CONTENT		0x02
#define NAMES_LAYOUT		0x04	/* a layout wrapper */
#define NAMES_HIDDEN		0x08	/* hidden by its class, or an overlay */
#define NAMES_COMMENTS		0x10
#define NAMES_AUTHOR_CARD	0x20
#define NAMES_HIDING_CLASS	0x40	/* only while names_flags() works */

/* Class attributes repeat: what they say is remembered, this many */
#define NAMES_CACHE_SIZE 512

/*
 * All the words above in one table, chained by first letter, so that one
 * pass over the names finds them all: every element of a page has its names
 * read, and a search for each word in turn took half of the analysis.
 */
typedef enum NameMatch
{
	MATCH_ANYWHERE,				/* "main-navigation" has "navigation" */
	MATCH_TOKEN,				/* "ad-slot" has "ad", "add" has not */
	MATCH_CLASS					/* a whole class name, between spaces */
} NameMatch;

typedef struct NameWord
{
	const char *word;
	int			len;
	uint8		flag;			/* NAMES_ flag it sets */
	NameMatch	match;
	int			next;			/* the next word of the same first letter */
} NameWord;

#define NAME_WORDS (lengthof(boilerplate_words) + lengthof(boilerplate_tokens) + \
					lengthof(content_words) + lengthof(layout_words) + \
					lengthof(author_card_words) + lengthof(comment_words) + \
					lengthof(hiding_classes) + lengthof(overlay_words))
static NameWord name_words[NAME_WORDS];
static int	name_words_first[256];	/* -1: no word begins with the letter */
static bool name_words_ready = false;

/* Which list sets which flag, and how its words must occur */
static const struct
{
	const char *const *words;
	int			n;
	uint8		flag;
	NameMatch	match;
}			name_lists[] = {
	{boilerplate_words, lengthof(boilerplate_words), NAMES_BOILERPLATE, MATCH_ANYWHERE},
	{boilerplate_tokens, lengthof(boilerplate_tokens), NAMES_BOILERPLATE, MATCH_TOKEN},
	{content_words, lengthof(content_words), NAMES_CONTENT, MATCH_ANYWHERE},
	{layout_words, lengthof(layout_words), NAMES_LAYOUT, MATCH_ANYWHERE},
	{author_card_words, lengthof(author_card_words), NAMES_AUTHOR_CARD, MATCH_ANYWHERE},
	{comment_words, lengthof(comment_words), NAMES_COMMENTS, MATCH_ANYWHERE},
	{hiding_classes, lengthof(hiding_classes), NAMES_HIDING_CLASS, MATCH_CLASS},
	{overlay_words, lengthof(overlay_words), NAMES_HIDDEN, MATCH_ANYWHERE},
};

static void
name_words_init(void)
{
	int			count = 0;
	int			i;
	int			j;

	memset(name_words_first, -1, sizeof(name_words_first));
	for (i = 0; i < lengthof(name_lists); i++)
	{
		for (j = 0; j < name_lists[i].n; j++)
		{
			NameWord   *w = &name_words[count];
			const char *word = name_lists[i].words[j];

			/* NAME_WORDS counts the lists; names_flags() reads two letters */
			if (count == NAME_WORDS || strlen(word) < 2)
				elog(ERROR, "name word list does not match NAME_WORDS");
			w->word = word;
			w->len = strlen(word);
			w->flag = name_lists[i].flag;
			w->match = name_lists[i].match;
			w->next = name_words_first[(unsigned char) word[0]];
			name_words_first[(unsigned char) word[0]] = count++;
		}
	}
	name_words_ready = true;
}

/* Does the word w, found at p in names, occur there the way it must? */
static bool
occurs_as_named(const char *names, const char *p, const NameWord *w)
{
	unsigned char after = (unsigned char) p[w->len];

	switch (w->match)
	{
		case MATCH_ANYWHERE:
			return true;
		case MATCH_TOKEN:
			return (p == names || !isalnum((unsigned char) p[-1])) &&
				!isalnum(after);
		case MATCH_CLASS:
			return p > names && p[-1] == ' ' && after == ' ';
	}
	return false;
}

/*
 * Does another class show an element that a hiding class hides, at some
 * screen size ("hidden lg:block", "d-none d-md-flex")?
 */
static bool
shown_at_some_size(const char *names)
{
	return strchr(names, ':') != NULL ||
		strstr(names, " d-sm-") != NULL || strstr(names, " d-md-") != NULL ||
		strstr(names, " d-lg-") != NULL || strstr(names, " d-xl-") != NULL;
}

/* What the names in a class or id attribute say (NAMES_ flags) */
static uint8
names_flags(const char *value)
{
	/* between spaces, so that a whole class name is " name " */
	char	   *names = psprintf(" %s ", value);
	uint8		flags = 0;
	const char *p;
	int			i;

	if (!name_words_ready)
		name_words_init();
	for (i = 0; names[i]; i++)
		names[i] = isspace((unsigned char) names[i]) ? ' ' :
			pg_ascii_tolower((unsigned char) names[i]);
	for (p = names; *p; p++)
	{
		int			k;

		for (k = name_words_first[(unsigned char) *p]; k >= 0; k = name_words[k].next)
		{
			const NameWord *w = &name_words[k];

			/* every word has two letters or more: test the second first */
			if ((flags & w->flag) == 0 && p[1] == w->word[1] &&
				strncmp(p, w->word, w->len) == 0 &&
				occurs_as_named(names, p, w))
				flags |= w->flag;
		}
	}
	if ((flags & NAMES_HIDING_CLASS) && !shown_at_some_size(names))
		flags |= NAMES_HIDDEN;
	pfree(names);
	return flags & ~NAMES_HIDING_CLASS;
}

/* names_flags() of a class attribute, remembered */
static uint8
class_flags(Analysis *a, const char *value)
{
	uint32		hash = hash_bytes((const unsigned char *) value, strlen(value));
	NamesCacheEntry *entry = &a->names_cache[hash % NAMES_CACHE_SIZE];

	if (entry->value == NULL || entry->hash != hash ||
		strcmp(entry->value, value) != 0)
	{
		entry->hash = hash;
		entry->value = value;
		entry->flags = names_flags(value);
	}
	return entry->flags;
}

/*
 * What the class and id names suggest: -1 boilerplate, +1 content, 0 either.
 * Boilerplate names win ("p-body-sidebar" is a sidebar), except on a layout
 * wrapper ("content-sidebar-wrap" holds both).
 */
static int
names_hint(uint8 flags)
{
	bool		boilerplate = (flags & NAMES_BOILERPLATE) != 0;
	bool		content = (flags & NAMES_CONTENT) != 0;

	if (boilerplate && content && (flags & NAMES_LAYOUT))
		return 0;
	return boilerplate ? -1 : content ? 1 : 0;
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
	while (isspace((unsigned char) *ca))
		ca++;
	while (isspace((unsigned char) *cb))
		cb++;
	len = strcspn(ca, " \t\n\r\f");
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

static bool
role_is_boilerplate(const xmlNode *node)
{
	const char *role = qc_attr(node, "role");
	int			i;

	if (role == NULL)
		return false;
	for (i = 0; i < lengthof(boilerplate_roles); i++)
	{
		if (pg_strcasecmp(role, boilerplate_roles[i]) == 0)
			return true;
	}
	return false;
}

/* Set what the tag, role and names of an element say about it. */
static void
judge_element(Analysis *a, Info *info)
{
	xmlNode    *node = info->node;
	QcTag		tag = info->tag;
	const char *cls = qc_attr(node, "class");
	const char *id = qc_attr(node, "id");
	uint8		flags = 0;

	if (tag == QC_TAG_HTML || tag == QC_TAG_BODY || tag == QC_TAG_HEAD)
		return;
	info->control = (tag == QC_TAG_BUTTON || tag == QC_TAG_SELECT ||
					 tag == QC_TAG_INPUT || tag == QC_TAG_TEXTAREA ||
					 tag == QC_TAG_LABEL);
	if (cls != NULL && cls[0] != '\0')
		flags |= class_flags(a, cls);
	if (id != NULL && id[0] != '\0')
		flags |= names_flags(id);
	info->hint = names_hint(flags);
	if (info->hint < 0 && repeated(node))
		info->hint = 0;
	if (tag == QC_TAG_ASIDE || tag == QC_TAG_NAV || tag == QC_TAG_DIALOG ||
		tag == QC_TAG_FORM || role_is_boilerplate(node))
		info->hint = -1;
	/* the header of an article is its headline and byline */
	if ((tag == QC_TAG_HEADER || tag == QC_TAG_FOOTER) && a->in_article == 0)
		info->hint = -1;
	info->invisible = (flags & NAMES_HIDDEN) != 0;
	if (info->invisible)
		info->hint = -1;
	info->comments = (flags & NAMES_COMMENTS) != 0;
	info->author_card = (flags & NAMES_AUTHOR_CARD) != 0;
}


/*
 * The analysis pass
 */

/*
 * The length of UTF-8 text for weighing it: its non-space characters (NBSP
 * is a space), the wide ones of East Asian scripts counting two, as they
 * do on a screen.  A word of Chinese, Japanese or Korean is one or two
 * characters, against five or six in European languages; counted this way
 * the weights and costs below mean the same in both.
 */
static int
count_chars(const char *p)
{
	int			n = 0;

	while (*p != '\0')
	{
		unsigned char c = (unsigned char) *p;
		int			s = qc_space_length(p);

		if (s > 0)
		{
			p += s;
			continue;
		}
		/* U+2E80 to U+D7FF (CJK, kana, Hangul), U+F000 up, and beyond BMP */
		if ((c >= 0xE2 && c <= 0xED && (c != 0xE2 || (unsigned char) p[1] >= 0xBA)) ||
			c >= 0xEF)
			n += 2;
		else if ((c & 0xC0) != 0x80)
			n++;
		p++;
	}
	return n;
}

static bool
analysis_open(void *state, xmlNode *node)
{
	Analysis   *a = state;
	QcTag		tag = qc_tag(node);
	Info	   *info;
	int			index;

	if (!qc_shown(node, tag))
		return false;
	if (a->ninfos == a->maxinfos)
		elog(ERROR, "more elements than counted");
	index = a->ninfos++;
	info = &a->infos[index];
	memset(info, 0, sizeof(Info));
	info->node = node;
	info->parent = a->top;
	info->tag = tag;
	info->text_before = a->text_so_far;
	info->is_block = qc_layout(tag) != QC_LAYOUT_INLINE;
	info->block = info->is_block ? index :
		(a->top >= 0 ? a->infos[a->top].block : -1);
	judge_element(a, info);
	node->_private = info;

	if (tag == QC_TAG_ARTICLE || tag == QC_TAG_MAIN)
		a->in_article++;
	if (qc_heading_level(tag) > 0)
		a->in_heading++;
	if (tag == QC_TAG_A)
		a->in_link++;
	a->top = index;
	return true;
}

static void
analysis_close(void *state, xmlNode *node)
{
	Analysis   *a = state;
	Info	   *info = node->_private;

	if (info->tag == QC_TAG_ARTICLE || info->tag == QC_TAG_MAIN)
		a->in_article--;
	if (qc_heading_level(info->tag) > 0)
		a->in_heading--;
	if (info->tag == QC_TAG_A)
	{
		a->in_link--;
		/* an image link costs nothing: it goes with the link of its card */
		if (info->block >= 0 && info->text > 0)
			a->infos[info->block].own_links++;
	}
	info->end = a->ninfos;
	if (info->parent >= 0)
	{
		a->infos[info->parent].text += info->text;
		a->infos[info->parent].link += info->link;
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
	n = count_chars(text);
	a->text_so_far += n;
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
 * Scoring
 */

/*
 * Is the element a minor part of what surrounds it (the nearest ancestor
 * that holds more text than it): less than half of its content, or less
 * than a quarter of its text?
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
			return info->good < MINOR_SHARE * anc->good ||
				info->text < MINOR_SHARE / 2 * anc->text;
	}
	return false;
}

/* Weigh the blocks, decide what is boilerplate and score every element. */
static void
score_elements(Analysis *a)
{
	int			i;

	/* children come after their parent: going backwards visits them first */
	for (i = a->ninfos - 1; i >= 0; i--)
	{
		Info	   *info = &a->infos[i];

		if (info->is_block && info->own_text > 0)
		{
			double		w = (info->own_text - info->own_link) +
				LINK_TEXT_WEIGHT * info->own_link - LINK_COST * info->own_links;

			info->score = w;
			info->good += Max(w, 0);
		}
		if (info->parent >= 0)
			a->infos[info->parent].good += info->good;
	}

	for (i = a->ninfos - 1; i >= 0; i--)
	{
		Info	   *info = &a->infos[i];

		info->junk = info->control || (info->hint < 0 && is_minor(a, info));
		if (info->parent >= 0)
			a->infos[info->parent].score +=
				!info->junk ? info->score :
				info->invisible ? 0 : -info->text;
	}
}

/*
 * The main region: the element of highest score outside boilerplate (the
 * inner one of equals) or, when that is a lone block of text, the element
 * that holds it; NULL when none scores above zero.
 */
static Info *
choose_region(Analysis *a)
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
		if (info->tag != QC_TAG_HTML && info->tag != QC_TAG_HEAD && info->score > 0 &&
			(best == NULL || info->score >= best->score))
			best = info;
		i++;
	}
	/*
	 * A lone block of text is not a region, but the element that holds it
	 * is: an index page's one paragraph outscores the list of links that is
	 * its content, and the heading above it would be lost too.
	 */
	while (best != NULL && best->is_block && best->own_text == best->text &&
		   best->parent >= 0 && a->infos[best->parent].tag != QC_TAG_BODY)
		best = &a->infos[best->parent];
	return best;
}


/*
 * Pruning the region
 */

/* The text of a link or a block, to find the texts that repeat */
typedef struct RepeatText
{
	char	   *text;
	bool		is_link;
	int			index;
} RepeatText;

static int
repeat_text_cmp(const void *a, const void *b)
{
	const RepeatText *ra = a;
	const RepeatText *rb = b;

	if (ra->is_link != rb->is_link)
		return ra->is_link ? 1 : -1;
	return strcmp(ra->text, rb->text);
}

/*
 * Is the element one whose text means nothing where it repeats: a short
 * link ("Reply", "View details", "Read more": a control), or a block of a
 * sentence or more with no other block in it and mostly not linked (a
 * promotion printed on every card, a slide a carousel clones, the copy of
 * a block laid out for small screens, a quoted post)?  A table cell is
 * not: a column may hold the same value in many rows.
 */
static bool
repeat_candidate(const Info *info)
{
	if (info->tag == QC_TAG_A)
		return info->text > 0 && info->text <= CONTROL_LINK_CHARS;
	return info->is_block && info->own_text == info->text &&
		info->text >= REPEATED_BLOCK_CHARS &&
		2 * info->own_link <= info->own_text &&
		info->tag != QC_TAG_TD && info->tag != QC_TAG_TH;
}

/*
 * Mark the links and blocks inside the region whose text repeats and means
 * nothing there (see repeat_candidate): every copy of a control link that
 * repeats CONTROL_LINK_REPEATS times, and every copy of a block but the
 * first.
 */
static void
mark_repeats(Analysis *a, Info *region)
{
	int			first = region - a->infos;
	RepeatText *texts = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(RepeatText) * (region->end - first));
	int			n = 0;
	int			i;
	int			j;

	for (i = first; i < region->end; i++)
	{
		Info	   *info = &a->infos[i];
		char	   *text;

		if (!repeat_candidate(info))
			continue;
		text = qc_node_text(info->node);
		/* a link with digits is a price or a date */
		if (info->tag == QC_TAG_A && strpbrk(text, "0123456789") != NULL)
		{
			pfree(text);
			continue;
		}
		texts[n].text = text;
		texts[n].is_link = info->tag == QC_TAG_A;
		texts[n].index = i;
		n++;
	}
	qsort(texts, n, sizeof(RepeatText), repeat_text_cmp);
	for (i = 0; i < n; i = j)
	{
		int			first_copy = texts[i].index;
		int			k;

		for (j = i + 1; j < n && repeat_text_cmp(&texts[i], &texts[j]) == 0; j++)
			first_copy = Min(first_copy, texts[j].index);
		if (j - i < (texts[i].is_link ? CONTROL_LINK_REPEATS : 2))
			continue;
		for (k = i; k < j; k++)
			if (texts[k].is_link || texts[k].index != first_copy)
				a->infos[texts[k].index].repeated = true;
	}
	for (i = 0; i < n; i++)
		pfree(texts[i].text);
	pfree(texts);
}

/*
 * Is the element a teaser card: a short block that opens with a link to
 * another page and says a sentence about it (a related post, another
 * service, an author's bio with "more articles")?
 */
static bool
is_teaser_card(Analysis *a, Info *card)
{
	int			i;

	if (card->text > TEASER_CARD_CHARS ||
		card->text - card->link < TEASER_DESCRIPTION_CHARS)
		return false;
	for (i = card - a->infos + 1; i < card->end; i++)
	{
		if (a->infos[i].tag == QC_TAG_A && a->infos[i].text > 0)
			return a->infos[i].text_before == card->text_before;
	}
	return false;
}

/*
 * Is the element a run of teasers for other pages below the content: three
 * or more like teaser cards and nothing else, in the second half of the
 * region, holding a minor share of it?  On a listing the cards are most of
 * the region, and on a forum the posts are comments: both stay.
 */
static bool
is_teaser_run(Analysis *a, Info *info, Info *region)
{
	Info	   *first_card = NULL;
	int			cards = 0;
	int			i;

	if (info->comments || info->text >= TEASER_SHARE * region->text ||
		info->text_before - region->text_before < region->text / 2)
		return false;
	for (i = info - a->infos + 1; i < info->end; i = a->infos[i].end)
	{
		Info	   *child = &a->infos[i];

		if (child->text == 0)
			continue;
		if (child->comments || !is_teaser_card(a, child) ||
			(first_card != NULL && !alike(first_card->node, child->node)))
			return false;
		if (first_card == NULL)
			first_card = child;
		cards++;
	}
	return cards >= 3;
}

/*
 * Drop the boilerplate inside the region (for the writers, which skip what
 * qc_dropped() says).  Comment sections go too, unless they are most of
 * it: on a forum or a discussion page, the comments are the content.
 * Author cards go unless they are most of it (a profile page), and so do
 * runs of teasers for other pages below the content.
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
	drop_comments = comment_good < COMMENTS_SHARE * region->good;
	mark_repeats(a, region);

	for (i = first + 1; i < region->end;)
	{
		Info	   *info = &a->infos[i];

		if (info->junk || info->repeated ||
			(drop_comments && info->comments) ||
			(info->author_card && info->text < MINOR_SHARE * region->text) ||
			is_teaser_run(a, info, region))
		{
			info->node->_private = &qc_dropped_mark;
			i = info->end;
		}
		else
			i++;
	}
}

/*
 * The region as a list of elements: the chosen one, and the siblings of
 * the wrapper it sits in that score well too (the description above a
 * listing and the listing, when what separates them is boilerplate).
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
		   a->infos[top->parent].tag != QC_TAG_BODY)
		top = &a->infos[top->parent];
	if (top->parent < 0)
		return list_make1(best->node);
	parent = &a->infos[top->parent];
	for (i = top->parent + 1; i < parent->end; i = a->infos[i].end)
	{
		Info	   *sib = &a->infos[i];

		if (sib == top)
			roots = lappend(roots, best->node);
		else if (!sib->junk && sib->score >= SIBLING_SHARE * best->score)
		{
			prune(a, sib);
			roots = lappend(roots, sib->node);
		}
	}
	return roots;
}

/* The number of elements in the tree: enough Infos for the analysis */
static int
count_elements(xmlNode *root)
{
	xmlNode    *node;
	int			n = 0;

	for (node = root; node != NULL; node = qc_next_node(node, root, false))
	{
		if (node->type == XML_ELEMENT_NODE)
			n++;
	}
	return n;
}

List *
qc_article_select(xmlDoc *doc)
{
	static const QcWalker analysis = {analysis_open, analysis_close, analysis_text};
	xmlNode    *root = qc_root_element(doc);
	Analysis	a;
	Info	   *region;
	List	   *roots;

	if (root == NULL)
		return NIL;
	memset(&a, 0, sizeof(a));
	a.maxinfos = count_elements(root);
	/* as big as the page: libxml2's tree of it is bigger still */
	a.infos = MemoryContextAllocHuge(CurrentMemoryContext,
									 sizeof(Info) * Max(a.maxinfos, 1));
	a.top = -1;
	a.names_cache = palloc0(sizeof(NamesCacheEntry) * NAMES_CACHE_SIZE);
	qc_walk(root, true, &analysis, &a);
	if (a.ninfos == 0)
		return NIL;
	score_elements(&a);

	region = choose_region(&a);
	if (region != NULL)
	{
		prune(&a, region);
		roots = with_siblings(&a, region);
	}
	else
	{
		/* no clear main region: the whole body, less its boilerplate */
		xmlNode    *body = qc_find_body(doc);

		region = body->_private != NULL ? (Info *) body->_private : &a.infos[0];
		prune(&a, region);
		roots = list_make1(region->node);
	}
	pfree(a.infos);
	return roots;
}
