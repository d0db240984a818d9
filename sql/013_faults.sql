--
-- Faults: what a broken or hostile server gets.  Every case ends with a
-- clear error (or a correct result) and the backend alive.
--
-- a connection reset in mid-body; a chunked body cut short; a bad chunk
-- size; a reply that is not HTTP; no reply at all
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/reset-mid-body'))$$), E'\n', 1) AS reset_mid_body;
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/chunked-truncated'))$$), E'\n', 1) AS chunked_truncated;
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/chunked-bad-size'))$$), E'\n', 1) AS chunked_bad_size;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/not-http'))$$) AS not_http;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/empty-reply'))$$) AS empty_reply;

-- a 1 MB header line; 4,000 headers (libcurl 8 refuses more than 5,000), of
-- which the first 1000 names are kept (the fixture's Server header is one)
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/fault/huge-header'))$$) AS huge_header;
SELECT count(*) AS headers
  FROM queryclaw.api_call(qc_test.url('/fault/many-headers?n=4000')) AS r,
       jsonb_object_keys(r->'headers') AS k
 WHERE k LIKE 'x-h-%';

-- bombs: 1 GB of brotli from 2 KB, of gzip from 1 MB, cut at max_bytes
-- after decompression (the timeout is raised in case the fixture is still
-- compressing them)
SET queryclaw.timeout = '60s';
SELECT r->'truncated' AS truncated, length(r->>'body') AS chars
  FROM queryclaw.api_call(qc_test.url('/brotli-bomb?mb=1024'), max_chars => 50000) AS r;
SET queryclaw.max_chars = 5000000;
SELECT length(queryclaw.web_fetch(qc_test.url('/brotli-bomb?mb=1024'), 'raw')) AS chars_at_1mb;
SELECT length(queryclaw.web_fetch(qc_test.url('/gzip-bomb?mb=1024'), 'raw')) AS chars_at_1mb;
RESET queryclaw.max_chars;
RESET queryclaw.timeout;

-- a server that accepts and never answers: the timeout ends it
SET queryclaw.timeout = '300ms';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/fault/silent'))$$) AS silent;
RESET queryclaw.timeout;

-- a cancel stops a request still connecting (a port whose connections
-- never complete), a request waiting for an answer, and a batch
SET queryclaw.local_allowlist = '127.0.0.1';
SET statement_timeout = '300ms';
SELECT queryclaw.web_fetch('http://127.0.0.1:' || current_setting('qc_test.blackhole_port') || '/');
SELECT queryclaw.web_fetch(qc_test.url('/fault/silent'));
SELECT count(*) FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/fault/silent'), ARRAY[8]));
RESET statement_timeout;
-- without a cancel, the connect attempt ends at queryclaw.timeout
SET queryclaw.timeout = '300ms';
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch('http://127.0.0.1:' || current_setting('qc_test.blackhole_port') || '/')$$), E'\n', 1) ~ '^08006: request to http://127\.0\.0\.1:\d+/ timed out$' AS connect_timed_out;
RESET queryclaw.timeout;

-- HTTPS with a certificate from a private CA: refused by default, trusted
-- once queryclaw.ca_file names the CA
CREATE FUNCTION qc_test.tls_url(path text) RETURNS text LANGUAGE sql
AS $$ SELECT 'https://127.0.0.1:' || current_setting('qc_test.tls_port') || path $$;
SELECT regexp_replace(split_part(qc_test.try($$SELECT queryclaw.web_fetch(qc_test.tls_url('/hello'))$$), E'\n', 1), ':\d+/', ':TLSPORT/') AS untrusted;
DO $$ BEGIN EXECUTE format('SET queryclaw.ca_file = %L', current_setting('qc_test.ca_file')); END $$;
SELECT queryclaw.web_fetch(qc_test.tls_url('/hello')) AS trusted;
SELECT (queryclaw.api_call(qc_test.tls_url('/json')))->'body'->'items' AS items;
RESET queryclaw.ca_file;
RESET queryclaw.local_allowlist;

-- the session survives all of it
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS still_working;
