--
-- The policy against the fixture server: what local_allowlist, the host
-- lists, read_only and a proxy let through, and every refusal shown before
-- any request reaches a server.  The refusals and checks that need no
-- server at all are in 002_policy_precheck.
--
-- Literal addresses are refused by the pre-check, so these tests never send
-- a packet to a private or public address.

-- the fixture itself is reachable only because its address and port are
-- in local_allowlist; without that, libcurl's socket-open check refuses
-- it: no request reaches the server.
SELECT qc_test.reset_requests();
SET queryclaw.local_allowlist = '';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
-- a host name that resolves to loopback is refused at connect time too
-- (which of its addresses, ::1 or 127.0.0.1, is reported depends on the resolver)
SELECT split_part(qc_test.try($$SELECT queryclaw.web_fetch('http://localhost:' || current_setting('qc_test.port') || '/hello')$$), E'\n', 1)
       ~ '^42501: address (::1|127\.0\.0\.1) is not public$' AS localhost_refused;
SET queryclaw.local_allowlist = '127.0.0.1:1';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
RESET queryclaw.local_allowlist;
SELECT qc_test.requests_served() AS requests_after_refusals;

-- block_local off: the same call goes through
SET queryclaw.local_allowlist = '';
SET queryclaw.block_local = off;
SELECT queryclaw.web_fetch(qc_test.url('/hello'));
RESET queryclaw.block_local;
RESET queryclaw.local_allowlist;

-- the allowlist by CIDR
SET queryclaw.local_allowlist = '127.0.0.0/8';
SELECT queryclaw.web_fetch(qc_test.url('/hello'));
RESET queryclaw.local_allowlist;

-- denied_hosts wins over everything; allowed_hosts, when set, is exclusive
SET queryclaw.denied_hosts = '127.0.0.1';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
RESET queryclaw.denied_hosts;
SET queryclaw.allowed_hosts = 'api.example.com';
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
SET queryclaw.allowed_hosts = 'api.example.com, 127.0.0.1';
SELECT queryclaw.web_fetch(qc_test.url('/hello'));
RESET queryclaw.allowed_hosts;

-- read_only: only GET and HEAD
SET queryclaw.read_only = on;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/echo'), 'POST', body => 'x')$$);
SELECT (queryclaw.api_call(qc_test.url('/echo'), 'HEAD'))->>'status' AS head_allowed;
RESET queryclaw.read_only;

-- queryclaw.proxy: requests go through the proxy (here the fixture itself,
-- which answers absolute-URI requests), which resolves and connects to the
-- target; the proxy environment variables are ignored (the test cluster
-- runs with http_proxy and friends pointing at a dead port)
DO $$ BEGIN EXECUTE format('SET queryclaw.proxy = %L', current_setting('qc_test.base')); END $$;
SELECT r->'body'->'proxied' AS proxied, r->'body'->'headers'->>'host' AS host_asked
  FROM queryclaw.api_call('http://proxied.example/echo') AS r;
-- a literal address is still checked before anything is sent
SELECT queryclaw.web_fetch('http://10.0.0.1/');
RESET queryclaw.proxy;
SELECT (queryclaw.api_call(qc_test.url('/echo')))->'body'->'proxied' AS proxied_without_setting;

-- the allowed host in a full-width spelling reaches the fixture, and libcurl
-- is given the mapped host: the request says Host: 127.0.0.1
SET queryclaw.allowed_hosts = '１２７．０．０．１';
SELECT qc_test.scrub(r->'body'->'headers'->>'host') AS host_sent, qc_test.scrub(r->>'url') AS url
  FROM queryclaw.api_call('http://１２７．０．０．１:' || current_setting('qc_test.port') || '/echo') AS r;
RESET queryclaw.allowed_hosts;

-- the same through a proxy: refused before anything is sent to it
SELECT qc_test.reset_requests();
DO $$ BEGIN EXECUTE format('SET queryclaw.proxy = %L', current_setting('qc_test.base')); END $$;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://10.0.0.999/')$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://0x7f.1/')$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://ｌｏｃａｌｈｏｓｔ/')$$);
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://１０．０．０．１/')$$);
-- check_url agrees: through a proxy a name is neither looked up nor its
-- addresses checked (the proxy does both)
SELECT queryclaw.check_url('http://ｐｒｏｘｉｅｄ．example/echo') - 'port' AS through_proxy;
SET queryclaw.denied_hosts = 'proxied.example';
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://ＰＲＯＸＩＥＤ．example./')$$);
RESET queryclaw.denied_hosts;
RESET queryclaw.proxy;
SELECT qc_test.requests_served() AS requests_sent_to_proxy;

-- control characters in a URL: invalid input, refused before anything is
-- sent, and written escaped (never raw) in the audit row and the message
SELECT qc_test.try(format('SELECT queryclaw.web_fetch(%L)', 'http://ctl.example/a' || c || 'b'))
  FROM unnest(ARRAY[chr(13), chr(10), chr(27), chr(9), chr(127), chr(1)]) AS c;
SELECT queryclaw.check_url('http://ctl.example/' || chr(13) || chr(10) || 'Host: x')->>'detail' AS check_url;
SELECT qc_test.audit_flush();
SELECT url, outcome, reason, url ~ '[\x01-\x1f\x7f]' AS raw_control_stored
  FROM queryclaw.audit_log WHERE url LIKE 'http://ctl.example/%' ORDER BY id;

-- check_url is audited, once per check: the outcome a real call would have
-- had, with "checked" where it would have sent a request
SELECT queryclaw.check_url(qc_test.url('/checked'))->>'allowed' AS allowed;
SELECT queryclaw.check_url('http://ＥＸＡＭＰＬＥ.com@１２７．０．０．１:9/refused')->>'allowed' AS allowed;
SELECT queryclaw.check_url('http://10.0.0.999/invalid')->>'allowed' AS allowed;
SELECT qc_test.audit_flush();
SELECT func, method, qc_test.scrub(url) AS url, qc_test.scrub(final_url) AS final_url, outcome,
       reason, status, detail->'addresses' AS addresses
  FROM queryclaw.audit_log WHERE func = 'check_url' AND url ~ '/(checked|refused|invalid)$' ORDER BY id;
