--
-- What the examples of the README and docs/ should have done to the reader's tables
-- (setup.sql), checked once they have all run: one "ok - " or "not ok - "
-- line each.
--
-- the audit worker may still be writing (it connects to a new database
-- within 5 seconds): wait for it, at most 30 s
DO $$ BEGIN FOR i IN 1..1500 LOOP
    EXIT WHEN (SELECT queued + in_flight FROM queryclaw.audit_status()) = 0;
    PERFORM pg_sleep(0.02); END LOOP; END $$;

-- the queue's examples: wait (at most 30 s) until every request is final
DO $$ BEGIN FOR i IN 1..1500 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM queryclaw.requests WHERE state NOT IN ('done', 'failed', 'cancelled'));
    PERFORM pg_sleep(0.02); END LOOP; END $$;

SELECT CASE WHEN coalesce(good, false) THEN 'ok - ' ELSE 'not ok - ' END || 'README: ' || what
  FROM (VALUES
    ((SELECT bool_and(homepage LIKE '%' || name || '%') FROM companies),
     'every company''s home page was fetched'),
    ((SELECT string_agg(hq, ', ' ORDER BY id) = 'Lyon, Porto, Austin' FROM companies),
     'the model read where each company is'),
    ((SELECT body LIKE '%Example Domain%' FROM pages WHERE url = 'https://example.com/'),
     'web_fetch_many filled a page'),
    ((SELECT fetch_error LIKE 'HTTP status 404 %' AND body IS NULL FROM pages WHERE url = 'https://example.com/missing'),
     'web_fetch_many gave the missing page its error'),
    ((SELECT body_md LIKE '%[HTML](https://news.example.com/more)%' FROM pages
       WHERE url = 'https://news.example.com/2026/saved'),
     'html_to_text made stored HTML Markdown with absolute links'),
    ((SELECT summary IS NOT NULL FROM pages WHERE url = 'https://news.example.com/2026/another'),
     'the summarise trigger filled the new page''s summary'),
    ((SELECT count(*) = 3 FROM products WHERE (info->>'status')::int = 200),
     'api_call filled info, from the UPDATE and from the trigger'),
    ((SELECT count(*) = 2 FROM products WHERE page LIKE '%Price:%'),
     'enrich_batches fetched every product page there was'),
    ((SELECT fetch_error LIKE 'HTTP status 404 %' FROM products WHERE url LIKE '%/404'),
     'enrich_batches recorded the failed fetch and went on'),
    ((SELECT count(DISTINCT detail->>'llm_run') = 2 FROM queryclaw.audit_log
       WHERE func = 'llm' AND query LIKE 'CALL classify_batches%'),
     'classify_batches asked the model once about each lead with a url, and ended'),
    ((SELECT bool_and(title IS NOT NULL AND author IS NOT NULL AND published IS NOT NULL) FROM articles),
     'the metadata example filled every article'),
    ((SELECT bool_and(array_length(embedding, 1) > 0) FROM docs),
     'llm_embed gave every document its embedding'),
    ((SELECT count(*) > 0 FROM queryclaw.audit_log WHERE func = 'sql_query' AND outcome = 'ok'),
     'the agent read the table through sql_query'),
    ((SELECT string_agg(name, ', ' ORDER BY id) = 'Item 7, Item 8' AND bool_and(enrich_error IS NULL)
        FROM items),
     'the trigger''s callback enriched every new item'),
    ((SELECT count(*) = 2 FROM queryclaw.requests WHERE func = 'api_call_async' AND state = 'done'),
     'the trigger queued one request per item, each done'),
    ((SELECT body LIKE '%Example Domain%' AND fetch_error IS NULL FROM sources WHERE url = 'https://example.com/'),
     'fetch_sources stored the page it waited for'),
    ((SELECT fetch_error LIKE 'HTTP status 404 %' AND body IS NULL FROM sources
       WHERE url = 'https://example.com/missing'),
     'fetch_sources reported the missing page''s failure'),
    ((SELECT body IS NULL AND fetch_error IS NULL FROM sources WHERE url IS NULL),
     'fetch_sources left the source without a url alone'),
    ((SELECT durable FROM queryclaw.audit_status()),
     'the database the README''s postgresql.conf names has the durable audit')
  ) AS c(good, what);
