--
-- Batches: web_fetch_many and api_call_many run requests concurrently and
-- return one row per request, in input order; a failure is a row, not an
-- error.
--
SELECT ord, qc_test.scrub(url) AS url, status, left(content, 20) AS content,
       qc_test.scrub(error) AS error, elapsed_ms >= 0 AS timed
  FROM queryclaw.web_fetch_many(ARRAY[
         qc_test.url('/hello'),
         qc_test.url('/status/404'),
         'http://10.0.0.1/',
         'not a url',
         NULL,
         qc_test.url('/json'),
         qc_test.url('/binary'),
         qc_test.url('/chain/2'),
         'file:///etc/passwd']);

SELECT ord, content FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/json')], 'json');
SELECT ord, content FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/html')], max_chars => 22);
SELECT count(*) AS no_rows FROM queryclaw.web_fetch_many('{}');
SELECT queryclaw.web_fetch_many(NULL) IS NULL AS null_in_null_out;
SELECT * FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello')], 'pdf');

-- each request is audited like a single call (the audit worker writes
-- the rows: wait for it)
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT count(*) FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello'), qc_test.url('/status/500'), 'http://[::1]/']);
SELECT qc_test.audit_flush();
SELECT func, outcome, status, qc_test.scrub(url) AS url
  FROM queryclaw.audit_log ORDER BY url;
-- a response that arrives but cannot be shaped as asked (not JSON) is one
-- row too, its reason the row's error, whatever else the batch does
TRUNCATE queryclaw.audit_log;
SELECT ord, status, content IS NULL AS no_content, qc_test.scrub(error) AS error
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello'), qc_test.url('/json'), qc_test.url('/html')], 'json');
SELECT qc_test.audit_flush();
SELECT func, outcome, status, qc_test.scrub(reason) AS reason
  FROM queryclaw.audit_log ORDER BY url;

-- at most max_concurrency at once, and at most max_host_concurrency to one
-- host: the fixture reports the most /slow requests it served at once
SELECT qc_test.reset_requests();
SELECT count(*) FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/slow?ms=500'), ARRAY[12]));
-- (the peaks are bounds, not exact figures: a loaded machine may start
-- some requests late, but never more at once than the caps allow)
CREATE FUNCTION qc_test.slow_peak() RETURNS int LANGUAGE sql
AS $$ SELECT ((queryclaw.api_call(qc_test.url('/stats')))->'body'->>'slow_peak')::int $$;
SELECT qc_test.slow_peak() BETWEEN 4 AND 8 AS within_default_host_cap_of_8;
SET queryclaw.max_host_concurrency = 16;
SET queryclaw.max_concurrency = 3;
SELECT qc_test.reset_requests();
SELECT count(*) FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/slow?ms=500'), ARRAY[6]));
SELECT qc_test.slow_peak() BETWEEN 2 AND 3 AS within_max_concurrency_of_3;
SET queryclaw.max_concurrency = 16;
SELECT qc_test.reset_requests();
SELECT count(*) FILTER (WHERE content = E'slow done\n') AS done
  FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/slow?ms=1000'), ARRAY[16]));
SELECT qc_test.slow_peak() BETWEEN 9 AND 16 AS within_max_concurrency_of_16;
RESET queryclaw.max_concurrency;
RESET queryclaw.max_host_concurrency;

-- the timeout applies to each request; a cancel stops the whole batch
SET queryclaw.timeout = '200ms';
SELECT ord, status, qc_test.scrub(error) AS error
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello'), qc_test.url('/slow?ms=2000')]);
RESET queryclaw.timeout;
SET statement_timeout = '300ms';
SELECT count(*) FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/slow?ms=3000'), ARRAY[4]));
RESET statement_timeout;

-- api_call_many: an array of {url, method, headers, body}
SELECT ord, qc_test.scrub(url) AS url, status,
       response->'body'->>'method' AS method, response->'body'->>'body' AS body_seen,
       response->'body'->'headers'->>'x-k' AS header_seen, qc_test.scrub(error) AS error
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/echo')),
         jsonb_build_object('url', qc_test.url('/echo'), 'method', 'POST', 'body', '{"a": 1}',
                            'headers', '{"X-K": "v"}'::jsonb),
         jsonb_build_object('url', qc_test.url('/status/404')),
         jsonb_build_object('url', 'http://169.254.169.254/'),
         jsonb_build_object('method', 'GET')));
SELECT response->'status' AS status, response->'truncated' AS truncated, response->'body' AS body
  FROM queryclaw.api_call_many(jsonb_build_array(jsonb_build_object('url', qc_test.url('/hello'))), 4);

-- malformed requests are errors before anything is sent
SELECT * FROM queryclaw.api_call_many('{"url": "x"}');
SELECT * FROM queryclaw.api_call_many('[1]');
SELECT * FROM queryclaw.api_call_many('[{"url": 1}]');
SELECT * FROM queryclaw.api_call_many('[{"url": "http://x/", "method": "TRACE"}]');
SELECT * FROM queryclaw.api_call_many('[{"url": "http://x/", "headers": {"Host": "y"}}]');

-- the enrichment pattern: one UPDATE ... FROM web_fetch_many(array_agg(url))
CREATE TABLE pages (id int PRIMARY KEY, url text, body text, fetch_error text);
INSERT INTO pages SELECT g, qc_test.url(CASE WHEN g = 3 THEN '/status/404' ELSE '/hello' END)
  FROM generate_series(1, 5) g;
UPDATE pages p SET body = f.content, fetch_error = qc_test.scrub(f.error)
  FROM (SELECT array_agg(url ORDER BY id) AS urls, array_agg(id ORDER BY id) AS ids FROM pages) a,
       queryclaw.web_fetch_many(a.urls) f
 WHERE p.id = a.ids[f.ord];
SELECT id, body, fetch_error FROM pages ORDER BY id;
DROP TABLE pages;
