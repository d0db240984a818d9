--
-- web_fetch: formats, content types, encodings, HTTP errors, bad input.
--
SELECT queryclaw.web_fetch(qc_test.url('/hello'));
SELECT queryclaw.web_fetch(qc_test.url('/text-plain'), 'raw');

-- HTML to text: head, script, style, noscript and template dropped
SELECT queryclaw.web_fetch(qc_test.url('/html'));
SELECT queryclaw.web_fetch(qc_test.url('/html')) ~ 'SHOULD-NOT-APPEAR' AS leaked;
SELECT left(queryclaw.web_fetch(qc_test.url('/html'), 'raw'), 15) AS raw_start;

-- JSON
SELECT queryclaw.web_fetch(qc_test.url('/json'), 'json');
SELECT queryclaw.web_fetch(qc_test.url('/json'), 'json')::jsonb -> 'nested' AS nested;
SELECT queryclaw.web_fetch(qc_test.url('/json'));
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/notjson'), 'json')$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'), 'json')$$);

-- character sets: header charset, <meta> charset, invalid bytes, NUL bytes
SELECT queryclaw.web_fetch(qc_test.url('/latin1'));
SELECT queryclaw.web_fetch(qc_test.url('/meta-charset'));
SELECT queryclaw.web_fetch(qc_test.url('/badutf8'));
SELECT queryclaw.web_fetch(qc_test.url('/nul'));
SELECT queryclaw.web_fetch(qc_test.url('/gzip'));

-- binary content is not text
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/binary'))$$);

-- a status other than 2xx is an error naming status and URL
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/status/404'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/status/500'))$$);
SELECT queryclaw.web_fetch(qc_test.url('/status/204')) = '' AS empty_204;

-- bad input
SELECT queryclaw.web_fetch(qc_test.url('/hello'), 'pdf');
SELECT queryclaw.web_fetch(qc_test.url('/hello'), max_chars => 0);
SELECT queryclaw.web_fetch('');
SELECT queryclaw.web_fetch('example.com');
SELECT queryclaw.web_fetch('http://exa mple.com/');
SELECT queryclaw.web_fetch('http://[::1/');
SELECT queryclaw.web_fetch('http://:80/');
SELECT queryclaw.web_fetch(NULL) IS NULL AS null_in_null_out;

-- a server that is not there (nothing listens on port 1)
SET queryclaw.local_allowlist = '127.0.0.1';
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch('http://127.0.0.1:1/')$$), E'\n', 1) AS error;
RESET queryclaw.local_allowlist;

-- html_to_text: the same conversion on stored HTML, no request
SELECT queryclaw.html_to_text('<html><head><title>T</title><script>x()</script></head><body><h1>Title</h1><p>One &amp; two</p><ul><li>a</li><li>b</li></ul></body></html>');
SELECT queryclaw.html_to_text('');
SELECT queryclaw.html_to_text('plain words, no markup');
SELECT queryclaw.html_to_text(NULL) IS NULL AS null_in_null_out;
SELECT queryclaw.html_to_text('<p>x</p>', 'json');
