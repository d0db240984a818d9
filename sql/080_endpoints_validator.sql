--
-- Endpoints: the wrapper, and what its validator refuses in a foreign
-- server's or a user mapping's options.  Needs only a server: make
-- installcheck runs this (080_endpoints has what a call carries).
--
SELECT w.fdwname, w.fdwhandler = 0 AS no_handler, w.fdwvalidator::regproc AS validator,
       d.deptype AS member_of_extension
  FROM pg_foreign_data_wrapper w
  JOIN pg_depend d ON d.classid = 'pg_foreign_data_wrapper'::regclass AND d.objid = w.oid
                  AND d.refclassid = 'pg_extension'::regclass
 WHERE w.fdwname = 'queryclaw';

-- a server needs a url: an http or https base URL, no credentials, no query
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (rate_limit '1/s')$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'api.example.com')$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'ftp://api.example.com/')$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://bot:hunter2@api.example.com/')$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/v1?key=abc')$$);
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/v1#top')$$);
-- unknown options, and bad values of the others
SELECT qc_test.try($$CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/', colour 'blue')$$);
SELECT v AS rate_limit,
       qc_test.try(format('CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, rate_limit %L)',
                          'https://api.example.com/', v)) AS outcome
  FROM unnest(ARRAY['10', '10/h', '0/s', '-1/s', 'x/s', ' 10/s', '10/s ']) AS v;
SELECT o AS option, v AS value,
       qc_test.try(format('CREATE SERVER s FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L, %I %L)',
                          'https://api.example.com/', o, v)) AS outcome
  FROM (VALUES ('max_concurrency', '0'), ('max_concurrency', '257'), ('max_concurrency', 'many'),
               ('timeout', '0'), ('timeout', 'soon'), ('timeout', '-5s'),
               ('retry_max', '-1'), ('retry_max', '101'), ('retry_max', '2.5')) AS t(o, v);

-- every option at once; ALTER is checked on what the server will have
CREATE SERVER qc_ex FOREIGN DATA WRAPPER queryclaw
  OPTIONS (url 'https://api.example.com/v1/', rate_limit '30/min', max_concurrency '4',
           timeout '20s', retry_max '2');
SELECT qc_test.try($$ALTER SERVER qc_ex OPTIONS (DROP url)$$);
SELECT qc_test.try($$ALTER SERVER qc_ex OPTIONS (SET rate_limit 'fast')$$);
SELECT qc_test.try($$ALTER SERVER qc_ex OPTIONS (SET url 'https://api.example.com/v2')$$);
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname = 'qc_ex';

-- a user mapping has headers (a JSON object of strings) and query
-- parameters; no error quotes a value (it is a key)
SELECT qc_test.try($$CREATE USER MAPPING FOR PUBLIC SERVER qc_ex OPTIONS (password 'hunter2')$$);
SELECT v AS headers,
       qc_test.try(format('CREATE USER MAPPING FOR PUBLIC SERVER qc_ex OPTIONS (headers %L)', v)) AS outcome
  FROM unnest(ARRAY['Bearer abc', '["Authorization"]', '{"X-Count": 3}', '{"Bad Name": "x"}',
                    '{"Host": "evil.example"}', '{"X-Api-Key": "abc\r\nX-Injected: 1"}']) AS v;
SELECT v AS query,
       qc_test.try(format('CREATE USER MAPPING FOR PUBLIC SERVER qc_ex OPTIONS (query %L)', v)) AS outcome
  FROM unnest(ARRAY['', '?key=abc', '&key=abc', 'key=a b', 'key=abc#frag']) AS v;
CREATE USER MAPPING FOR PUBLIC SERVER qc_ex
  OPTIONS (headers '{"Authorization": "Bearer abc"}', query 'key=abc');
SELECT qc_test.try($$ALTER USER MAPPING FOR PUBLIC SERVER qc_ex OPTIONS (SET headers '{')$$);
-- the wrapper itself, and foreign tables, take no options
SELECT qc_test.try($$ALTER FOREIGN DATA WRAPPER queryclaw OPTIONS (ADD url 'https://api.example.com/')$$);
SELECT qc_test.try($$CREATE FOREIGN TABLE qc_ft (a int) SERVER qc_ex OPTIONS (path '/x')$$);
DROP SERVER qc_ex CASCADE;

-- two servers of the wrapper may not have the same url (42710), compared
-- as calls are matched: host as mapped, default port, trailing '/', the
-- path as the server reads it.  At CREATE SERVER and at ALTER SERVER; a
-- server altered keeps its own url.
CREATE SERVER qc_u1 FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/v1');
SELECT u AS url,
       qc_test.try(format('CREATE SERVER %I FOREIGN DATA WRAPPER queryclaw OPTIONS (url %L)',
                          'qc_u1_' || n, u)) AS outcome
  FROM unnest(ARRAY['https://api.example.com/v1', 'https://API.Example.com:443/v1/',
                    'https://api.example.com/%76%31', 'https://api.example.com/x/../v1',
                    'http://api.example.com/v1', 'https://api.example.com/v1/x',
                    'https://api.example.com/V1']) WITH ORDINALITY AS t(u, n);
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname LIKE 'qc\_u%' ORDER BY 1;
SELECT qc_test.try($$ALTER SERVER qc_u1_5 OPTIONS (SET url 'https://api.example.com:443/v1')$$);
SELECT qc_test.try($$ALTER SERVER qc_u1 OPTIONS (ADD timeout '5s')$$);
SELECT qc_test.try($$ALTER SERVER qc_u1 OPTIONS (SET url 'https://api.example.com/v1/')$$);
SELECT qc_test.try($$ALTER SERVER qc_u1 RENAME TO qc_u0$$);
-- within one transaction too
BEGIN;
CREATE SERVER qc_u8 FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/v8');
SELECT qc_test.try($$CREATE SERVER qc_u9 FOREIGN DATA WRAPPER queryclaw OPTIONS (url 'https://api.example.com/v8/')$$);
ROLLBACK;
-- another wrapper's servers are not the queryclaw wrapper's business
CREATE FOREIGN DATA WRAPPER qc_other_fdw;
CREATE SERVER qc_u_other FOREIGN DATA WRAPPER qc_other_fdw OPTIONS (url 'https://api.example.com/v1');
DROP FOREIGN DATA WRAPPER qc_other_fdw CASCADE;
DROP SERVER qc_u0, qc_u1_5, qc_u1_6, qc_u1_7;
