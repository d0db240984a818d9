--
-- HTML to text, article and Markdown: html_to_text() on small hand-written
-- pages (the same conversion web_fetch uses; no request is made).
--

--
-- format 'text': everything readable
--

-- dropped: script, style, noscript, template, svg, iframe, object, canvas,
-- and of the head everything but the title; comments; form control text
-- stays (it is on the screen)
SELECT queryclaw.html_to_text($$<html><head><title>The title</title>
<meta name="description" content="DESCRIPTION-NOT-TEXT"><style>p{}</style>
<script>var a = "<p>SCRIPT</p>";</script></head><body>
<noscript>NOSCRIPT</noscript><template><p>TEMPLATE</p></template>
<svg><text>SVG</text></svg><iframe src="x">IFRAME</iframe>
<object>OBJECT</object><canvas>CANVAS</canvas><!-- COMMENT -->
<p>Visible <b>text</b>.</p></body></html>$$);

-- the title comes first, on its own, unless the text begins with it anyway
SELECT queryclaw.html_to_text('<title>Same</title><h1>Same</h1><p>Body</p>');
SELECT queryclaw.html_to_text('<title>  Spaced
   title </title><p>Body</p>');

-- hidden: the hidden attribute and inline display:none / visibility:hidden
-- are dropped; aria-hidden="true" is kept (it hides from screen readers,
-- not from the screen); tab panels and React's streamed <div hidden
-- id="S:0"> are content
SELECT queryclaw.html_to_text($$<p>shown</p><p hidden>HIDDEN-ATTR</p>
<div style="color: red; display : none">DISPLAY-NONE</div>
<div style="visibility:hidden">VISIBILITY-HIDDEN</div>
<div style="display:none-ish">not a display value: shown</div>
<p aria-hidden="true">aria-hidden is shown</p>
<div class="tab-pane" style="display:none">a closed tab</div>
<div role="tabpanel" hidden>another closed tab</div>
<div hidden id="S:0">streamed content</div>
<p hidden="until-found">found by search</p>$$);

-- blocks on lines of their own, paragraphs and headings set off by blank
-- lines, <br> honoured, entities decoded, whitespace (and NBSP) folded
SELECT queryclaw.html_to_text($$<h1>Heading</h1><div>one</div><div>two</div>
<p>A   paragraph
   over lines, with&nbsp;&nbsp;NBSP &amp; entities &lt;tag&gt; &#8364; &eacute;.</p>
<p>line one<br>line two<br><br>after a blank line</p><span>inline</span> <em>flow</em>on.$$);

-- <pre> verbatim (but no trailing blanks, nor the newline right after <pre>)
SELECT queryclaw.html_to_text(E'<p>before</p><pre>\n  indented\n\tTAB   three  spaces   \n\n  last</pre><p>after</p>');

-- lists: "- " items, "1. " in ordered lists (from start=), nested ones
-- indented two spaces a level; a paragraph in an item stays in the item
SELECT queryclaw.html_to_text($$<ul><li>one</li><li>two<ul><li>two a</li>
<li>two b<ol start="3"><li>deep</li><li>deeper</li></ol></li></ul></li>
<li><p>three</p><p>three, second paragraph</p></li></ul>
<ol><li>first</li><li>second</li></ol>$$);

-- tables: a row per line, cells joined by " | ", empty cells left out,
-- blocks inside a cell stay on the row's line
SELECT queryclaw.html_to_text($$<table><caption>Prices</caption>
<tr><th>Item</th><th>Price</th></tr>
<tr><td>Tea</td><td>2 &euro;</td></tr>
<tr><td><p>Coffee</p></td><td></td><td><div>3 &euro;</div></td></tr></table>
<p>after the table</p>$$);

-- malformed HTML is read the way libxml2 recovers it
SELECT queryclaw.html_to_text('<p>unclosed <b>bold <i>both</p><p>next</div></span>para');
-- (libxml2 2.14 and newer read stray brackets and bad references as browsers
-- do: "<<<" stays, &#0; and &#xD800; become U+FFFD; older ones drop them)
SELECT replace(regexp_replace(queryclaw.html_to_text('<<<>>> & < > &bogus; &#0; &#xD800; text'),
                              '^<<<', ''), chr(65533) || ' ', '') AS html_to_text;

-- deep nesting needs no stack: 2,000 nested <div>s, or <span>s in a link
SELECT f, queryclaw.html_to_text(repeat('<div>', 2000) || 'deep' || repeat('</div>', 2000), f) AS deep_divs,
       queryclaw.html_to_text('<p><a href="/x">' || repeat('<span>', 2000) || 'deep' || repeat('</span>', 2000) || '</a></p>', f) AS deep_spans
  FROM unnest(ARRAY['text', 'article', 'markdown']) AS f;
-- 100,000 levels: libxml2 2.14 and newer stop reading past 2,048 (the text
-- inside is lost), older ones read it all; either way nothing breaks
SELECT f, queryclaw.html_to_text(repeat('<div>', 100000) || 'deep' || repeat('</div>', 100000), f) IN ('deep', '') AS deeper_divs,
       queryclaw.html_to_text('<p><a href="/x">' || repeat('<span>', 100000) || 'deep' || repeat('</span>', 100000) || '</a></p>', f) IN ('deep', '') AS deeper_spans
  FROM unnest(ARRAY['text', 'article', 'markdown']) AS f;

-- NUL-free, valid text whatever the input: the database never sees U+0000
SELECT queryclaw.html_to_text(E'<p>a\u00e9\u20ac\U0001F600b</p>');

--
-- format 'article': the main content only
--

-- the page's own landmarks: navigation, header, footer, sidebar and
-- cookie banner dropped, the article kept
SELECT queryclaw.html_to_text($$<html><head><title>Site | Story</title></head><body>
<header><a href="/">Site</a> <a href="/news">News</a> <a href="/sport">Sport</a></header>
<nav><ul><li><a href="/a">Politics</a></li><li><a href="/b">Business</a></li>
<li><a href="/c">Science</a></li></ul></nav>
<div class="cookie-banner">We use cookies to improve your experience. Accept all cookies?</div>
<main><article><h1>The story</h1>
<p>The first paragraph of the story tells what happened, where it happened and to whom, in
enough words to be a real paragraph of prose.</p>
<p>A second paragraph adds detail, quotes a witness and links to <a href="/source">the source</a>
of the figures, as stories do.</p>
<div class="share-bar"><a href="/s/f">Facebook</a> <a href="/s/t">Twitter</a> <a href="/s/m">Email</a></div>
</article>
<aside><h2>Related</h2><ul><li><a href="/r1">Another story</a></li><li><a href="/r2">And another</a></li></ul></aside>
</main>
<footer><p>&copy; 2026 Site. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
</body></html>$$, 'article');

-- without landmarks: the block of prose wins over menus of short links
SELECT queryclaw.html_to_text($$<body><div id="top"><a href="/">Home</a> | <a href="/about">About</a> |
<a href="/blog">Blog</a> | <a href="/contact">Contact</a></div>
<div id="menu"><div><a href="/1">One</a></div><div><a href="/2">Two</a></div><div><a href="/3">Three</a></div></div>
<div id="x"><div><p>Paragraph one has a good deal of plain text in it, the way articles do, and
no links at all, so it weighs what it says.</p><p>Paragraph two goes on in the same way,
with plain sentences that a reader came to read.</p></div></div>
<div id="bottom"><a href="/terms">Terms</a> <a href="/privacy">Privacy</a></div></body>$$, 'article');

-- comments after an article are dropped; a page that is mostly comments
-- (a forum thread) keeps them
SELECT queryclaw.html_to_text($$<body><article><div class="entry-content">
<p>The post itself is long enough to be the content of this page: several sentences of prose,
written by the author, about the subject of the page, with nothing else in them.</p>
<p>Another paragraph of the post, again long enough to count for something in the score.</p></div>
<div id="comments"><h3>2 comments</h3><div class="comment"><p>Nice post!</p></div>
<div class="comment"><p>I disagree with the second paragraph.</p></div></div></article></body>$$, 'article');
SELECT queryclaw.html_to_text($$<body><div class="thread"><h1>Which kettle?</h1>
<div class="comment"><p>alice: My kettle broke. Which one should I buy to replace it, something quiet?</p></div>
<div class="comment"><p>bob: The quiet ones are expensive, but the one I have has lasted ten years now.</p></div>
<div class="comment"><p>carol: Mine is loud, but it boils water in a minute and a half, which I like.</p></div>
</div></body>$$, 'article');

-- tab labels (role=tablist) and loading placeholders are controls, not the
-- product's description
SELECT queryclaw.html_to_text($$<body><main>
<div role="tablist"><span role="tab">Overview</span><span role="tab">Specs</span><span role="tab">Reviews</span></div>
<div role="tabpanel"><h2>Quiet kettle</h2><div class="loader">Loading...</div>
<p>A kettle that boils 1.7 litres in four minutes without a sound, in brushed steel.</p></div>
</main></body>$$, 'article');

-- in a thread, each post's author card (rank, join date, post count) is
-- chrome; the posts are the content
SELECT queryclaw.html_to_text($$<body><div class="thread">
<div class="post"><div class="postprofile"><b>alice</b><dl><dt>Rank</dt><dd>Senior member</dd><dt>Joined</dt><dd>May 2019</dd><dt>Posts</dt><dd>4,032</dd></dl></div>
<div class="content"><p>My kettle broke last week. Which one should I buy to replace it, something quiet?</p></div></div>
<div class="post"><div class="user-details"><b>bob</b> <span>Member</span> <span>Joined: Oct 2011</span></div>
<div class="content"><p>The quiet ones are expensive, but the one I have has lasted ten years now.</p></div></div>
</div></body>$$, 'article');

-- a listing: the description and the cards are content (a linked headline
-- counts as text), the pagination and the "Read more" links are controls
SELECT queryclaw.html_to_text($$<body><nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<div class="intro"><h1>Kettles</h1><p>Every kettle we sell, from the quietest to the fastest.</p></div>
<div class="grid">
<div class="card"><h2><a href="/k/1">Quiet kettle, 1.7 litres, brushed steel</a></h2><p>$49</p><a href="/k/1">Read more</a></div>
<div class="card"><h2><a href="/k/2">Fast kettle, 1.5 litres, white plastic</a></h2><p>$29</p><a href="/k/2">Read more</a></div>
<div class="card"><h2><a href="/k/3">Travel kettle, 0.5 litres, folding</a></h2><p>$19</p><a href="/k/3">Read more</a></div>
</div><div class="pagination"><a href="?p=2">2</a> <a href="?p=3">3</a> <a href="?p=2">Next</a></div>
<footer><a href="/about">About us</a></footer></body>$$, 'article');

-- an index page: its one paragraph outscores the list of links below it,
-- but the region is the element that holds them both, with its heading
SELECT queryclaw.html_to_text($$<body><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<main><h1>Reference</h1><p>The reference covers the details of every setting and of the files the tool reads and writes.</p>
<ul><li><a href="/manifest">The manifest format</a></li><li><a href="/profiles">Profiles</a></li>
<li><a href="/config">Configuration</a></li><li><a href="/env">Environment variables</a></li></ul></main>
<footer><a href="/about">About</a></footer></body>$$, 'article');

-- teaser cards for other pages below an article (related posts, an
-- author's bio) are dropped; the same cards as most of a page (a blog's
-- index) are its content, and so are a thread's short replies that open
-- with the poster's name
SELECT queryclaw.html_to_text($$<body><article><h1>Descaling a kettle</h1>
<p>Limescale builds up fastest where the water is hard. A kettle that is descaled every month boils faster and lasts years longer than one that never is.</p>
<p>Fill it halfway with equal parts of water and white vinegar, bring it to the boil, and leave it to stand for an hour. Then rinse it twice with clean water.</p>
<p>Citric acid works as well and leaves no smell: two spoonfuls in a full kettle of water, boiled once and left for twenty minutes.</p>
<p>Do not use a scourer on the element or the inside of a stainless steel kettle: the scratches give new scale a place to start, and it comes back faster than before.</p>
<p>If your water is very hard, a jug filter for the water you boil cuts the scale down a lot, and the kettle needs descaling only every few months. Change the cartridge when the jug tells you to, or the filter stops doing anything.</p>
<div class="more">
<div class="tile"><a href="/quiet">The quietest kettles we tested</a><p>Six kettles measured with a sound meter at full boil.</p></div>
<div class="tile"><a href="/filters">Do water filters help?</a><p>What a jug filter does and does not take out of hard water.</p></div>
<div class="tile"><a href="/toasters">Toasters that toast evenly</a><p>Our yearly test of twelve toasters, from cheap to dear.</p></div>
</div></article></body>$$, 'article');
SELECT queryclaw.html_to_text($$<body><main><h1>The kettle blog</h1><p>New posts every week.</p>
<div class="tile"><a href="/quiet">The quietest kettles we tested</a><p>Six kettles measured with a sound meter at full boil.</p></div>
<div class="tile"><a href="/filters">Do water filters help?</a><p>What a jug filter does and does not take out of hard water.</p></div>
<div class="tile"><a href="/toasters">Toasters that toast evenly</a><p>Our yearly test of twelve toasters, from cheap to dear.</p></div>
</main></body>$$, 'article');
SELECT queryclaw.html_to_text($$<body><main><h1>Which kettle is quietest?</h1><p>I work nights.</p>
<div class="comments">
<div class="comment"><a href="/u/dan">dan</a><p>I measured four kettles with a phone app last winter. The glass ones were the loudest by far, and the double-walled steel one was the quietest, but it also took the longest to boil. The plastic one with a concealed element was in between, and it was the only one that did not rumble when it was nearly empty.</p></div>
<div class="comment"><a href="/u/eve">eve</a><p>Most of the noise comes from bubbles collapsing on the hot element before the water boils. Anything that spreads the heat over a wider base helps, which is why flat-bottomed kettles are quieter. Scale on the element makes it worse, so descaling a noisy kettle is the first thing to try before buying a new one.</p>
<div class="children">
<div class="comment"><a href="/u/ann">ann</a><p>So the rapid boil setting makes it louder, then? Mine has one.</p></div>
<div class="comment"><a href="/u/eve">eve</a><p>Yes, it does: turn it off at night and it is much quieter.</p></div>
<div class="comment"><a href="/u/ben">ben</a><p>Less water in it helps too, and it boils sooner as well.</p></div>
</div></div></div></main></body>$$, 'article');

-- a sentence printed twice (a carousel's cloned slide, a block laid out
-- again for small screens) is written once; a table column that repeats a
-- value, a heading that a table of contents links to, and a short line
-- are kept
SELECT queryclaw.html_to_text($$<body><article><h1>Our service</h1>
<ul class="toc"><li><a href="#plans">Plans and prices for every team</a></li></ul>
<div class="slides"><div class="slide"><p>Trusted by four hundred teams around the world.</p></div>
<div class="slide"><p>Set up in minutes, with nothing to install.</p></div>
<div class="slide clone"><p>Trusted by four hundred teams around the world.</p></div></div>
<h2 id="plans">Plans and prices for every team</h2>
<table><tr><th>Plan</th><th>Support</th></tr>
<tr><td>Basic</td><td>Email support within one working day</td></tr>
<tr><td>Team</td><td>Email support within one working day</td></tr></table>
<p>Yes.</p><p>Yes.</p>
<div class="desktop"><p>Call us on weekdays between nine and five.</p></div>
<div class="mobile"><p>Call us on weekdays between nine and five.</p></div>
</article></body>$$, 'article');

-- hidden elements are not content either
SELECT queryclaw.html_to_text($$<main><p>Visible paragraph with enough words in it to be the main content here.</p>
<div class="modal"><p>Sign up for our newsletter to get the latest news in your inbox every week.</p></div>
<p class="sr-only">Screen reader text</p><p hidden>hidden attribute</p>
<p class="hide">Shown by a script</p><div class="w-form-done">Thank you! Your submission has been received!</div></main>$$, 'article');

-- no clear main region (a page of nothing but links): the whole body, less
-- its boilerplate
SELECT queryclaw.html_to_text($$<body><nav><a href="/">Home</a> <a href="/a">About</a>
<a href="/b">Blog</a> <a href="/c">Contact</a> <a href="/d">Shop</a></nav>
<div class="directory"><a href="/x/1">Alpha</a> <a href="/x/2">Beta</a> <a href="/x/3">Gamma</a>
<a href="/x/4">Delta</a> <a href="/x/5">Epsilon</a> <a href="/x/6">Zeta</a></div>
<footer>&copy; 2026 Example</footer></body>$$, 'article');

-- when nothing would be left of the page (nothing but the same link), the
-- whole page is written
SELECT queryclaw.html_to_text(repeat('<a href="/x">Same link</a> ', 5), 'article');

-- empty and degenerate input
SELECT queryclaw.html_to_text('', 'article') = '' AS empty;
SELECT queryclaw.html_to_text('just words', 'article');
SELECT queryclaw.html_to_text('<html><body></body></html>', 'markdown') = '' AS empty;

--
-- format 'markdown': the article as Markdown
--

-- headings, paragraphs, emphasis, inline code, links and images resolved
-- against base_url (images only with alt text), line breaks
SELECT queryclaw.html_to_text($$<article><h1>Title  <em>here</em></h1><h3>Sub</h3>
<p>Some <strong>bold</strong>, <i>italic</i>, <code>x &lt; y</code>, a <a href="../other?a=1&amp;b=2">relative link</a>,
an <a href="https://example.org/abs">absolute one</a>, a <a href="#top">fragment</a>, a
<a href="javascript:void(0)">script link</a> and <a href="/x"></a>an empty link.</p>
<p><img src="/img/cat.png" alt="A cat"> <img src="/img/spacer.gif"> <img src="data:image/png;base64,AA" alt="inline">
<img src="data:," data-src="/img/lazy.png" alt="Lazy"></p>
<p>line<br>break</p><hr><p>after the rule</p></article>$$, 'markdown', 'https://example.com/blog/post.html');

-- without base_url, links stay as written
SELECT queryclaw.html_to_text('<p>See <a href="/x">x</a>.</p>', 'markdown');

-- nested lists (ordered ones numbered from start=), a paragraph inside an
-- item, block quotes (also inside lists)
SELECT queryclaw.html_to_text($$<ul><li>one</li><li>two<ul><li>two a</li><li>two b</li></ul></li>
<li><p>three</p><p>three, again</p></li></ul>
<ol start="7"><li>seven</li><li><ul><li>eight, nested</li></ul></li></ol>
<blockquote><p>Quoted.</p><p>Quoted again.</p><ul><li>in the quote</li></ul></blockquote>$$, 'markdown');

-- code blocks: fenced, with the language of a language-x class, and a
-- longer fence when the code holds backticks
SELECT queryclaw.html_to_text(E'<pre><code class="language-sql">SELECT *\n  FROM t;\n</code></pre><pre>plain ``` block</pre>', 'markdown');

-- tables: a data table becomes a pipe table (short rows padded, | escaped);
-- a layout table, whose cells hold blocks, is written as its blocks
SELECT queryclaw.html_to_text($$<table><thead><tr><th>Name</th><th>Value</th></tr></thead>
<tbody><tr><td>a|b</td><td><a href="https://example.org/">link</a></td></tr><tr><td>only one</td></tr></tbody></table>
<table><tr><td><p>Left column paragraph.</p></td><td><ul><li>right list</li></ul></td></tr></table>$$, 'markdown');

-- inline code holding a backtick gets a double fence; quotes at the end
-- leave no empty "> " lines behind
SELECT queryclaw.html_to_text('<p>Run <code>echo `date`</code> now; <kbd></kbd>x &gt; y&gt;</p><blockquote><p>q</p><p> </p></blockquote>', 'markdown');

-- what would read as Markdown in the text is escaped
SELECT queryclaw.html_to_text('<p># not a heading</p><p>1. not a list</p><p>a *b* _c_ [d]</p><p>-</p>', 'markdown');

-- the formats html_to_text takes
SELECT queryclaw.html_to_text('<p>x</p>', 'raw');
SELECT queryclaw.html_to_text('<p>x</p>', NULL);
