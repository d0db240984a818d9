--
-- The policy's refusals made before any connection, and check_url's dry
-- run: no fixture server, nothing sent anywhere (literal addresses, and
-- names refused before any lookup).  make installcheck runs this, so the
-- policy is set here as these checks need it, whatever the server's
-- configuration says (SET back to these, never RESET to the server's);
-- 002_policy has what needs the fixture.
--
SET queryclaw.enabled = on;
SET queryclaw.block_local = on;
SET queryclaw.local_allowlist = '';
SET queryclaw.allowed_hosts = '';
SET queryclaw.denied_hosts = '';
SET queryclaw.proxy = '';

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

-- denied_hosts: wildcards, and an entry with a port
SET queryclaw.denied_hosts = '*.example.com, 93.184.216.34:8080';
SELECT queryclaw.check_url('http://a.b.example.com/')->>'detail' AS wildcard;
SELECT queryclaw.check_url('http://93.184.216.34:8080/')->>'reason' AS with_port;
SELECT queryclaw.check_url('http://93.184.216.34:8081/')->>'allowed' AS other_port_allowed;
SET queryclaw.denied_hosts = '';

-- the master switch
SET queryclaw.enabled = off;
SELECT queryclaw.web_fetch('http://example.com/');
SELECT queryclaw.check_url('http://example.com/')->>'reason' AS reason;
SET queryclaw.enabled = on;

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
SET queryclaw.denied_hosts = '';
SET queryclaw.allowed_hosts = 'bücher.de';
SELECT queryclaw.check_url('http://example.com/')->>'hint' AS allowed_hosts_hint;
SET queryclaw.allowed_hosts = '';

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
