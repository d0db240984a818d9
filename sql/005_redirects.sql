--
-- Redirects: followed by the extension itself, each hop checked again.
--
SELECT queryclaw.web_fetch(qc_test.url('/chain/3'));
SELECT qc_test.scrub(r->>'url') AS final_url, r->'status' AS status
  FROM queryclaw.api_call(qc_test.url('/chain/2')) AS r;

-- relative Location, and a fragment (dropped, never sent)
SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=/hello'));
SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=hello'));
SELECT qc_test.scrub(r->>'url') AS final_url
  FROM queryclaw.api_call(qc_test.url('/redirect?to=/hello%23section')) AS r;

-- at most max_redirects hops
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/chain/6'))$$);
SET queryclaw.max_redirects = 1;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/chain/2'))$$);
SET queryclaw.max_redirects = 0;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/chain/1'))$$);
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/chain/1'))$$);
RESET queryclaw.max_redirects;

-- an endless loop ends with a clear error
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/loop'))$$);

-- a redirect to a refused target is refused before connecting to it
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://10.0.0.1/'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://169.254.169.254/latest/meta-data/'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://[::1]:22/'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=file:///etc/passwd'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=gopher://127.0.0.1/'))$$);
SET queryclaw.denied_hosts = 'blocked.example';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://blocked.example/'))$$);
-- a redirect target's host is mapped as the first URL's is: full width
-- (ｂｌｏｃｋｅｄ．ｅｘａｍｐｌｅ, percent-encoded in the Location header),
-- case, a final dot, or a number that is not an IPv4 address
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://%EF%BD%82%EF%BD%8C%EF%BD%8F%EF%BD%83%EF%BD%8B%EF%BD%85%EF%BD%84%EF%BC%8E%EF%BD%85%EF%BD%98%EF%BD%81%EF%BD%8D%EF%BD%90%EF%BD%8C%EF%BD%85/'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://BLOCKED.example./'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://10.0.0.999/'))$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://0x7f.1:22/'))$$);
RESET queryclaw.denied_hosts;
-- the same server on another port is another target: not in the allowlist
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/redirect?to=http://127.0.0.1:1/'))$$);

-- methods across redirects: 303 becomes GET, 307 and 308 keep method and body
SELECT c AS code, r->'body'->>'method' AS method, r->'body'->>'body' AS body
  FROM unnest(ARRAY[301, 302, 303, 307, 308]) AS c,
       LATERAL queryclaw.api_call(qc_test.url('/redirect?to=/echo&code=' || c), 'POST', body => 'data') AS r;

-- credentials do not follow a redirect to another origin (localhost is
-- 127.0.0.1 and ::1, and both must be allowed)
SET queryclaw.local_allowlist = '127.0.0.0/8, ::1';
SELECT r->'body'->'headers' ? 'authorization' AS same_origin_keeps
  FROM queryclaw.api_call(qc_test.url('/redirect?to=/echo'), headers => '{"Authorization": "Bearer s3cret"}') AS r;
SELECT r->'body'->'headers' ? 'authorization' AS other_origin_keeps,
       r->'body'->'headers' ? 'x-plain' AS plain_header_kept
  FROM queryclaw.api_call(qc_test.url('/redirect?to=http://localhost:' || current_setting('qc_test.port') || '/echo'),
                          headers => '{"Authorization": "Bearer s3cret", "X-Plain": "1"}') AS r;
-- every secret-looking header is dropped off-origin (the fixture echoes
-- the headers it received); the same origin gets them all
SELECT v.origin, array(SELECT k FROM unnest(ARRAY['authorization', 'cookie', 'x-api-key',
                                                  'x-vendor-session', 'private-token', 'x-plain']) AS k
                        WHERE r->'body'->'headers' ? k) AS received
  FROM (VALUES ('same', '/echo'),
               ('other', 'http://localhost:' || current_setting('qc_test.port') || '/echo')) AS v(origin, target),
       LATERAL queryclaw.api_call(qc_test.url('/redirect?to=' || v.target),
                                  headers => '{"Authorization": "Bearer s3cret", "Cookie": "sid=1",
                                               "X-Api-Key": "k1", "X-Vendor-Session": "v1",
                                               "Private-Token": "p1", "X-Plain": "1"}') AS r;

-- a 307 or 308 to another origin would send the body there again: not
-- followed, api_call returns the redirect itself (and the audit row says
-- why); to the same origin, or without a body, it is followed; 301, 302
-- and 303 turn a POST into a GET without its body and are followed
SELECT c AS code, v.origin, r->'status' AS status, r->'ok' AS ok,
       qc_test.scrub(r->>'url') AS url, r->'body'->>'method' AS method, r->'body'->>'body' AS body
  FROM unnest(ARRAY[301, 302, 303, 307, 308]) AS c,
       (VALUES ('same', '/echo'),
               ('other', 'http://localhost:' || current_setting('qc_test.port') || '/echo')) AS v(origin, target),
       LATERAL queryclaw.api_call(qc_test.url('/redirect?code=' || c || '&to=' || v.target), 'POST',
                                  body => 'data') AS r
 ORDER BY c, v.origin DESC;
SELECT r->'status' AS status, r->'body'->>'method' AS method
  FROM queryclaw.api_call(qc_test.url('/redirect?code=307&to=http://localhost:'
                                      || current_setting('qc_test.port') || '/echo')) AS r;
SELECT qc_test.audit_flush();
SELECT status, outcome, qc_test.scrub(reason) AS reason, detail->'redirects' AS redirects
  FROM queryclaw.audit_log WHERE reason LIKE '%not followed%' ORDER BY id;
RESET queryclaw.local_allowlist;
