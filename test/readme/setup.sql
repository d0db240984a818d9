--
-- The reader's own tables and roles, which the README's examples name
-- (test/readme/run.sh runs this before them).  Their URLs are under
-- example.com, which the test's DNS fixture puts on 127.0.0.1, where
-- test/readme/site.py answers.  Some rows are there to go wrong: a NULL
-- URL, a page that is missing, a lead the model cannot classify.
--
CREATE TABLE companies (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text, url text, homepage text, hq text);
INSERT INTO companies (name, url) VALUES
    ('Acme Optics', 'https://acme.example.com/'),
    ('Globex Cork', 'https://globex.example.com/'),
    ('Initech', 'https://initech.example.com/');

CREATE TABLE pages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text, html text, body text, body_md text, fetch_error text, summary text);
INSERT INTO pages (url, html) VALUES
    ('https://example.com/', NULL),
    ('https://news.example.com/2026/story', NULL),
    ('https://example.com/missing', NULL),
    ('https://news.example.com/2026/saved',
     '<html><head><meta name="author" content="Ana Lima"><title>Saved</title></head>'
     '<body><article><h1>Saved</h1><p>A page kept with its <a href="/more">HTML</a>.</p></article></body></html>');

CREATE TABLE products (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text, api_url text, info jsonb, page text, fetch_error text);
INSERT INTO products (url, api_url) VALUES
    ('https://shop.example.com/products/1', 'https://api.example.com/v1/products/1'),
    (NULL, NULL),
    ('https://shop.example.com/products/404', 'https://api.example.com/v1/products/404'),
    ('https://shop.example.com/products/2', 'https://api.example.com/v1/products/2');

CREATE TABLE leads (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text, category text);
INSERT INTO leads (url) VALUES
    ('https://acme.example.com/'), (NULL), ('https://globex.example.com/');

CREATE TABLE shops (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text, url text);
INSERT INTO shops (name, url) VALUES ('The Corner Bakery', 'https://bakery.example.com/');

CREATE TABLE articles (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text, title text, author text, published timestamptz);
INSERT INTO articles (url) VALUES
    ('https://news.example.com/2026/story'), ('https://news.example.com/2026/another');

CREATE TABLE docs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body text);
INSERT INTO docs (body) VALUES
    ('We ship from our warehouse in Lyon.'), ('Returns are free for 30 days.'),
    ('Our support answers within a day.');

CREATE TABLE conversations (id integer PRIMARY KEY, previous jsonb);
INSERT INTO conversations VALUES (7, '{"answer": "One is dead.", "messages": [
    {"role": "user", "content": "Which of these links are dead? https://example.com/ https://example.com/missing"},
    {"role": "assistant", "content": "One is dead: https://example.com/missing answers 404."}]}');

CREATE ROLE agent_7 LOGIN;

-- the asynchronous patterns: items enriched through a callback, sources
-- fetched by a procedure that waits (one of them missing)
CREATE TABLE items (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    api_url text, name text, enrich_error text);
CREATE TABLE sources (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text, body text, fetch_error text);
INSERT INTO sources (url) VALUES
    ('https://example.com/'), ('https://example.com/missing'), (NULL);
