--
-- Limits: max_chars, max_bytes (streamed, after decompression), timeout,
-- and cancellation.
--
-- max_chars cuts on a character boundary; the argument can only narrow
SELECT queryclaw.web_fetch(qc_test.url('/hello'), max_chars => 5);
SELECT queryclaw.web_fetch(qc_test.url('/latin1'), 'article', max_chars => 4);
SET queryclaw.max_chars = 3;
SELECT queryclaw.web_fetch(qc_test.url('/hello'), max_chars => 100);
RESET queryclaw.max_chars;
SELECT r->'body' AS body, r->'truncated' AS truncated
  FROM queryclaw.api_call(qc_test.url('/hello'), max_chars => 5) AS r;
-- a JSON body longer than the limit becomes a cut string, flagged
SELECT r->'body' AS body, r->'truncated' AS truncated
  FROM queryclaw.api_call(qc_test.url('/json'), max_chars => 12) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/json'), 'json', 12)$$);
-- binary bodies are cut in whole base64 quanta
SELECT r->'body' AS body, r->'truncated' AS truncated
  FROM queryclaw.api_call(qc_test.url('/binary'), max_chars => 8) AS r;

-- max_bytes cuts the transfer while it streams: a 1 GB body stops at 1 MB
SET queryclaw.max_chars = 5000000;
SELECT length(queryclaw.web_fetch(qc_test.url('/big?bytes=1073741824'), 'raw', 2000000)) AS chars;
SELECT r->'truncated' AS truncated, length(r->>'body') AS chars
  FROM queryclaw.api_call(qc_test.url('/big?bytes=1073741824'), max_chars => 2000000) AS r;
SET queryclaw.max_bytes = '64kB';
SELECT length(queryclaw.web_fetch(qc_test.url('/big?bytes=1000000'), 'raw')) AS chars;
-- decompressed bytes count: a 50 MB gzip bomb stops at max_bytes
SELECT length(queryclaw.web_fetch(qc_test.url('/gzip-bomb?mb=50'), 'raw')) AS chars;
RESET queryclaw.max_bytes;
SELECT r->'truncated' AS truncated, length(r->>'body') AS chars
  FROM queryclaw.api_call(qc_test.url('/gzip-bomb?mb=50'), max_chars => 2000000) AS r;
RESET queryclaw.max_chars;

-- the timeout covers the whole request
SET queryclaw.timeout = '300ms';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/slow?ms=3000'))$$);
-- a server that drips one byte a second is cut by the same timeout
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/drip?n=30'))$$);
RESET queryclaw.timeout;

-- statement_timeout (a query cancel) stops a transfer: 57014, not an
-- internal error, and the session works afterwards
SET statement_timeout = '300ms';
SELECT queryclaw.web_fetch(qc_test.url('/slow?ms=5000'));
SELECT queryclaw.web_fetch(qc_test.url('/drip?n=30'));
RESET statement_timeout;
SELECT queryclaw.web_fetch(qc_test.url('/hello')) AS next_call_works;
