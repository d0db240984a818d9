--
-- What needs only a server with the extension installed, no fixture and no
-- preload: make installcheck runs this (with 010_settings and 030_content)
-- against the user's own server.  Conversion, metadata and characters of a
-- page given as text; refusals made before any connection (so nothing is
-- sent anywhere); privileges.
--

-- conversion: what web_fetch does with a page, on a page given as text
SELECT queryclaw.html_to_text('<h1>Title</h1><p>One <b>two</b> <a href="/x">x</a></p>',
                              'text', 'https://example.com/a/');
SELECT queryclaw.html_to_text('<article><h2>Part</h2>
<p>The second part explains, at some length, how the pieces fit together;
<a href="x">the next part</a> goes further.</p>
<ul><li>first</li><li>second</li></ul></article>', 'markdown', 'https://example.com/a/');

-- metadata, with relative links made absolute against base_url
SELECT jsonb_pretty(queryclaw.html_to_text($$<html lang="en"><head><title>T</title>
<meta name="description" content="D"><meta property="og:image" content="/i.png">
<link rel="canonical" href="/c"></head><body></body></html>$$,
                                           'metadata', 'https://example.com/a')::jsonb);

-- characters: references become characters of the database encoding
SELECT queryclaw.html_to_text('<p>caf&eacute; &#x20AC; &#128512; &bogus;</p>');

-- refusals before any connection: disabled, scheme, addresses that are not
-- public, denied and not allowed hosts (names under .invalid, RFC 2606)
SET queryclaw.enabled = off;
SELECT queryclaw.web_fetch('http://192.0.2.1/');
SET queryclaw.enabled = on;
SET queryclaw.block_local = on;
SET queryclaw.local_allowlist = '';
SELECT queryclaw.web_fetch('file:///etc/passwd');
SELECT queryclaw.web_fetch('http://127.0.0.1:9/');
SELECT queryclaw.api_call('http://[::1]:9/');
SELECT queryclaw.web_fetch('http://169.254.169.254/latest/meta-data/');
SET queryclaw.denied_hosts = 'blocked.invalid';
SELECT queryclaw.web_fetch('http://blocked.invalid/');
RESET queryclaw.denied_hosts;
SET queryclaw.allowed_hosts = 'only.invalid';
SELECT queryclaw.web_fetch('http://other.invalid/');
RESET queryclaw.allowed_hosts;
SELECT jsonb_pretty(queryclaw.check_url('http://10.0.0.1/')) AS check_private;
RESET queryclaw.local_allowlist;
RESET queryclaw.block_local;
RESET queryclaw.enabled;

-- privileges: EXECUTE on the functions is the DBA's to grant (PUBLIC has
-- none), and the policy is for superusers to set
CREATE ROLE regress_qc_plain;
SET ROLE regress_qc_plain;
SELECT queryclaw.html_to_text('<p>not even converting</p>');
SELECT queryclaw.web_fetch('http://192.0.2.1/');
SELECT queryclaw.api_call('http://192.0.2.1/');
SET queryclaw.enabled = on;
SET queryclaw.block_local = off;
-- refused with 42501 (worded differently by each PostgreSQL major)
\set VERBOSITY sqlstate
SHOW queryclaw.local_allowlist;
\set VERBOSITY default
RESET ROLE;
DROP ROLE regress_qc_plain;
