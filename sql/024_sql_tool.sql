--
-- The database as a read-only tool: queryclaw.sql_query() and the
-- sql_query, list_tables and describe_table tools of llm_chat_tools.  They
-- run as the calling role and cannot change anything by any path: the
-- refusals that need only a server are 024_sql_query_guard's (make
-- installcheck runs it); here, those that reach the fixture, a refusal and
-- time limits as the audit log shows them, what it returns, and the tools.
--
SELECT qc_test.audit_flush();
CREATE ROLE qc_reader;
CREATE ROLE qc_nosql;
GRANT USAGE ON SCHEMA qc_test TO qc_reader, qc_nosql;
GRANT EXECUTE ON FUNCTION queryclaw.sql_query(text) TO qc_reader;
GRANT EXECUTE ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
                          queryclaw.web_fetch(text, text, integer, text) TO qc_reader, qc_nosql;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE SCHEMA crm;
GRANT USAGE ON SCHEMA crm TO qc_reader;
CREATE TABLE crm.companies (id serial PRIMARY KEY, name text NOT NULL, url text, city text);
COMMENT ON TABLE crm.companies IS 'Companies we work with';
COMMENT ON COLUMN crm.companies.city IS 'Where the company is based';
INSERT INTO crm.companies (name, url, city) VALUES
    ('Fixture Widgets', qc_test.url('/about'), NULL),
    ('Known Ltd', qc_test.url('/hello'), 'Paris'),
    ('Ghost Corp', qc_test.url('/status/404'), NULL);
GRANT SELECT ON crm.companies TO qc_reader;
GRANT INSERT, UPDATE, DELETE ON crm.companies TO qc_reader;

-- without EXECUTE on sql_query(text), neither the function nor the tools
SET ROLE qc_nosql;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT 1')$$);
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:plain', tools => '{list_tables}')$$);
RESET ROLE;

-- the other ways to change something are refused in 024_sql_query_guard;
-- here an INSERT, although the role itself may insert (its audit row is
-- shown below), and dblink, an extension of contrib, which a server may lack
SET ROLE qc_reader;
SELECT stmt, qc_test.try(format('SELECT queryclaw.sql_query(%L)', stmt)) AS result
  FROM unnest(ARRAY[
    'INSERT INTO crm.companies (name) VALUES (''x'')',
    'SELECT * FROM dblink(''dbname=postgres'', ''SELECT 1'') AS t(x int)'
  ]) AS stmt;
-- a statement past queryclaw.sql_timeout is stopped (54000), not the caller
RESET ROLE;
SET queryclaw.sql_timeout = '200ms';
SET ROLE qc_reader;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT count(*) FROM (SELECT generate_series(1, 1000000000)) AS s')$$);
SELECT 'the caller goes on' AS after_timeout;
RESET ROLE;
RESET queryclaw.sql_timeout;
-- the caller's statement_timeout still stops the whole statement, at once
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop($$SELECT queryclaw.sql_query('SELECT count(*) FROM (SELECT generate_series(1, 1000000000)) AS s')$$);
RESET statement_timeout;

-- the finding itself: a CHECK constraint that sends a request, reached
-- through a cast and through an array literal; the fixture served nothing
CREATE FUNCTION crm.send_out(v int) RETURNS boolean LANGUAGE plpgsql
AS $$ BEGIN PERFORM queryclaw.web_fetch(qc_test.url('/hello')); RETURN true; END $$;
CREATE DOMAIN crm.leaky AS int CHECK (crm.send_out(VALUE));
SELECT qc_test.reset_requests();
SET ROLE qc_reader;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT 1::crm.leaky')$$);
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT ''{1}''::crm.leaky[]')$$);
RESET ROLE;
SELECT qc_test.requests_served() AS requests_sent;
-- our own network functions are refused inside sql_query however they are
-- reached: through a function declared STABLE, and even when a superuser
-- has marked web_fetch itself STABLE; the fixture served nothing, and the
-- session's own calls work afterwards
CREATE FUNCTION crm.stable_fetch() RETURNS text LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN queryclaw.web_fetch(qc_test.url('/hello')); END $$;
GRANT EXECUTE ON FUNCTION crm.stable_fetch() TO qc_reader;
SELECT qc_test.reset_requests();
SET ROLE qc_reader;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT crm.stable_fetch()')$$);
RESET ROLE;
ALTER FUNCTION queryclaw.web_fetch(text, text, integer, text) STABLE;
SET ROLE qc_reader;
SELECT qc_test.try(format('SELECT queryclaw.sql_query(%L)',
                          format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/hello'))));
RESET ROLE;
ALTER FUNCTION queryclaw.web_fetch(text, text, integer, text) VOLATILE;
SELECT qc_test.requests_served() AS requests_sent;
SET ROLE qc_reader;
SELECT length(crm.stable_fetch()) > 0 AS own_call;
RESET ROLE;
SELECT qc_test.requests_served() AS requests_sent;

-- what it returns: rows as JSON
SET ROLE qc_reader;
SELECT jsonb_pretty(queryclaw.sql_query('SELECT id, name, city FROM crm.companies ORDER BY id'));
RESET ROLE;

-- each run is audited: the tool's name, the statement redacted
SELECT queryclaw.sql_query($$SELECT 'https://user:pw@example.com/?api_key=abc' AS link$$)->'rows';
SELECT qc_test.audit_flush();
SELECT role, func, method, url, outcome, left(reason, 45) AS reason, detail->>'statement' AS statement,
       detail->'rows' AS rows
  FROM queryclaw.audit_log WHERE func = 'sql_query'
   AND (detail->>'statement' LIKE '%api_key%' OR detail->>'statement' LIKE 'INSERT%'
        OR detail->>'statement' LIKE '%generate_series(1, 1000000000)%'
        OR detail->>'statement' LIKE 'SELECT id, name, city%')
 ORDER BY id;

-- the loop: an agent reads its surroundings, then enriches the rows it
-- found itself
SET ROLE qc_reader;
SELECT qc_test.scrub(r->>'answer') AS answer,
       (SELECT jsonb_agg(c->>'name' || ': ' || (c->>'ok')) FROM jsonb_array_elements(r->'tool_calls') c) AS calls
  FROM queryclaw.llm_chat_tools('SCENARIO:sql_agent For every company without a city, find where it is based.',
                                tools => '{list_tables,describe_table,sql_query,web_fetch}') AS r;
-- what the tools told the model (its statements use the role's search_path)
SET search_path = crm, public;
SELECT queryclaw.llm_chat_tools('SCENARIO:sql_write', tools => '{sql_query}')->>'answer' AS answer;
RESET search_path;
RESET ROLE;

-- the UPDATE of the README, from the agent's answer
WITH r AS (
    SELECT (queryclaw.llm_chat_tools('SCENARIO:sql_agent For every company without a city, find where it is based.',
                                     tools => '{list_tables,describe_table,sql_query,web_fetch}')->>'answer')::jsonb AS answer)
UPDATE crm.companies c SET city = x.city
  FROM r, jsonb_to_recordset(r.answer->'companies') AS x(id int, city text)
 WHERE c.id = x.id AND x.city IS NOT NULL;
SELECT id, name, city FROM crm.companies ORDER BY id;

SELECT qc_test.audit_flush();
SELECT func, outcome, count(*) FROM queryclaw.audit_log
 WHERE func IN ('list_tables', 'describe_table') GROUP BY 1, 2 ORDER BY 1, 2;

DROP SCHEMA crm CASCADE;
DROP OWNED BY qc_reader, qc_nosql;
DROP ROLE qc_reader, qc_nosql;
