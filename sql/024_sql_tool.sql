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
-- a mislabelled stable function is stopped as it calls one that writes
-- (the read-only subtransaction would stop the write itself)
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

-- Not only the functions a statement names: what the executor runs for it
-- is checked too (aggregates' support functions, domains' CHECK
-- constraints, row security policies, the functions of the types and
-- operators it uses).  Each payload below takes a session advisory lock,
-- which the rolled-back subtransaction does not release: crm.attempt()
-- shows a statement's outcome, then the advisory locks this session holds
-- (and releases them), so a payload that ran shows as 1.
CREATE FUNCTION crm.attempt(stmt text, OUT result text, OUT advisory_locks bigint)
LANGUAGE plpgsql AS $$
BEGIN
    result := qc_test.try(format('SELECT queryclaw.sql_query(%L)', stmt));
    SELECT count(*) INTO advisory_locks FROM pg_locks
     WHERE locktype = 'advisory' AND pid = pg_backend_pid();
    PERFORM pg_advisory_unlock_all();
END $$;
CREATE FUNCTION crm.lock_step(state int, v int) RETURNS int LANGUAGE plpgsql STRICT
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN state + v; END $$;
CREATE FUNCTION crm.lock_final(state int) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN state; END $$;
CREATE FUNCTION crm.lock_check(v int) RETURNS boolean LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN true; END $$;
CREATE FUNCTION crm.pick_final(state int, fraction float8) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT state $$;
-- aggregates (CREATE AGGREGATE marks them immutable, whatever they run)
CREATE AGGREGATE crm.lock_sum(int) (SFUNC = crm.lock_step, STYPE = int);
CREATE AGGREGATE crm.final_sum(int) (SFUNC = int4pl, STYPE = int, FINALFUNC = crm.lock_final);
CREATE AGGREGATE crm.moving_sum(int) (SFUNC = int4pl, STYPE = int,
    MSFUNC = crm.lock_step, MINVFUNC = int4mi, MSTYPE = int);
CREATE AGGREGATE crm.lock_pick(float8 ORDER BY int) (SFUNC = crm.lock_step, STYPE = int,
    INITCOND = '0', FINALFUNC = crm.pick_final);
CREATE VIEW crm.sums AS SELECT crm.lock_sum(id) AS total FROM crm.companies;
-- domains, a domain over a domain, and containers of a domain (whose
-- literals are read, and so checked, while the statement is parsed)
CREATE DOMAIN crm.checked AS int CHECK (crm.lock_check(VALUE));
CREATE DOMAIN crm.checked_twice AS crm.checked CHECK (VALUE > 0);
CREATE TYPE crm.wrapped AS (id crm.checked);
CREATE VIEW crm.checked_ids AS SELECT id::crm.checked AS id FROM crm.companies;
CREATE TABLE crm.checked_table (id crm.checked, ids crm.checked[]);
-- a row security policy (the reader does not own the table, so it applies)
CREATE TABLE crm.notes (id int, note text);
INSERT INTO crm.notes VALUES (1, 'a note');
ALTER TABLE crm.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY notes_lock ON crm.notes USING (crm.lock_check(id));
GRANT SELECT ON crm.sums, crm.checked_ids, crm.checked_table, crm.notes TO qc_reader;
-- an operator whose btree operator class compares with a volatile function
CREATE FUNCTION crm.lock_cmp(a int, b int) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN btint4cmp(a, b); END $$;
CREATE OPERATOR crm.<<< (LEFTARG = int, RIGHTARG = int, FUNCTION = int4lt);
CREATE OPERATOR crm.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
CREATE OPERATOR CLASS crm.locking_ops FOR TYPE int USING btree AS
    OPERATOR 1 crm.<<<, OPERATOR 3 crm.===, FUNCTION 1 crm.lock_cmp(int, int);
-- a type whose default btree operator class does (GREATEST and ORDER BY use it)
CREATE TYPE crm.level AS ENUM ('low', 'high');
CREATE FUNCTION crm.level_cmp(a crm.level, b crm.level) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN enum_cmp(a, b); END $$;
CREATE FUNCTION crm.level_lt(a crm.level, b crm.level) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_lt(a, b) $$;
CREATE FUNCTION crm.level_eq(a crm.level, b crm.level) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_eq(a, b) $$;
CREATE OPERATOR crm.< (LEFTARG = crm.level, RIGHTARG = crm.level, FUNCTION = crm.level_lt);
CREATE OPERATOR crm.= (LEFTARG = crm.level, RIGHTARG = crm.level, FUNCTION = crm.level_eq);
CREATE OPERATOR CLASS crm.level_ops DEFAULT FOR TYPE crm.level USING btree AS
    OPERATOR 1 crm.<, OPERATOR 3 crm.=, FUNCTION 1 crm.level_cmp(crm.level, crm.level);
-- a type whose cast to json, which row_to_json uses for the result, does
CREATE TYPE crm.mood AS ENUM ('calm');
CREATE FUNCTION crm.mood_json(m crm.mood) RETURNS json LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN to_json(m::text); END $$;
CREATE CAST (crm.mood AS json) WITH FUNCTION crm.mood_json(crm.mood);
SET ROLE qc_reader;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT crm.lock_sum(id) FROM crm.companies',
    'SELECT crm.lock_sum(id) OVER () FROM crm.companies',
    'SELECT crm.moving_sum(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM crm.companies',
    'SELECT crm.lock_pick(0.5) WITHIN GROUP (ORDER BY id) FROM crm.companies',
    'SELECT crm.final_sum(id) FROM crm.companies',
    'SELECT * FROM crm.sums',
    'WITH s AS (SELECT crm.lock_sum(id) FROM crm.companies) SELECT * FROM s',
    'SELECT 1::crm.checked',
    'SELECT id FROM crm.companies WHERE id::crm.checked > 0',
    'SELECT 1::crm.checked_twice',
    'SELECT * FROM crm.checked_ids',
    'SELECT * FROM jsonb_to_record(''{"a": 1}'') AS x(a crm.checked)',
    'SELECT ROW(1)::crm.wrapped',
    'SELECT ''(1)''::crm.wrapped',
    'SELECT ''{1}''::crm.checked[]',
    'SELECT count(*) FROM crm.checked_table WHERE ids = ''{1}''',
    'SELECT * FROM crm.notes',
    'SELECT id FROM crm.companies ORDER BY id USING OPERATOR(crm.<<<)',
    'SELECT ROW(1, 2) OPERATOR(crm.<<<) ROW(3, 4)',
    'SELECT greatest(''low''::crm.level, ''high'')',
    'SELECT x FROM (VALUES (''high''::crm.level), (''low'')) v(x) ORDER BY x',
    'SELECT ''calm''::crm.mood'
  ]) AS stmt, crm.attempt(stmt) AS a;
-- reading a column of such a domain runs no check, but it is refused all
-- the same: a domain is refused wherever the statement uses it, since
-- casts and functions such as jsonb_populate_record check its values
SELECT * FROM crm.attempt('SELECT id FROM crm.checked_table');
RESET ROLE;
-- a type whose default hash operator class hashes with a volatile
-- function, which a hashed GROUP BY, DISTINCT or UNION runs (sorting is
-- made dear here so that the planner hashes)
CREATE TYPE crm.tag AS ENUM ('a', 'b');
CREATE FUNCTION crm.tag_hash(t crm.tag) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN hashenum(t); END $$;
CREATE FUNCTION crm.tag_cmp(a crm.tag, b crm.tag) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_cmp(a, b) $$;
CREATE FUNCTION crm.tag_lt(a crm.tag, b crm.tag) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_lt(a, b) $$;
CREATE FUNCTION crm.tag_eq(a crm.tag, b crm.tag) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_eq(a, b) $$;
CREATE OPERATOR crm.< (LEFTARG = crm.tag, RIGHTARG = crm.tag, FUNCTION = crm.tag_lt);
CREATE OPERATOR crm.= (LEFTARG = crm.tag, RIGHTARG = crm.tag, FUNCTION = crm.tag_eq, HASHES);
-- its btree class runs nothing volatile; its hash class does
CREATE OPERATOR CLASS crm.tag_btree_ops DEFAULT FOR TYPE crm.tag USING btree AS
    OPERATOR 1 crm.<, OPERATOR 3 crm.=, FUNCTION 1 crm.tag_cmp(crm.tag, crm.tag);
CREATE OPERATOR CLASS crm.tag_hash_ops DEFAULT FOR TYPE crm.tag USING hash AS
    OPERATOR 1 crm.=, FUNCTION 1 crm.tag_hash(crm.tag);
SET ROLE qc_reader;
SET enable_sort = off;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT x, count(*) FROM (VALUES (''a''::crm.tag), (''b''), (''a'')) v(x) GROUP BY x',
    'SELECT DISTINCT x FROM (VALUES (''a''::crm.tag), (''b''), (''a'')) v(x)',
    'SELECT ''a''::crm.tag UNION SELECT ''b''::crm.tag'
  ]) AS stmt, crm.attempt(stmt) AS a;
RESET enable_sort;
RESET ROLE;
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
-- a refusal while parsing leaves the session's own calls alone afterwards
SELECT crm.lock_check(1) AS own_call, pg_advisory_unlock(4242) AS unlocked;
-- a CHECK that calls a volatile built-in function (called without the
-- function hook), reached through an array literal read while the
-- statement is parsed: named by a cast, or coerced to a column's type with
-- no type named; and a function declared STABLE that takes a session
-- advisory lock (which the rolled-back subtransaction would keep)
CREATE DOMAIN crm.builtin_lock AS int CHECK (pg_try_advisory_lock(VALUE::bigint));
CREATE TABLE crm.lock_table (ids crm.builtin_lock[]);
CREATE FUNCTION crm.stable_lock() RETURNS boolean LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN pg_try_advisory_lock(4242); END $$;
GRANT SELECT ON crm.lock_table TO qc_reader;
SET ROLE qc_reader;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT ''{4242}''::crm.builtin_lock[]',
    'SELECT count(*) FROM crm.lock_table WHERE ids = ''{4242}''',
    'SELECT crm.stable_lock()'
  ]) AS stmt, crm.attempt(stmt) AS a;
-- the limit (docs/security.md): the same function called earlier in the
-- transaction, outside sql_query, has its expression made ready already,
-- and sql_query's guard does not see it again: the lock is taken
BEGIN;
SELECT crm.stable_lock() AS own_call, pg_advisory_unlock_all();
SELECT * FROM crm.attempt('SELECT crm.stable_lock()');
COMMIT;
RESET ROLE;
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
