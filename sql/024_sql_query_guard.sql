--
-- sql_query's guard: every statement that could change something is
-- refused, however the change would be reached, and what it allows.  Needs
-- only a server: make installcheck runs this (024_sql_tool has what needs
-- the fixture, the audit worker or the model).  Nothing here makes a call:
-- queryclaw.enabled is off in this session, so even a guard that failed
-- could send nothing; sql_query's settings are set to their defaults,
-- whatever the server's configuration says.
--
SET queryclaw.enabled = off;
SET queryclaw.sql_timeout = '5s';
SET queryclaw.sql_max_rows = 100;
SET queryclaw.max_chars = 50000;
CREATE ROLE regress_qc_sqlq_reader;
GRANT USAGE ON SCHEMA qc_test TO regress_qc_sqlq_reader;
GRANT EXECUTE ON FUNCTION queryclaw.sql_query(text),
                          queryclaw.web_fetch(text, text, integer, text) TO regress_qc_sqlq_reader;
CREATE SCHEMA sqlq;
GRANT USAGE ON SCHEMA sqlq TO regress_qc_sqlq_reader;
CREATE TABLE sqlq.items (id serial PRIMARY KEY, name text NOT NULL, city text);
INSERT INTO sqlq.items (name, city) VALUES ('Widgets', NULL), ('Known', 'Paris'), ('Ghost', NULL);
CREATE TABLE sqlq.secrets (id int, secret text);
CREATE VIEW sqlq.next_ids AS SELECT nextval('sqlq.items_id_seq') AS id;
CREATE FUNCTION sqlq.add_item() RETURNS int LANGUAGE sql VOLATILE
AS $$ INSERT INTO sqlq.items (name) VALUES ('Sneaky') RETURNING id $$;
-- mislabelled: a stable function that calls one that writes
CREATE FUNCTION sqlq.stable_writer() RETURNS int LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN sqlq.add_item(); END $$;
GRANT SELECT ON sqlq.items, sqlq.next_ids TO regress_qc_sqlq_reader;
GRANT USAGE ON SEQUENCE sqlq.items_id_seq TO regress_qc_sqlq_reader;
GRANT INSERT, UPDATE, DELETE ON sqlq.items TO regress_qc_sqlq_reader;
GRANT EXECUTE ON FUNCTION sqlq.add_item(), sqlq.stable_writer() TO regress_qc_sqlq_reader;
SELECT last_value AS seq_before FROM sqlq.items_id_seq \gset
SELECT current_setting('work_mem') AS work_mem_before \gset

-- every way to change something is refused before the statement runs,
-- although the role itself may insert, update and delete (an INSERT, whose
-- refusal is audited, and dblink, an extension of contrib: 024_sql_tool)
SET ROLE regress_qc_sqlq_reader;
SELECT stmt, qc_test.try(format('SELECT queryclaw.sql_query(%L)', stmt)) AS result
  FROM unnest(ARRAY[
    'UPDATE sqlq.items SET city = ''x''',
    'SELECT 1; DELETE FROM sqlq.items',
    '',
    'WITH gone AS (DELETE FROM sqlq.items RETURNING id) SELECT * FROM gone',
    'SELECT * INTO sqlq.copy FROM sqlq.items',
    'SELECT * FROM sqlq.items FOR UPDATE',
    'SELECT * FROM (SELECT id FROM sqlq.items FOR SHARE) s',
    'SELECT nextval(''sqlq.items_id_seq'')',
    'SELECT * FROM sqlq.next_ids',
    'SELECT set_config(''work_mem'', ''1GB'', false)',
    'SELECT pg_advisory_lock(42)',
    'SELECT pg_try_advisory_xact_lock(42)',
    'SELECT pg_cancel_backend(pg_backend_pid())',
    'SELECT pg_terminate_backend(pg_backend_pid())',
    'SELECT pg_notify(''channel'', ''hello'')',
    'SELECT queryclaw.web_fetch(''http://example.com/'')',
    'SELECT queryclaw.sql_query(''SELECT 1'')',
    'SELECT query_to_xml(''DELETE FROM sqlq.items RETURNING id'', true, false, '''')',
    'SELECT txid_current()',
    'SELECT sqlq.add_item()',
    'SELECT id FROM sqlq.items WHERE id = sqlq.add_item()',
    'EXPLAIN ANALYZE SELECT sqlq.add_item()',
    'SET work_mem = ''1GB''',
    'LOCK sqlq.items'
  ]) AS stmt;
-- a mislabelled stable function is stopped as it calls one that writes
-- (the read-only subtransaction would stop the write itself)
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT sqlq.stable_writer()')$$);
-- the role's own privileges apply
SELECT qc_test.try($$SELECT queryclaw.sql_query('SELECT * FROM sqlq.secrets')$$);
RESET ROLE;

-- Not only the functions a statement names: what the executor runs for it
-- is checked too (aggregates' support functions, domains' CHECK
-- constraints, row security policies, the functions of the types and
-- operators it uses).  Each payload below takes a session advisory lock,
-- which the rolled-back subtransaction does not release: sqlq.attempt()
-- shows a statement's outcome, then the advisory locks this session holds
-- (and releases them), so a payload that ran shows as 1.
CREATE FUNCTION sqlq.attempt(stmt text, OUT result text, OUT advisory_locks bigint)
LANGUAGE plpgsql AS $$
BEGIN
    result := qc_test.try(format('SELECT queryclaw.sql_query(%L)', stmt));
    SELECT count(*) INTO advisory_locks FROM pg_locks
     WHERE locktype = 'advisory' AND pid = pg_backend_pid();
    PERFORM pg_advisory_unlock_all();
END $$;
CREATE FUNCTION sqlq.lock_step(state int, v int) RETURNS int LANGUAGE plpgsql STRICT
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN state + v; END $$;
CREATE FUNCTION sqlq.lock_final(state int) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN state; END $$;
CREATE FUNCTION sqlq.lock_check(v int) RETURNS boolean LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN true; END $$;
CREATE FUNCTION sqlq.pick_final(state int, fraction float8) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT state $$;
-- aggregates (CREATE AGGREGATE marks them immutable, whatever they run)
CREATE AGGREGATE sqlq.lock_sum(int) (SFUNC = sqlq.lock_step, STYPE = int);
CREATE AGGREGATE sqlq.final_sum(int) (SFUNC = int4pl, STYPE = int, FINALFUNC = sqlq.lock_final);
CREATE AGGREGATE sqlq.moving_sum(int) (SFUNC = int4pl, STYPE = int,
    MSFUNC = sqlq.lock_step, MINVFUNC = int4mi, MSTYPE = int);
CREATE AGGREGATE sqlq.lock_pick(float8 ORDER BY int) (SFUNC = sqlq.lock_step, STYPE = int,
    INITCOND = '0', FINALFUNC = sqlq.pick_final);
CREATE VIEW sqlq.sums AS SELECT sqlq.lock_sum(id) AS total FROM sqlq.items;
-- domains, a domain over a domain, and containers of a domain (whose
-- literals are read, and so checked, while the statement is parsed)
CREATE DOMAIN sqlq.checked AS int CHECK (sqlq.lock_check(VALUE));
CREATE DOMAIN sqlq.checked_twice AS sqlq.checked CHECK (VALUE > 0);
CREATE TYPE sqlq.wrapped AS (id sqlq.checked);
CREATE VIEW sqlq.checked_ids AS SELECT id::sqlq.checked AS id FROM sqlq.items;
CREATE TABLE sqlq.checked_table (id sqlq.checked, ids sqlq.checked[]);
-- a row security policy (the reader does not own the table, so it applies)
CREATE TABLE sqlq.notes (id int, note text);
INSERT INTO sqlq.notes VALUES (1, 'a note');
ALTER TABLE sqlq.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY notes_lock ON sqlq.notes USING (sqlq.lock_check(id));
GRANT SELECT ON sqlq.sums, sqlq.checked_ids, sqlq.checked_table, sqlq.notes TO regress_qc_sqlq_reader;
-- an operator whose btree operator class compares with a volatile function
CREATE FUNCTION sqlq.lock_cmp(a int, b int) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN btint4cmp(a, b); END $$;
CREATE OPERATOR sqlq.<<< (LEFTARG = int, RIGHTARG = int, FUNCTION = int4lt);
CREATE OPERATOR sqlq.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
CREATE OPERATOR CLASS sqlq.locking_ops FOR TYPE int USING btree AS
    OPERATOR 1 sqlq.<<<, OPERATOR 3 sqlq.===, FUNCTION 1 sqlq.lock_cmp(int, int);
-- a type whose default btree operator class does (GREATEST and ORDER BY use it)
CREATE TYPE sqlq.level AS ENUM ('low', 'high');
CREATE FUNCTION sqlq.level_cmp(a sqlq.level, b sqlq.level) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN enum_cmp(a, b); END $$;
CREATE FUNCTION sqlq.level_lt(a sqlq.level, b sqlq.level) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_lt(a, b) $$;
CREATE FUNCTION sqlq.level_eq(a sqlq.level, b sqlq.level) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_eq(a, b) $$;
CREATE OPERATOR sqlq.< (LEFTARG = sqlq.level, RIGHTARG = sqlq.level, FUNCTION = sqlq.level_lt);
CREATE OPERATOR sqlq.= (LEFTARG = sqlq.level, RIGHTARG = sqlq.level, FUNCTION = sqlq.level_eq);
CREATE OPERATOR CLASS sqlq.level_ops DEFAULT FOR TYPE sqlq.level USING btree AS
    OPERATOR 1 sqlq.<, OPERATOR 3 sqlq.=, FUNCTION 1 sqlq.level_cmp(sqlq.level, sqlq.level);
-- a type whose cast to json, which row_to_json uses for the result, does
CREATE TYPE sqlq.mood AS ENUM ('calm');
CREATE FUNCTION sqlq.mood_json(m sqlq.mood) RETURNS json LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN to_json(m::text); END $$;
CREATE CAST (sqlq.mood AS json) WITH FUNCTION sqlq.mood_json(sqlq.mood);
SET ROLE regress_qc_sqlq_reader;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT sqlq.lock_sum(id) FROM sqlq.items',
    'SELECT sqlq.lock_sum(id) OVER () FROM sqlq.items',
    'SELECT sqlq.moving_sum(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM sqlq.items',
    'SELECT sqlq.lock_pick(0.5) WITHIN GROUP (ORDER BY id) FROM sqlq.items',
    'SELECT sqlq.final_sum(id) FROM sqlq.items',
    'SELECT * FROM sqlq.sums',
    'WITH s AS (SELECT sqlq.lock_sum(id) FROM sqlq.items) SELECT * FROM s',
    'SELECT 1::sqlq.checked',
    'SELECT id FROM sqlq.items WHERE id::sqlq.checked > 0',
    'SELECT 1::sqlq.checked_twice',
    'SELECT * FROM sqlq.checked_ids',
    'SELECT * FROM jsonb_to_record(''{"a": 1}'') AS x(a sqlq.checked)',
    'SELECT ROW(1)::sqlq.wrapped',
    'SELECT ''(1)''::sqlq.wrapped',
    'SELECT ''{1}''::sqlq.checked[]',
    'SELECT count(*) FROM sqlq.checked_table WHERE ids = ''{1}''',
    'SELECT * FROM sqlq.notes',
    'SELECT id FROM sqlq.items ORDER BY id USING OPERATOR(sqlq.<<<)',
    'SELECT ROW(1, 2) OPERATOR(sqlq.<<<) ROW(3, 4)',
    'SELECT greatest(''low''::sqlq.level, ''high'')',
    'SELECT x FROM (VALUES (''high''::sqlq.level), (''low'')) v(x) ORDER BY x',
    'SELECT ''calm''::sqlq.mood'
  ]) AS stmt, sqlq.attempt(stmt) AS a;
-- reading a column of such a domain runs no check, but it is refused all
-- the same: a domain is refused wherever the statement uses it, since
-- casts and functions such as jsonb_populate_record check its values
SELECT * FROM sqlq.attempt('SELECT id FROM sqlq.checked_table');
RESET ROLE;
-- a type whose default hash operator class hashes with a volatile
-- function, which a hashed GROUP BY, DISTINCT or UNION runs (sorting is
-- made dear here so that the planner hashes)
CREATE TYPE sqlq.tag AS ENUM ('a', 'b');
CREATE FUNCTION sqlq.tag_hash(t sqlq.tag) RETURNS int LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_advisory_lock(4242); RETURN hashenum(t); END $$;
CREATE FUNCTION sqlq.tag_cmp(a sqlq.tag, b sqlq.tag) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_cmp(a, b) $$;
CREATE FUNCTION sqlq.tag_lt(a sqlq.tag, b sqlq.tag) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_lt(a, b) $$;
CREATE FUNCTION sqlq.tag_eq(a sqlq.tag, b sqlq.tag) RETURNS boolean LANGUAGE sql IMMUTABLE
AS $$ SELECT enum_eq(a, b) $$;
CREATE OPERATOR sqlq.< (LEFTARG = sqlq.tag, RIGHTARG = sqlq.tag, FUNCTION = sqlq.tag_lt);
CREATE OPERATOR sqlq.= (LEFTARG = sqlq.tag, RIGHTARG = sqlq.tag, FUNCTION = sqlq.tag_eq, HASHES);
-- its btree class runs nothing volatile; its hash class does
CREATE OPERATOR CLASS sqlq.tag_btree_ops DEFAULT FOR TYPE sqlq.tag USING btree AS
    OPERATOR 1 sqlq.<, OPERATOR 3 sqlq.=, FUNCTION 1 sqlq.tag_cmp(sqlq.tag, sqlq.tag);
CREATE OPERATOR CLASS sqlq.tag_hash_ops DEFAULT FOR TYPE sqlq.tag USING hash AS
    OPERATOR 1 sqlq.=, FUNCTION 1 sqlq.tag_hash(sqlq.tag);
SET ROLE regress_qc_sqlq_reader;
SET enable_sort = off;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT x, count(*) FROM (VALUES (''a''::sqlq.tag), (''b''), (''a'')) v(x) GROUP BY x',
    'SELECT DISTINCT x FROM (VALUES (''a''::sqlq.tag), (''b''), (''a'')) v(x)',
    'SELECT ''a''::sqlq.tag UNION SELECT ''b''::sqlq.tag'
  ]) AS stmt, sqlq.attempt(stmt) AS a;
RESET enable_sort;
RESET ROLE;
-- a function declared STABLE that takes a session advisory lock (which
-- the rolled-back subtransaction would keep); and a CHECK that calls a
-- volatile built-in function (called without the function hook), reached
-- through an array literal read while the statement is parsed: named by a
-- cast, or coerced to a column's type with no type named
CREATE DOMAIN sqlq.builtin_lock AS int CHECK (pg_try_advisory_lock(VALUE::bigint));
CREATE TABLE sqlq.lock_table (ids sqlq.builtin_lock[]);
CREATE FUNCTION sqlq.stable_lock() RETURNS boolean LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN pg_try_advisory_lock(4242); END $$;
GRANT SELECT ON sqlq.lock_table TO regress_qc_sqlq_reader;
SET ROLE regress_qc_sqlq_reader;
SELECT stmt, a.result, a.advisory_locks
  FROM unnest(ARRAY[
    'SELECT sqlq.stable_lock()',
    'SELECT ''{4242}''::sqlq.builtin_lock[]',
    'SELECT count(*) FROM sqlq.lock_table WHERE ids = ''{4242}'''
  ]) AS stmt, sqlq.attempt(stmt) AS a;
RESET ROLE;
-- a refusal while parsing (the last two) leaves the session's own calls
-- alone afterwards
SELECT sqlq.lock_check(1) AS own_call, pg_advisory_unlock(4242) AS unlocked;
-- the limit (docs/security.md): the same function called earlier in the
-- transaction, outside sql_query, has its expression made ready already,
-- and sql_query's guard does not see it again: the lock is taken
SET ROLE regress_qc_sqlq_reader;
BEGIN;
SELECT sqlq.stable_lock() AS own_call, pg_advisory_unlock_all();
SELECT * FROM sqlq.attempt('SELECT sqlq.stable_lock()');
COMMIT;
RESET ROLE;

-- nothing changed: no row, no sequence step, no lock, settings as they were
SELECT count(*) AS items, (SELECT last_value FROM sqlq.items_id_seq) = :seq_before AS seq_unchanged,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory_locks,
       current_setting('work_mem') = :'work_mem_before' AS work_mem_unchanged
  FROM sqlq.items;

-- what it allows: volatile functions that change nothing, such as
-- random(); and its results are capped, with a note
SET ROLE regress_qc_sqlq_reader;
SELECT queryclaw.sql_query('SELECT random() < 2 AS ok, now() = now() AS stable')->'rows';
RESET ROLE;
SET queryclaw.sql_max_rows = 3;
SELECT queryclaw.sql_query('SELECT g FROM generate_series(1, 10) g') AS capped_rows;
SET queryclaw.sql_max_rows = 100;
SET queryclaw.max_chars = 100;
SELECT queryclaw.sql_query('SELECT repeat(''x'', 20) AS x FROM generate_series(1, 10)') AS capped_chars;
SET queryclaw.max_chars = 50000;

SET client_min_messages = warning;
DROP SCHEMA sqlq CASCADE;
RESET client_min_messages;
DROP OWNED BY regress_qc_sqlq_reader;
DROP ROLE regress_qc_sqlq_reader;
