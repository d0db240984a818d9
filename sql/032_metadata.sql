--
-- Format 'metadata': what a page says about itself, as a JSON object with
-- every key present (null where the page says nothing).
--

-- plain <meta>, <link rel=canonical>, <html lang>, <title>: URLs resolved
-- against the page's URL
SELECT jsonb_pretty(queryclaw.html_to_text($$<html lang="en-GB"><head>
<title>Plain title | Site</title>
<meta name="description" content="  A   description,
  folded. ">
<meta name="author" content="Ann Author">
<link rel="canonical" href="/articles/42">
<meta name="date" content="2026-01-02">
</head><body><h1>Headline</h1></body></html>$$, 'metadata', 'https://example.com/a/b?c=d')::jsonb);

-- Open Graph and article: beat the plain ones; JSON-LD fills the rest
SELECT jsonb_pretty(queryclaw.html_to_text($$<html><head>
<title>Plain title | Site</title>
<meta property="og:title" content="OG title">
<meta property="og:description" content="OG description">
<meta property="og:site_name" content="Site">
<meta property="og:image" content="//cdn.example.com/i.jpg">
<meta property="og:locale" content="fr_FR">
<meta property="og:type" content="article">
<meta property="article:published_time" content="2026-03-04T05:06:07Z">
<meta property="article:author" content="https://example.com/people/ann">
<script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [
  {"@type": "WebSite", "name": "Site", "url": "https://example.com/"},
  {"@type": "NewsArticle", "headline": "LD headline", "dateModified": "2026-03-05",
   "author": [{"@type": "Person", "name": "Ann Author"}, {"@type": "Person", "name": "Bob Writer"}],
   "publisher": {"@type": "Organization", "name": "LD Publisher"}}]}
</script></head><body></body></html>$$, 'metadata', 'https://example.com/news/1')::jsonb);

-- microdata, and JSON-LD that is broken or not about the page is passed over
SELECT jsonb_pretty(queryclaw.html_to_text($$<body>
<script type="application/ld+json">{"@type": "NewsArticle", "headline": </script>
<script type="application/ld+json">[{"@type": "BreadcrumbList", "name": "Crumbs"}]</script>
<article itemscope itemtype="https://schema.org/BlogPosting">
<h1 itemprop="headline">Microdata headline</h1>
<span itemprop="author" itemscope itemtype="https://schema.org/Person"><span itemprop="name">Cat Coder</span></span>
<time itemprop="datePublished" datetime="2025-12-24">Christmas Eve</time>
</article></body>$$, 'metadata')::jsonb);

-- a page that says nothing: every value null; the first <h1> stands in
-- for a missing title
SELECT queryclaw.html_to_text('<p>nothing</p>', 'metadata')::jsonb;
SELECT queryclaw.html_to_text('<h1>First</h1><h1>Second</h1>', 'metadata')::jsonb ->> 'title' AS title;
SELECT queryclaw.html_to_text('', 'metadata')::jsonb ->> 'url' IS NULL AS no_url;

-- through web_fetch and web_fetch_many (url is the final URL), and in
-- api_call's result for HTML
SELECT qc_test.scrub(queryclaw.web_fetch(qc_test.url('/html'), 'metadata')::jsonb::text)::jsonb;
SELECT f.content::jsonb ->> 'title' AS title, f.content::jsonb ->> 'lang' AS lang
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/html'), qc_test.url('/latin1')], 'metadata') f
 ORDER BY f.ord;
SELECT qc_test.api(queryclaw.api_call(qc_test.url('/html'))) -> 'metadata' ->> 'title' AS title;
-- text that is not HTML has no metadata: every value null
SELECT queryclaw.web_fetch(qc_test.url('/hello'), 'metadata')::jsonb ->> 'title' IS NULL AS no_title;
SELECT queryclaw.api_call(qc_test.url('/hello')) ? 'metadata' AS has_metadata;

-- like 'json', metadata is never cut: longer than max_chars is an error
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/html'), 'metadata', 10)$$);
