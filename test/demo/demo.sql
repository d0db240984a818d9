-- queryclaw_ext demo: enrich a table of companies from a (locally served) web site.
--
-- Run by `make demo`, or by hand:
--     python3 test/demo/site.py --port-file /tmp/site.port &
--     psql -v base=http://127.0.0.1:$(cat /tmp/site.port) -f test/demo/demo.sql
-- against a database where `CREATE EXTENSION queryclaw_ext` has been run and
-- the queryclaw policy settings allow that address.  Steps 6 and 7 need
-- the library preloaded and queryclaw.database naming this database (the
-- queue), step 8 queryclaw.llm_url and queryclaw.llm_model (docs/llm.md);
-- pass -v llm_which='...' to say which model it is.
--
-- Each statement is printed before its result (ECHO queries); the
-- book-keeping between them is not.
--
-- The site (test/demo/site.py) has 24 fictional companies, each with an HTML
-- homepage at /companies/<slug> and a JSON record at /api/companies/<slug>.
-- Its slug list also names "ghost-systems", which does not exist (404), to
-- show how a failed row is handled.

\set ON_ERROR_STOP on
\set QUIET on
\pset null '(null)'
\pset footer off
SET client_min_messages = warning;

\if :{?base}
\else
  \echo 'usage: psql -v base=http://127.0.0.1:PORT -f test/demo/demo.sql'
  \quit
\endif

-- Remember where the audit log stands, so the summary covers only this run.
SELECT coalesce(max(id), 0) AS audit_mark FROM queryclaw.audit_log \gset

DROP TABLE IF EXISTS demo_companies, demo_leads, demo_checks, demo_profiles CASCADE;

-- An enrichment works in the background: a step that shows its rows
-- first waits until it has nothing stale or running.
CREATE FUNCTION pg_temp.enrichment_settled(e text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WHILE (SELECT stale + running FROM queryclaw.enrichments WHERE name = e) > 0 LOOP
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;

-- The audit worker commits rows within milliseconds of each call: a step
-- that shows the audit log first waits until it has written them all.
CREATE FUNCTION pg_temp.audit_settled() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..500 LOOP
        EXIT WHEN (SELECT queued + in_flight FROM queryclaw.audit_status()) = 0;
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;

\echo
\echo '== 1. Load the company list from the site (GET /api/companies)'
\set ECHO queries

CREATE TABLE demo_companies (
    id               serial PRIMARY KEY,
    slug             text,
    url              text,         -- HTML homepage
    api_url          text,         -- JSON record
    homepage_excerpt text,
    city             text,
    employees        int,
    products         jsonb,
    fetched_at       timestamptz
);

-- api_call() returns jsonb; for a JSON response, 'body' is already jsonb.
INSERT INTO demo_companies (slug, url, api_url)
SELECT slug,
       :'base' || '/companies/' || slug,
       :'base' || '/api/companies/' || slug
FROM jsonb_array_elements_text(
         queryclaw.api_call(:'base' || '/api/companies') -> 'body'
     ) WITH ORDINALITY AS list(slug, n)
ORDER BY n;

SELECT count(*) AS companies FROM demo_companies;

\echo
\echo '== 2. Enrich every row with one UPDATE'

-- One api_call() per row, computed once in the MATERIALIZED CTE and then
-- read as often as needed.  api_call() never raises on an HTTP error: for
-- ghost-systems it returns {"ok": false, "status": 404, ...}, and its body
-- is a plain string, so the ->> lookups below simply yield NULL.
-- web_fetch() does raise on a 404, so the CASE only calls it for rows whose
-- API call succeeded.
WITH api AS MATERIALIZED (
    SELECT id, queryclaw.api_call(api_url) AS resp
    FROM demo_companies
)
UPDATE demo_companies AS c
SET    homepage_excerpt = CASE WHEN (api.resp ->> 'ok')::boolean
                               THEN left(regexp_replace(queryclaw.web_fetch(c.url, 'text', 400), '\s+', ' ', 'g'), 160)
                          END,
       city       = api.resp -> 'body' ->> 'city',
       employees  = (api.resp -> 'body' ->> 'employees')::int,
       products   = api.resp -> 'body' -> 'products',
       fetched_at = now()
FROM   api
WHERE  api.id = c.id;

SELECT count(*) FILTER (WHERE city IS NOT NULL) AS enriched,
       count(*) FILTER (WHERE city IS NULL)     AS failed
FROM   demo_companies;

\echo
\echo '== 3. The enriched table'

SELECT slug,
       city,
       employees,
       jsonb_array_length(products) AS products,
       left(homepage_excerpt, 60)   AS homepage_excerpt
FROM   demo_companies
ORDER  BY id;

\set ECHO none
SELECT pg_temp.audit_settled() AS settled \gset
\set ECHO queries
\echo
\echo '== 4. What the audit log recorded for this run'

SELECT coalesce(func, 'total')       AS func,
       coalesce(outcome, '')         AS outcome,
       count(*)                      AS calls,
       coalesce(sum(bytes), 0)       AS bytes
FROM   queryclaw.audit_log
WHERE  id > :audit_mark
  AND  starts_with(url, :'base')
GROUP  BY GROUPING SETS ((func, outcome), ())
ORDER  BY GROUPING(func), 1, 2;

\echo
\echo '== 5. Calls that did not succeed'

SELECT func, url, status, outcome, reason
FROM   queryclaw.audit_log
WHERE  id > :audit_mark
  AND  starts_with(url, :'base')
  AND  outcome <> 'ok'
ORDER  BY id;

\echo
\echo '== 6. Enrich rows as they are inserted, through the queue'
\echo '-- an AFTER INSERT trigger queues one api_call_async per row and returns at once;'
\echo '-- the workers send the requests after the COMMIT and a callback stores each result'

CREATE TABLE demo_leads (
    id        serial PRIMARY KEY,
    slug      text,
    city      text,
    employees int,
    enrich_error text
);

CREATE PROCEDURE demo_save_lead(request_id bigint, result jsonb, error text, context jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE demo_leads
       SET city      = result -> 'body' ->> 'city',
           employees = (result -> 'body' ->> 'employees')::int,
           enrich_error = coalesce(error, CASE WHEN NOT (result ->> 'ok')::boolean
                                            THEN 'HTTP status ' || (result ->> 'status') END)
     WHERE id = (context ->> 'lead')::int;
END $$;

CREATE FUNCTION demo_enrich_lead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queryclaw.api_call_async(current_setting('demo.base') || '/api/companies/' || NEW.slug,
                callback => 'demo_save_lead(bigint, jsonb, text, jsonb)',
                context => jsonb_build_object('lead', NEW.id));
    RETURN NULL;
END $$;

CREATE TRIGGER demo_enrich_lead AFTER INSERT ON demo_leads
    FOR EACH ROW EXECUTE FUNCTION demo_enrich_lead();

\set ECHO none
SELECT set_config('demo.base', :'base', false) \gset
\set ECHO queries
INSERT INTO demo_leads (slug) SELECT slug FROM demo_companies ORDER BY id;

\echo
\echo '== 6a. The queue while it drains (queryclaw.host_rate_limit lets 10 requests a second go)'
SELECT role, state, requests, oldest_waiting FROM queryclaw.queue_status ORDER BY state;
\set ECHO none
SELECT pg_sleep(1) AS slept \gset
\set ECHO queries
SELECT role, state, requests, oldest_waiting FROM queryclaw.queue_status ORDER BY state;

\echo
\echo '== 6b. Wait until every request is final, then read the table the callbacks filled'
SELECT state, count(*) AS requests
  FROM queryclaw.wait(ARRAY(SELECT id FROM queryclaw.requests WHERE func = 'api_call_async'), '60 s')
 GROUP BY state;
SELECT slug, city, employees, enrich_error FROM demo_leads ORDER BY id LIMIT 5;
SELECT count(*) FILTER (WHERE city IS NOT NULL) AS enriched,
       count(*) FILTER (WHERE enrich_error IS NOT NULL) AS failed
  FROM demo_leads;
SELECT slug, enrich_error FROM demo_leads WHERE enrich_error IS NOT NULL;

\echo
\echo '== 6c. The same, declared once: an enrichment keeps city and employees filled'
\echo '-- the rows already there are asked (the backfill), then every row inserted, and'
\echo '-- again every row whose slug changes; the same retries, limits and audit'
CREATE TABLE demo_profiles (slug text PRIMARY KEY, city text, employees int);
INSERT INTO demo_profiles (slug)
    SELECT slug FROM demo_companies WHERE slug <> 'ghost-systems' ORDER BY id LIMIT 8;
SELECT queryclaw.create_enrichment('demo_profiles', source => 'demo_profiles',
    request => format($$queryclaw.api_call_request(%L || '/api/companies/' || slug)$$, :'base'),
    apply   => $$city = result #>> '{body,city}', employees = (result #>> '{body,employees}')::int$$) \gset
-- the backfill is under way: the rows not asked yet are stale
SELECT name, mode, rows, stale FROM queryclaw.enrichments;
\set ECHO none
SELECT pg_temp.enrichment_settled('demo_profiles') AS settled \gset
\set ECHO queries
SELECT slug, city, employees FROM demo_profiles ORDER BY slug LIMIT 5;
INSERT INTO demo_profiles (slug) VALUES ('ghost-systems'),
    ((SELECT slug FROM demo_companies WHERE slug <> 'ghost-systems' ORDER BY id DESC LIMIT 1));
\set ECHO none
SELECT pg_temp.enrichment_settled('demo_profiles') AS settled \gset
\set ECHO queries
SELECT name, rows, done, failed, stale, calls, last_error FROM queryclaw.enrichments;
SELECT e.key ->> 'slug' AS slug, e.state, e.error
  FROM queryclaw.enrichment_rows e WHERE e.state <> 'done';

\echo
\echo '== 7. Retries: one API answers 503 once, another is down (queryclaw.retry_max = 2)'
CREATE TABLE demo_checks (name text, request_id bigint);
INSERT INTO demo_checks
VALUES ('flaky', queryclaw.api_call_async(:'base' || '/api/flaky/demo')),
       ('down',  queryclaw.api_call_async(:'base' || '/api/down'));

SELECT c.name, r.state, r.attempts, r.result -> 'status' AS status, r.error
  FROM demo_checks c,
       queryclaw.wait(ARRAY(SELECT request_id FROM demo_checks), '60 s') r
 WHERE r.id = c.request_id
 ORDER BY c.name DESC;

\set ECHO none
SELECT pg_temp.audit_settled() AS settled \gset
\set ECHO queries
\echo
\echo '== 7a. The audit rows of both: one per attempt'
SELECT c.name, (a.detail -> 'request' ->> 'attempt')::int AS attempt, a.status, a.outcome, a.reason
  FROM queryclaw.audit_log a
  JOIN demo_checks c ON (a.detail -> 'request' ->> 'id')::bigint = c.request_id
 ORDER BY c.name DESC, a.id;
\set ECHO none

\echo
\echo '== 8. Ask a model that browses (llm_chat_tools), for the first three companies'
\if :{?llm_which}
\echo '-- the model is' :llm_which
\endif
\set ECHO queries

-- The model gets the prompt and the web_fetch tool; each page it asks for is
-- fetched under the same policy as above, and audited.  output_schema makes
-- its answer a JSON object, so ->'answer'->>'city' reads it.
ALTER TABLE demo_companies ADD COLUMN hq_by_model text;
UPDATE demo_companies
SET    hq_by_model = (queryclaw.llm_chat_tools(
           format('Where is the company %s headquartered? Its web site is %s', slug, url),
           tools => '{web_fetch}', max_rounds => 4,
           output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'
       ))->'answer'->>'city'
WHERE  id <= 3;

SELECT slug, city AS city_from_api, hq_by_model
FROM   demo_companies WHERE id <= 3 ORDER BY id;

-- web_fetch can hand the page to the model with an instruction instead.
SELECT slug,
       left(regexp_replace(queryclaw.web_fetch(url, extract_prompt => 'List the products, comma-separated.'),
                           '\s+', ' ', 'g'), 100) AS extracted
FROM   demo_companies WHERE id = 1;

\set ECHO none
SELECT pg_temp.audit_settled() AS settled \gset
\set ECHO queries
\echo
\echo '== 9. What the audit log recorded for the model: one row per request, one per tool call'

SELECT func,
       count(*)                                  AS rows,
       coalesce(sum((detail->>'total_tokens')::int), 0) AS tokens,
       string_agg(DISTINCT outcome, ', ')        AS outcomes
FROM   queryclaw.audit_log
WHERE  id > :audit_mark
  AND  (func = 'llm' OR detail ? 'llm_run')
GROUP  BY func
ORDER  BY func;
