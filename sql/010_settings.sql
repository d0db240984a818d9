--
-- The settings: defaults, units, and list syntax rejected when set.
--
-- (those a preloaded library alone has, read at server start, are in
-- 014_durable: make installcheck runs this on any server)
SELECT name, boot_val AS default, unit, context
  FROM pg_settings WHERE name LIKE 'queryclaw.%' AND context <> 'postmaster' ORDER BY name;

-- typos in lists fail when they are set, not at request time
SET queryclaw.local_allowlist = 'example.com';
SET queryclaw.local_allowlist = '10.0.0.0/33';
SET queryclaw.local_allowlist = '127.0.0.1:0';
SET queryclaw.allowed_hosts = 'bad/host';
SET queryclaw.denied_hosts = 'a..b';
SET queryclaw.proxy = 'socks5://127.0.0.1:1080';
SET queryclaw.max_redirects = -1;
SET queryclaw.max_chars = 0;
SET queryclaw.on_error = 'ignore';
-- (the range's wording differs between PostgreSQL majors: only the SQLSTATE)
\set VERBOSITY sqlstate
SET queryclaw.timeout = 0;
\set VERBOSITY default

-- list settings accept commas, spaces, brackets and ports
SET queryclaw.local_allowlist = '127.0.0.1:8080, 10.1.0.0/16 [::1]:9000';
SHOW queryclaw.local_allowlist;
SET queryclaw.allowed_hosts = 'Example.COM, *.example.org:8443';
SHOW queryclaw.allowed_hosts;
RESET queryclaw.local_allowlist;
RESET queryclaw.allowed_hosts;

-- the prefix is reserved: a misspelt setting is an error
SET queryclaw.enabeld = on;
