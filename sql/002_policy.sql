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
