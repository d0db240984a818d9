--
-- queryclaw.on_error: 'raise' (the default) or 'return'.  With 'return', a
-- call that fails gives its error as its result (NULL; api_call and the
-- LLM functions an object saying the error; web_search no rows) and the
-- statement goes on, ending with one WARNING that counts the failures by
-- SQLSTATE.  Invalid arguments, the switch off and a cancel still raise.
--

-- any role may set it: it is the caller's choice, not the DBA's policy
SELECT context, boot_val, enumvals FROM pg_settings WHERE name = 'queryclaw.on_error';
CREATE ROLE regress_qc_on_error;
SET ROLE regress_qc_on_error;
SET queryclaw.on_error = 'return';
SHOW queryclaw.on_error;
RESET ROLE;
DROP ROLE regress_qc_on_error;
RESET queryclaw.on_error;

-- A table of URLs, one for each way a call fails, between two that work.
-- Ports vary from run to run: shown as PORT.
-- (what follows "could not connect to URL:" is libcurl's own words, which
-- differ from one version to the next: shown as "...")
CREATE FUNCTION qc_test.shown(t text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT regexp_replace(regexp_replace(qc_test.scrub(t), '127\.0\.0\.1:\d+', '127.0.0.1:PORT', 'g'),
                            '^(could not connect to \S+): .*$', '\1: ...') $$;
CREATE TABLE qc_test.on_error_urls (id int PRIMARY KEY, what text, url text, result jsonb, page text);
INSERT INTO qc_test.on_error_urls (id, what, url) VALUES
    (1, 'a page', qc_test.url('/hello')),
    (2, 'refused by the policy', 'http://10.0.0.1/'),
    (3, 'a page not found', qc_test.url('/status/404')),
    (4, 'a server too slow', qc_test.url('/slow?ms=5000')),
    (5, 'a port that accepts no connection', 'http://127.0.0.1:' || current_setting('qc_test.blackhole_port') || '/'),
    (6, 'a closed port', 'http://127.0.0.1:1/'),
    (7, 'a certificate not trusted', 'https://127.0.0.1:' || current_setting('qc_test.tls_port') || '/hello'),
    (8, 'another page', qc_test.url('/json'));
SET queryclaw.local_allowlist = '127.0.0.1';
SET queryclaw.timeout = '500ms';

-- 'raise': the first failure aborts the whole statement
UPDATE qc_test.on_error_urls SET result = queryclaw.api_call(url);
SELECT count(result) AS kept FROM qc_test.on_error_urls;

-- 'return': every row that worked is kept, each failed one says why, and
-- one WARNING counts the failures (web_fetch fails on a 404 too, which
-- api_call returns as a response)
SET queryclaw.on_error = 'return';
UPDATE qc_test.on_error_urls SET result = queryclaw.api_call(url), page = queryclaw.web_fetch(url);
SELECT id, what, result->'ok' AS ok, result->'status' AS status, result->>'sqlstate' AS sqlstate,
       qc_test.shown(result->>'error') AS error, rtrim(left(page, 20), E'\n') AS page
  FROM qc_test.on_error_urls ORDER BY id;
-- every attempt has its audit row, the failed ones included
SELECT qc_test.audit_flush();
SELECT func, outcome, count(*) FROM queryclaw.my_audit
 WHERE query LIKE 'UPDATE qc_test.on_error_urls SET result = queryclaw.api_call(url), page%'
 GROUP BY 1, 2 ORDER BY 1, 2;

-- what raises all the same: invalid arguments, the switch off, a cancel
SELECT qc_test.try($$SELECT queryclaw.web_fetch('not a url')$$) AS invalid_url;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/hello'), 'BREW')$$) AS invalid_method;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'), 'pdf')$$) AS invalid_format;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/hello'), headers => '{"X-A": "1\r\nX-B: 2"}')$$) AS invalid_header;
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('hi', tools => '{drop_database}')$$) AS invalid_tool;
SET queryclaw.enabled = off;
SELECT queryclaw.api_call(qc_test.url('/hello'));
RESET queryclaw.enabled;
RESET queryclaw.timeout;
SET statement_timeout = '300ms';
SELECT queryclaw.web_fetch(qc_test.url('/slow?ms=5000'));
SELECT queryclaw.api_call(qc_test.url('/slow?ms=5000'));
RESET statement_timeout;

-- the model's errors: a reply that is not a chat completion, a refusal,
-- an answer that does not match output_schema (22P02: what came back, not
-- an argument), and web_fetch's extract_prompt cut at the token limit
SELECT queryclaw.llm_chat_tools('SCENARIO:malformed:not_json') AS not_a_completion;
SELECT queryclaw.llm_chat_tools('[{"role": "user", "content": "SCENARIO:refusal"}]'::jsonb,
                                output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}}')
       AS refused;
SELECT queryclaw.llm_chat_tools('SCENARIO:bad_json',
                                output_schema => '{"type": "object", "properties": {"city": {"type": "string"}}}')
       - 'error' AS not_matching;
SELECT queryclaw.web_fetch(qc_test.url('/html'), extract_prompt => 'SCENARIO:length') AS cut_extract;
SELECT queryclaw.llm_chat_tools('SCENARIO:plain hi')->>'answer' AS still_answers;

-- the search API failing: no rows; the embeddings endpoint refusing an
-- input: NULL, and in a batch only that input's group is NULL
SET queryclaw.retry_max = 0;
SELECT count(*) AS results FROM queryclaw.web_search('error');
SELECT count(*) AS results FROM queryclaw.web_search('queryclaw', 2);
SELECT queryclaw.llm_embed('EMBED_ERROR') IS NULL AS no_embedding;
SET queryclaw.embed_batch_size = 1;
SELECT ord, embedding IS NOT NULL AS embedded FROM queryclaw.llm_embed(ARRAY['one', 'EMBED_ERROR', 'three']);
RESET queryclaw.embed_batch_size;
RESET queryclaw.retry_max;

-- one WARNING a statement: a DO block's calls count together; in a
-- transaction, each statement has its own
DO $$ BEGIN
    PERFORM queryclaw.api_call('http://10.0.0.1/');
    PERFORM queryclaw.web_fetch('http://10.0.0.2/');
END $$;
BEGIN;
SELECT queryclaw.api_call('http://10.0.0.1/')->>'sqlstate' AS first;
SELECT queryclaw.api_call('http://10.0.0.1/')->>'sqlstate' AS second;
COMMIT;
-- a statement that ends in an error says only that error, and the next
-- one starts counting again
DO $$ BEGIN
    PERFORM queryclaw.api_call('http://10.0.0.1/');
    RAISE EXCEPTION 'the statement fails after its call';
END $$;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS no_warning;

-- the batch functions return errors per row whatever the setting
SELECT ord, status, qc_test.shown(error) AS error
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello'), 'http://10.0.0.1/']);

RESET queryclaw.on_error;
RESET queryclaw.local_allowlist;
DROP TABLE qc_test.on_error_urls;
DROP FUNCTION qc_test.shown(text);
