--
-- The policy: every refusal class, shown before any connection is made.
--
-- Literal addresses are refused by the pre-check, so these tests never send
-- a packet to a private or public address.

-- the dry run
SELECT jsonb_pretty(queryclaw.check_url('http://127.0.0.1:8/')) AS loopback;
SELECT jsonb_pretty(queryclaw.check_url('http://[::1]/')) AS ipv6_loopback;
SELECT jsonb_pretty(queryclaw.check_url('http://192.168.1.100/admin')) AS private;
SELECT jsonb_pretty(queryclaw.check_url('http://93.184.216.34/')) AS public_literal;
SELECT jsonb_pretty(queryclaw.check_url('ftp://example.com/')) AS scheme;
SELECT jsonb_pretty(queryclaw.check_url('not a url')) AS invalid;

-- every non-public range, in every spelling libcurl accepts
SELECT u AS url, r->>'allowed' AS allowed, r->>'detail' AS detail
  FROM unnest(ARRAY[
    'http://127.0.0.1/',
    'http://2130706433/',            -- decimal
    'http://0x7f000001/',            -- hex
    'http://017700000001/',          -- octal
    'http://0177.0.0.1/',            -- octal dotted
    'http://127.1/',                 -- short form
    'http://0.0.0.0/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.0.1/',
    'http://100.64.1.1/',            -- CGNAT
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.10.10/',
    'http://192.0.0.8/',
    'http://192.0.2.1/',
    'http://198.18.0.1/',
    'http://198.51.100.1/',
    'http://203.0.113.1/',
    'http://224.0.0.1/',
    'http://240.0.0.1/',
    'http://255.255.255.255/',
    'http://[::]/',
    'http://[::1]/',
    'http://[fc00::1]/',
    'http://[fd00:ec2::254]/',
    'http://[fe80::1]/',
    'http://[fec0::1]/',
    'http://[ff02::1]/',
    'http://[2001:db8::1]/',
    'http://[::ffff:127.0.0.1]/',    -- IPv4-mapped
    'http://[::ffff:7f00:1]/',
    'http://[::10.0.0.1]/',          -- IPv4-compatible
    'http://[64:ff9b::a9fe:a9fe]/',  -- NAT64 of the metadata address
    'http://[2002:c0a8:101::1]/',    -- 6to4 of 192.168.1.1
    'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',  -- Teredo, client 127.0.0.1
    'http://[4000::1]/'
  ]) AS u, LATERAL queryclaw.check_url(u) AS r;

-- userinfo tricks: the host is what follows the last @
SELECT queryclaw.check_url('http://example.com@127.0.0.1/')->>'host' AS host;
SELECT queryclaw.check_url('http://user:pass@10.0.0.1/')->>'reason' AS reason;

-- a real call is refused the same way, with detail and hint
SELECT queryclaw.web_fetch('http://10.0.0.1/');
SELECT queryclaw.web_fetch('http://[::ffff:127.0.0.1]:9/');
SELECT queryclaw.api_call('http://169.254.169.254/latest/meta-data/');
SELECT queryclaw.web_fetch('file:///etc/passwd');
SELECT queryclaw.web_fetch('gopher://127.0.0.1:70/');

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
SET queryclaw.denied_hosts = '*.example.com, 93.184.216.34:8080';
SELECT queryclaw.check_url('http://a.b.example.com/')->>'detail' AS wildcard;
SELECT queryclaw.check_url('http://93.184.216.34:8080/')->>'reason' AS with_port;
SELECT queryclaw.check_url('http://93.184.216.34:8081/')->>'allowed' AS other_port_allowed;
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

-- the master switch
SET queryclaw.enabled = off;
SELECT queryclaw.web_fetch('http://example.com/');
SELECT queryclaw.check_url('http://example.com/')->>'reason' AS reason;
RESET queryclaw.enabled;

-- Hosts as browsers and libcurl see them: full-width forms, Unicode full
-- stops, case, a final dot and percent-escapes are mapped away (IDNA,
-- UTS #46) before any decision, and the lists match the A-label
SET queryclaw.denied_hosts = 'example.com, *.bücher.de';
SELECT spelling, r->>'host' AS host, r->>'allowed' AS allowed, r->>'detail' AS detail
  FROM (VALUES ('full width', 'http://ｅｘａｍｐｌｅ．ｃｏｍ/'),
               ('ideographic full stop', 'http://example。com/'),
               ('halfwidth ideographic full stop', 'http://example｡com/'),
               ('upper case, final dot', 'http://EXAMPLE.COM./'),
               ('percent-escape', 'http://ex%61mple.com/'),
               ('Unicode', 'http://www.BÜCHER.de/'),
               ('A-label', 'http://www.xn--bcher-kva.de/')) AS t(spelling, u),
       LATERAL queryclaw.check_url(u) AS r;
-- a real call is refused the same way, before any lookup
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://ｅｘａｍｐｌｅ．ｃｏｍ/')$$);
-- entries written in Unicode, full width or as A-labels match every spelling
SET queryclaw.denied_hosts = 'ｅｘａｍｐｌｅ．ｃｏｍ, xn--fa-hia.de';
SELECT queryclaw.check_url('http://example.com/')->>'detail' AS full_width_entry;
SELECT queryclaw.check_url('http://FAß.de/')->>'detail' AS a_label_entry;
RESET queryclaw.denied_hosts;
SET queryclaw.allowed_hosts = 'bücher.de';
SELECT queryclaw.check_url('http://example.com/')->>'hint' AS allowed_hosts_hint;
-- the allowed host in a full-width spelling reaches the fixture, and libcurl
-- is given the mapped host: the request says Host: 127.0.0.1
SET queryclaw.allowed_hosts = '１２７．０．０．１';
SELECT qc_test.scrub(r->'body'->'headers'->>'host') AS host_sent, qc_test.scrub(r->>'url') AS url
  FROM queryclaw.api_call('http://１２７．０．０．１:' || current_setting('qc_test.port') || '/echo') AS r;
RESET queryclaw.allowed_hosts;

-- a host that ends in a number is an IPv4 address, in any form browsers
-- and libcurl accept, checked as the address it denotes ...
SELECT u AS url, r->>'host' AS host, r->>'reason' AS reason
  FROM unnest(ARRAY[
    'http://１２７．０．０．１/',
    'http://127.0.0.1./',
    'http://0x7f.1/',
    'http://0X7F.0.0.1/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://ｌｏｃａｌｈｏｓｔ/',
    'http://a.localhost/'
  ]) AS u, LATERAL queryclaw.check_url(u) AS r;
-- ... or the URL is not valid (22023), and no name is looked up
SELECT u AS url, r->>'reason' AS reason, r->>'detail' AS detail
  FROM unnest(ARRAY[
    'http://10.0.0.999/',
    'http://0x1ffffffff/',
    'http://1.2.3.4.5/',
    'http://256.1.1.1/',
    'http://1.2.3.08/',
    'http://4294967296/',
    'http://foo.123/',
    'http://a％2fb.example/',
    'http://a%25b.example/',
    'http://。/'
  ]) AS u, LATERAL queryclaw.check_url(u) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch('http://10.0.0.999/')$$);
SELECT qc_test.try($$SELECT queryclaw.api_call('http://0x1ffffffff/')$$);
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
