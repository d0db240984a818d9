--
-- Endpoints: foreign servers of the queryclaw wrapper carry an API's base
-- URL and limits, user mappings its keys, USAGE on the server who may send
-- them.  What a call carries (what the validator refuses, which needs no
-- fixture, is in 080_endpoints_validator).
--
-- Calls.  The fixture's servers: fx covers /echo/v1, fx_root all of the
-- fixture, fx_redir its /redirect.  Values of 8 characters or more that a
-- mapping sends are REDACTED wherever they would be shown, results
-- included; the short X-Srv values show which mapping a call carried.
--
CREATE ROLE qc_etl;
CREATE ROLE qc_other;
GRANT USAGE ON SCHEMA qc_test TO qc_etl, qc_other;
GRANT EXECUTE ON FUNCTION queryclaw.api_call(text, text, jsonb, text, integer),
                          queryclaw.web_fetch(text, text, integer, text),
                          queryclaw.api_call_many(jsonb, integer),
                          queryclaw.web_fetch_many(text[], text, integer)
   TO qc_etl, qc_other;

CREATE FUNCTION qc_test.create_server(name text, path text, options text DEFAULT '')
RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L%s)',
                   name, qc_test.url(path), options);
END
$$;
-- what the fixture's /echo was sent
CREATE FUNCTION qc_test.sent(r jsonb) RETURNS text LANGUAGE sql
AS $$ SELECT format('%s %s x-srv=%s authorization=%s',
                    r->'body'->>'path', r->'body'->'query',
                    coalesce(r->'body'->'headers'->>'x-srv', '-'),
                    coalesce(r->'body'->'headers'->>'authorization', '-')) $$;
CREATE FUNCTION qc_test.sent(url text, headers jsonb DEFAULT NULL) RETURNS text LANGUAGE sql
AS $$ SELECT qc_test.sent(queryclaw.api_call(url, headers => headers)) $$;

SELECT qc_test.create_server('fx', '/echo/v1');
SELECT qc_test.create_server('fx_root', '/');
SELECT qc_test.create_server('fx_redir', '/redirect');
CREATE USER MAPPING FOR PUBLIC SERVER fx
  OPTIONS (headers '{"Authorization": "Bearer fxpublickey0001", "X-Srv": "fx"}',
           query 'api_key=fxquerykey0001&v=2');
CREATE USER MAPPING FOR qc_etl SERVER fx
  OPTIONS (headers '{"Authorization": "Bearer fxetlkey0001", "X-Srv": "fx-etl"}');
CREATE USER MAPPING FOR PUBLIC SERVER fx_root OPTIONS (headers '{"X-Srv": "root"}');
CREATE USER MAPPING FOR PUBLIC SERVER fx_redir
  OPTIONS (headers '{"Authorization": "Bearer fxredirkey0001", "X-Srv": "redir"}');
GRANT USAGE ON FOREIGN SERVER fx TO qc_etl;

SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;

-- a role without USAGE is sent nothing of any mapping
SET ROLE qc_other;
SELECT qc_test.sent(qc_test.url('/echo/v1/items'));
RESET ROLE;
-- with USAGE: its own mapping, else PUBLIC's (the superuser has USAGE)
SET ROLE qc_etl;
SELECT qc_test.sent(qc_test.url('/echo/v1/items'));
RESET ROLE;
SELECT qc_test.sent(qc_test.url('/echo/v1/items'));

-- which server a URL is under: the path at a segment boundary, the
-- longest match, the same port
SELECT p AS path, qc_test.sent(qc_test.url(p)) AS sent
  FROM unnest(ARRAY['/echo/v1', '/echo/v1/', '/echo/v1?page=2', '/echo/v10', '/echo/v1x',
                    '/echo/V1', '/echo/v1%2Fitems', '/echo', '/echo/v1/a/b']) AS p;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER fx_other_port FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                   'http://127.0.0.1:' || current_setting('qc_test.tls_port') || '/echo/v1/deeper');
END
$$;
CREATE USER MAPPING FOR PUBLIC SERVER fx_other_port OPTIONS (headers '{"X-Srv": "port"}');
SELECT qc_test.sent(qc_test.url('/echo/v1/deeper/x'));
-- a trailing slash in the server's url is no part of the match
SELECT qc_test.create_server('fx_slash', '/echo/v2/');
CREATE USER MAPPING FOR PUBLIC SERVER fx_slash OPTIONS (headers '{"X-Srv": "slash"}');
SELECT p AS path, qc_test.sent(qc_test.url(p)) AS sent
  FROM unnest(ARRAY['/echo/v2', '/echo/v2/', '/echo/v2/x', '/echo/v20']) AS p;
DROP SERVER fx_other_port, fx_slash CASCADE;

-- the caller cannot override a header the mapping sets; others are added
SELECT qc_test.sent(qc_test.url('/echo/v1/x'), '{"X-Srv": "mine", "Authorization": "Bearer mine"}');
SELECT r->'body'->'headers'->>'x-extra' AS extra
  FROM queryclaw.api_call(qc_test.url('/echo/v1/x'), headers => '{"X-Extra": "kept"}') AS r;

-- a redirect that leaves the server's url drops the mapping's headers
SELECT qc_test.sent(qc_test.url('/redirect?to=/echo/elsewhere'));

-- every path: web_fetch, the batch functions
SET ROLE qc_etl;
SELECT qc_test.sent(jsonb_build_object('body', queryclaw.web_fetch(qc_test.url('/echo/v1/page'), 'raw')::jsonb));
SELECT ord, qc_test.sent(jsonb_build_object('body', content::jsonb))
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/echo/v1/a'), qc_test.url('/echo/v1/b')], 'raw');
SELECT ord, qc_test.sent(response)
  FROM queryclaw.api_call_many(jsonb_build_array(
         jsonb_build_object('url', qc_test.url('/echo/v1/c')),
         jsonb_build_object('url', qc_test.url('/echo/v1/d'), 'headers', '{"X-Srv": "mine"}'::jsonb)));
RESET ROLE;

-- a server that echoes the key back (an error page quoting the request)
-- has it replaced, in the result and in web_fetch's error
SELECT qc_test.create_server('fx_reflect', '/reflect');
CREATE USER MAPPING FOR PUBLIC SERVER fx_reflect OPTIONS (query 'token=reflectkey0001');
SELECT r->'status' AS status, r->'body' AS body, qc_test.scrub(r->>'url') AS url
  FROM queryclaw.api_call(qc_test.url('/reflect/400')) AS r;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/reflect/400?page=1'))$$);

-- limits: the server's timeout
SELECT qc_test.create_server('fx_slow', '/slow', ', timeout ''200ms''');
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/slow?ms=2000'))$$);

-- its concurrency cap: one at a time, so three calls of 300 ms take 900
SELECT qc_test.try($$ALTER SERVER fx_slow OPTIONS (SET timeout '5s', ADD max_concurrency '1')$$);
SELECT clock_timestamp() AS started \gset
SELECT count(*) FILTER (WHERE status = 200) AS ok
  FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/slow?ms=300'), qc_test.url('/slow?ms=300'),
                                      qc_test.url('/slow?ms=300')]);
SELECT clock_timestamp() - :'started'::timestamptz >= interval '850 ms' AS one_at_a_time;
-- its rate limit: two a second, so the third of three calls waits for
-- its token; a token further off than the call may wait refuses it
SELECT qc_test.create_server('fx_rate', '/echo/rate', ', rate_limit ''2/s''');
SELECT clock_timestamp() AS started \gset
SELECT count(queryclaw.api_call(qc_test.url('/echo/rate/' || i))) FROM generate_series(1, 3) AS i;
SELECT clock_timestamp() - :'started'::timestamptz >= interval '400 ms' AS waited;
SELECT qc_test.create_server('fx_rate_min', '/echo/minute', ', rate_limit ''1/min'', timeout ''1s''');
SELECT queryclaw.api_call(qc_test.url('/echo/minute/1'))->'status' AS first;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/echo/minute/2'))$$);

-- the audit rows name the server; no key is stored anywhere in them
SELECT qc_test.audit_flush();
SELECT a.detail->>'server' AS server, count(*)
  FROM queryclaw.audit_log a GROUP BY 1 ORDER BY 1 NULLS FIRST;
SELECT k AS key, (SELECT count(*) FROM queryclaw.audit_log a WHERE a::text LIKE '%' || k || '%') AS rows
  FROM unnest(ARRAY['fxpublickey', 'fxetlkey', 'fxquerykey', 'fxredirkey', 'reflectkey']) AS k;

-- queryclaw.servers_only: only URLs under servers the role has USAGE on
SET queryclaw.servers_only = on;
GRANT EXECUTE ON FUNCTION queryclaw.check_url(text) TO qc_other, qc_etl;
SET ROLE qc_other;
SELECT qc_test.try($$SELECT queryclaw.api_call(qc_test.url('/echo/v1/x'))$$);
SELECT qc_test.try($$SELECT queryclaw.api_call('http://127.0.0.2/nowhere')$$);
-- check_url's dry run says what the call would meet, refusal and hint
SELECT qc_test.scrub(jsonb_pretty(queryclaw.check_url(u) - 'port')) AS check_url
  FROM unnest(ARRAY[qc_test.url('/echo/v1/x'), 'http://127.0.0.2/nowhere']) AS u;
RESET ROLE;
SET ROLE qc_etl;
SELECT queryclaw.check_url(qc_test.url('/echo/v1/x'))->'allowed' AS etl_may;
RESET ROLE;
SET ROLE qc_etl;
SELECT qc_test.sent(qc_test.url('/echo/v1/x'));
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
RESET ROLE;
-- which server a URL is under, shown without sending anything: the
-- refusal names the server (the role has no USAGE).  Hosts compare as the
-- policy maps them (case, IDNA); the scheme's port may be written or not;
-- userinfo is no part of the match; paths compare as the server reads
-- them (083_endpoints_hops has more)
CREATE SERVER qc_idna FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://bücher.example/v1');
CREATE SERVER qc_port FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com:8443/v1');
SET ROLE qc_other;
SELECT u AS url,
       split_part(qc_test.try(format('SELECT queryclaw.api_call(%L)', u)), E'\n', 1) AS refusal
  FROM unnest(ARRAY['https://xn--bcher-kva.example/v1/x', 'https://BÜCHER.Example/v1',
                    'https://bücher.example:443/v1/', 'http://bücher.example/v1',
                    'https://user:secretpw@bücher.example/v1/x', 'https://bücher.example/v1%2Fx',
                    'https://bücher.example/%76%31/x', 'https://api.example.com:8443/v1/x',
                    'https://api.example.com/v1/x']) AS u;
RESET ROLE;
DROP SERVER qc_idna, qc_port;
RESET queryclaw.servers_only;

-- dropping the role's own mapping falls back to PUBLIC's; a REVOKE
-- applies to the next call
DROP USER MAPPING FOR qc_etl SERVER fx;
SET ROLE qc_etl;
SELECT qc_test.sent(qc_test.url('/echo/v1/x'));
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER fx FROM qc_etl;
SET ROLE qc_etl;
SELECT qc_test.sent(qc_test.url('/echo/v1/x'));
RESET ROLE;
-- a dropped server sends nothing more
DROP SERVER fx CASCADE;
SELECT qc_test.sent(qc_test.url('/echo/v1/x'));

-- who can read a key: a role its own mapping's options; PUBLIC's only the
-- server's owner and superusers
CREATE USER MAPPING FOR qc_etl SERVER fx_root OPTIONS (headers '{"X-Srv": "etl"}');
GRANT USAGE ON FOREIGN SERVER fx_root TO qc_etl;
SET ROLE qc_etl;
SELECT srvname, usename, umoptions FROM pg_user_mappings ORDER BY 1, 2;
RESET ROLE;

DROP SERVER fx_root, fx_redir, fx_reflect, fx_slow, fx_rate, fx_rate_min CASCADE;
DROP FUNCTION qc_test.create_server(text, text, text), qc_test.sent(jsonb), qc_test.sent(text, jsonb);
DROP OWNED BY qc_etl, qc_other;
DROP ROLE qc_etl, qc_other;
