--
-- What the fuzzers (test/fuzz) found, kept here where SQL can reach it.
-- Each case also stays in the fuzzers' corpus.  Those that need no fixture
-- server are in 014_fuzz_findings_server (make installcheck runs it).
--
-- JSON that cJSON accepts but jsonb cannot hold: a malformed \u escape
-- (which cJSON reads as U+0000), \u0000 itself, numbers beyond numeric's
-- range.  api_call returns such a body as a string instead of failing in
-- jsonb_in, and web_fetch's json format says it is not JSON.
SELECT name, jsonb_typeof(r->'body') AS body, r->'ok' AS ok
  FROM unnest(ARRAY['bad-escape', 'nul-escape', 'huge-exponent', 'long-scale',
                    'huge-weight', 'fits']) AS name,
       queryclaw.api_call(qc_test.url('/json-trap/' || name)) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/json-trap/bad-escape'), 'json')$$) AS bad_escape;
SELECT queryclaw.web_fetch(qc_test.url('/json-trap/fits'), 'json')::jsonb -> 'n' -> 2 AS fits;

-- a URL without a scheme but with "://" in its query: the audit row still
-- hides the secret parameter's value
SELECT error FROM queryclaw.web_fetch_many(ARRAY['example.com/?token=SECRET&next=http://x/']);
SELECT qc_test.audit_flush();
SELECT url FROM queryclaw.audit_log WHERE url LIKE 'example.com/%';

-- libcurl reads "http:/u:p@h/" and "http:///u:p@h/" as "http://u:p@h/":
-- the audit row shows neither the user nor the password
SELECT queryclaw.web_fetch(replace(qc_test.url('/hello'), 'http://', 'http:/user:secret@')) AS one_slash;
SELECT queryclaw.web_fetch(replace(qc_test.url('/hello'), 'http://', 'http:///user:secret@')) AS three_slashes;
SELECT qc_test.audit_flush();
SELECT qc_test.scrub(url) AS url, qc_test.scrub(final_url) AS final_url
  FROM queryclaw.audit_log WHERE url ~ '^http:/(//)?[^/]' ORDER BY id;

-- redaction: when dropping the userinfo left no host ("http://a@//u:pw@h/"),
-- what followed was read as the authority of the stored URL, with a user
-- and password of its own; the statement text stored with the row was
-- shown the same way
SELECT error FROM queryclaw.web_fetch_many(ARRAY['http://a@//u:pw@h/']);
SELECT qc_test.audit_flush();
SELECT url, query FROM queryclaw.audit_log WHERE url LIKE 'http:%//h/' ORDER BY id;

-- redaction: a bare value that is a URL was judged only up to a '&' in its
-- userinfo, and kept; the URL's redaction then dropped that userinfo and
-- left, in the path, a URL with a password of its own in plain view
-- ("go=https://p.example:next=https://bob:hunter2@inner.example/").  The
-- stored statement shows the value hidden whole.
SELECT error FROM queryclaw.web_fetch_many(ARRAY['gopher://fuzz-finding/'])
 WHERE 'go=https://a&b@p.example:next=https://bob:hunter2@inner.example/' <> '';
SELECT qc_test.audit_flush();
SELECT url, query FROM queryclaw.audit_log WHERE url = 'gopher://fuzz-finding/';
