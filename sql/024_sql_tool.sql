--
-- The database as a read-only tool: queryclaw.sql_query() and the
-- sql_query, list_tables and describe_table tools of llm_chat_tools.  They
-- run as the calling role and cannot change anything by any path: each
-- refusal is shown first, then what they return.
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
CREATE TABLE crm.secrets (id int, secret text);
CREATE VIEW crm.next_ids AS SELECT nextval('crm.companies_id_seq') AS id;
CREATE FUNCTION crm.add_company() RETURNS int LANGUAGE sql VOLATILE
AS $$ INSERT INTO crm.companies (name) VALUES ('Sneaky') RETURNING id $$;
-- mislabelled: a stable function that calls one that writes
CREATE FUNCTION crm.stable_writer() RETURNS int LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN crm.add_company(); END $$;
GRANT SELECT ON crm.companies, crm.next_ids TO qc_reader;
GRANT USAGE ON SEQUENCE crm.companies_id_seq TO qc_reader;
GRANT INSERT, UPDATE, DELETE ON crm.companies TO qc_reader;
GRANT EXECUTE ON FUNCTION crm.add_company(), crm.stable_writer() TO qc_reader;
SELECT last_value AS seq_before FROM crm.companies_id_seq \gset

-- without EXECUTE on sql_query(text), neither the function nor the tools
SET ROLE qc_nosql;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT 1')$$);
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:plain', tools => '{list_tables}')$$);
RESET ROLE;

-- every way to change something is refused before the statement runs,
-- although the role itself may insert, update and delete
SET ROLE qc_reader;
SELECT stmt, qc_test.try(format('SELECT queryclaw.sql_query(%L)', stmt)) AS result
  FROM unnest(ARRAY[
    'INSERT INTO crm.companies (name) VALUES (''x'')',
    'UPDATE crm.companies SET city = ''x''',
    'SELECT 1; DELETE FROM crm.companies',
    '',
    'WITH gone AS (DELETE FROM crm.companies RETURNING id) SELECT * FROM gone',
    'SELECT * INTO crm.copy FROM crm.companies',
    'SELECT * FROM crm.companies FOR UPDATE',
    'SELECT * FROM (SELECT id FROM crm.companies FOR SHARE) s',
    'SELECT nextval(''crm.companies_id_seq'')',
    'SELECT * FROM crm.next_ids',
    'SELECT set_config(''work_mem'', ''1GB'', false)',
    'SELECT pg_advisory_lock(42)',
    'SELECT pg_try_advisory_xact_lock(42)',
    'SELECT pg_cancel_backend(pg_backend_pid())',
    'SELECT pg_terminate_backend(pg_backend_pid())',
    'SELECT pg_notify(''channel'', ''hello'')',
    'SELECT * FROM dblink(''dbname=postgres'', ''SELECT 1'') AS t(x int)',
    'SELECT queryclaw.web_fetch(''http://example.com/'')',
    'SELECT queryclaw.sql_query(''SELECT 1'')',
    'SELECT query_to_xml(''DELETE FROM crm.companies RETURNING id'', true, false, '''')',
    'SELECT txid_current()',
    'SELECT crm.add_company()',
    'SELECT id FROM crm.companies WHERE id = crm.add_company()',
    'EXPLAIN ANALYZE SELECT crm.add_company()',
    'SET work_mem = ''1GB''',
    'LOCK crm.companies'
  ]) AS stmt;
-- a mislabelled stable function is stopped by the read-only subtransaction
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT crm.stable_writer()')$$);
-- a statement past queryclaw.sql_timeout is stopped (54000), not the caller
RESET ROLE;
SET queryclaw.sql_timeout = '200ms';
SET ROLE qc_reader;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT count(*) FROM generate_series(1, 1000000000)')$$);
SELECT 'the caller goes on' AS after_timeout;
RESET ROLE;
RESET queryclaw.sql_timeout;
-- the caller's statement_timeout still stops the whole statement, at once
SET statement_timeout = '300ms';
SELECT qc_test.cancel_stop($$SELECT queryclaw.sql_query('SELECT count(*) FROM generate_series(1, 1000000000)')$$);
RESET statement_timeout;
-- the role's own privileges apply
SET ROLE qc_reader;
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT * FROM crm.secrets')$$);
RESET ROLE;

-- nothing changed: no row, no sequence step, no lock, settings as they were
SELECT count(*) AS companies, (SELECT last_value FROM crm.companies_id_seq) = :seq_before AS seq_unchanged,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory') AS advisory_locks,
       current_setting('work_mem') AS work_mem
  FROM crm.companies;

-- what it returns: rows as JSON, random() allowed, capped with a note
SET ROLE qc_reader;
SELECT jsonb_pretty(queryclaw.sql_query('SELECT id, name, city FROM crm.companies ORDER BY id'));
SELECT queryclaw.sql_query('SELECT random() < 2 AS ok, now() = now() AS stable')->'rows';
RESET ROLE;
SET queryclaw.sql_max_rows = 3;
SELECT queryclaw.sql_query('SELECT g FROM generate_series(1, 10) g') AS capped_rows;
RESET queryclaw.sql_max_rows;
SET queryclaw.max_chars = 100;
SELECT queryclaw.sql_query('SELECT repeat(''x'', 20) AS x FROM generate_series(1, 10)') AS capped_chars;
RESET queryclaw.max_chars;

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
