--
-- Many requests queued in one transaction or one statement.  The enqueue
-- writes its rows without a statement of its own, keeping the table open
-- from one request to the next of the transaction (src/queue/qinsert.c):
-- what it keeps must never stand in for a check made for each request,
-- nor outlive what it was read from.  Each part below would fail if it
-- did.
--
-- The requests stay queued: queryclaw.enabled is off for the roles.
--
CREATE ROLE qc_many_alice;
CREATE ROLE qc_many_bob;
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['qc_many_alice', 'qc_many_bob'] LOOP
        EXECUTE format('ALTER ROLE %I SET queryclaw.enabled = off', r);
        EXECUTE format('GRANT USAGE ON SCHEMA qc_test TO %I', r);
        EXECUTE format('GRANT EXECUTE ON FUNCTION
                        queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
                        TO %I', r);
    END LOOP;
END
$$;
CREATE SCHEMA qc_many;
GRANT USAGE ON SCHEMA qc_many TO PUBLIC;
CREATE PROCEDURE qc_many.done(id bigint, result jsonb, error text, context jsonb)
LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
REVOKE ALL ON PROCEDURE qc_many.done(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE qc_many.done(bigint, jsonb, text, jsonb) TO qc_many_alice, qc_many_bob;
-- queues one request as qc_many_bob, whoever calls it
CREATE FUNCTION qc_many.as_bob(n int) RETURNS bigint LANGUAGE sql SECURITY DEFINER
AS $$ SELECT queryclaw.api_call_async(qc_test.url('/bob/' || n)) $$;
ALTER FUNCTION qc_many.as_bob(int) OWNER TO qc_many_bob;
GRANT EXECUTE ON FUNCTION qc_many.as_bob(int) TO qc_many_alice;
-- takes qc_many_alice's EXECUTE on the callback, from within her statement
CREATE FUNCTION qc_many.revoke_done() RETURNS void LANGUAGE sql SECURITY DEFINER
AS $$ REVOKE EXECUTE ON PROCEDURE qc_many.done(bigint, jsonb, text, jsonb) FROM qc_many_alice $$;
GRANT EXECUTE ON FUNCTION qc_many.revoke_done() TO qc_many_alice;

--
-- One statement, many rows: each row as the statement would write it.
--
SET ROLE qc_many_alice;
BEGIN;
CREATE TEMP TABLE qc_many_ids AS
SELECT g, queryclaw.api_call_async(qc_test.url('/items/' || g), 'POST', body => '{"n": ' || g || '}',
       callback => 'qc_many.done(bigint, jsonb, text, jsonb)', context => jsonb_build_object('n', g)) AS id
  FROM generate_series(1, 20) g;
-- the transaction's next statement sees them, ids in the order queued
SELECT count(*) AS rows, count(DISTINCT r.id) AS ids,
       bool_and(r.id > 0) AND array_agg(r.id ORDER BY i.g) = array_agg(r.id ORDER BY r.id) AS ordered
  FROM qc_many_ids i JOIN queryclaw.requests r ON r.id = i.id;
SELECT role, func, state, attempts, created_at = now() AS created_now,
       next_attempt_at = now() AS due_now, waiting, finished_at, callback, context,
       idempotency_key, result, error, sqlstate, redacted, query IS NOT NULL AS query,
       qc_test.scrub(request::text) AS request
  FROM queryclaw.requests WHERE id = (SELECT id FROM qc_many_ids WHERE g = 7);
COMMIT;

--
-- A subtransaction that rolls back takes its rows with it, in a
-- statement or between statements; the transaction goes on queueing.
--
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/kept/1')) > 0 AS kept;
SAVEPOINT s;
SELECT count(queryclaw.api_call_async(qc_test.url('/gone/' || g))) AS queued_then_gone
  FROM generate_series(1, 5) g;
ROLLBACK TO SAVEPOINT s;
-- an error in the middle of a statement, caught: the rows of the block go
DO $$
BEGIN
    PERFORM queryclaw.api_call_async(qc_test.url('/gone/6'));
    PERFORM queryclaw.api_call_async(qc_test.url('/gone/7'));
    RAISE EXCEPTION 'undo';
EXCEPTION WHEN raise_exception THEN
    PERFORM queryclaw.api_call_async(qc_test.url('/kept/2'));
END
$$;
SELECT substring(qc_test.scrub(request->>'url') FROM '/\w+/\d+$') AS url
  FROM queryclaw.requests WHERE request->>'url' ~ '/(kept|gone)/' ORDER BY id;
COMMIT;

--
-- The callback's EXECUTE is checked for each request: taken away between
-- two statements of a transaction, and in the middle of a statement.
--
BEGIN;
SELECT queryclaw.api_call_async(qc_test.url('/cb/1'),
       callback => 'qc_many.done(bigint, jsonb, text, jsonb)') > 0 AS granted;
SELECT qc_many.revoke_done();
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/cb/2'),
       callback => 'qc_many.done(bigint, jsonb, text, jsonb)')$$) AS revoked;
ROLLBACK;
SELECT qc_test.try($$SELECT g, CASE WHEN g = 3 THEN qc_many.revoke_done() END,
       queryclaw.api_call_async(qc_test.url('/cb/' || g), callback => 'qc_many.done(bigint, jsonb, text, jsonb)')
  FROM generate_series(1, 5) g$$) AS revoked_mid_statement;
RESET ROLE;
GRANT EXECUTE ON PROCEDURE qc_many.done(bigint, jsonb, text, jsonb) TO qc_many_alice;

--
-- The role is the caller's at each request: SET ROLE between two calls,
-- and a SECURITY DEFINER function in the middle of a statement; each role
-- has its own max_queued_per_role, which counts the rows the statement
-- under way queued too.
--
DELETE FROM queryclaw.requests WHERE role IN ('qc_many_alice', 'qc_many_bob');
SET queryclaw.max_queued_per_role = 3;
BEGIN;
SET ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/a/1')) > 0 AS alice;
SET ROLE qc_many_bob;
SELECT queryclaw.api_call_async(qc_test.url('/b/1')) > 0 AS bob;
SET ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/a/2')) > 0 AS alice;
RESET ROLE;
SELECT role, count(*) FROM queryclaw.requests GROUP BY role ORDER BY role::text;
ROLLBACK;
SET ROLE qc_many_alice;
-- alice, bob, alice, bob, ...: her third goes in, her fourth is refused
SELECT qc_test.try($$SELECT g, queryclaw.api_call_async(qc_test.url('/a/' || g)), qc_many.as_bob(g)
  FROM generate_series(1, 4) g$$) AS alternating;
-- in one statement, the same
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/a/' || g))
  FROM generate_series(1, 4) g$$) AS four;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/a/' || g))
  FROM generate_series(1, 3) g$$) AS three;
RESET ROLE;
-- the role switched row by row with no command between the requests (the
-- function above runs a statement, which moves the command counter): each
-- count sees the rows the statement queued before it
DELETE FROM queryclaw.requests WHERE role IN ('qc_many_alice', 'qc_many_bob');
SELECT qc_test.try($$SELECT g, set_config('role', CASE WHEN g % 2 = 1 THEN 'qc_many_alice' ELSE 'qc_many_bob' END, true),
       queryclaw.api_call_async(qc_test.url('/r/' || g))
  FROM generate_series(1, 8) g$$) AS switched_row_by_row;
RESET queryclaw.max_queued_per_role;

--
-- A trigger on a source table queues a request per row.
--
CREATE TABLE qc_many.items (n int, url text);
CREATE FUNCTION qc_many.enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queryclaw.api_call_async(NEW.url, context => jsonb_build_object('n', NEW.n));
    RETURN NULL;
END
$$;
CREATE TRIGGER enqueue AFTER INSERT ON qc_many.items
    FOR EACH ROW EXECUTE FUNCTION qc_many.enqueue();
GRANT USAGE ON SCHEMA qc_many TO qc_many_alice;
GRANT INSERT ON qc_many.items TO qc_many_alice;
DELETE FROM queryclaw.requests WHERE role IN ('qc_many_alice', 'qc_many_bob');
SET ROLE qc_many_alice;
INSERT INTO qc_many.items SELECT g, qc_test.url('/t/' || g) FROM generate_series(1, 4) g;
SELECT role, context FROM queryclaw.requests ORDER BY id;
RESET ROLE;

--
-- The table's owner changes it in the transaction that queues: what was
-- kept open is closed first (TRUNCATE would find the table in use), and
-- the next request is written as the table now is (a new column's
-- default).  A trigger the owner adds on the table fires for each
-- request; the rows are the same either way.
--
BEGIN;
SET LOCAL ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/ddl/1')) > 0 AS queued;
RESET ROLE;
TRUNCATE queryclaw.requests CASCADE;
ALTER TABLE queryclaw.requests ADD COLUMN qc_many_note text DEFAULT 'noted';
SET LOCAL ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/ddl/2')) > 0 AS queued;
RESET ROLE;
SELECT qc_test.scrub(request->>'url') AS url, qc_many_note FROM queryclaw.requests;
ROLLBACK;
BEGIN;
CREATE FUNCTION qc_many.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.context := coalesce(NEW.context, '{}') || '{"stamped": true}';
    RETURN NEW;
END
$$;
SET LOCAL ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/same'), context => '{"n": 1}') AS id \gset direct_
RESET ROLE;
CREATE TRIGGER stamp BEFORE INSERT ON queryclaw.requests
    FOR EACH ROW EXECUTE FUNCTION qc_many.stamp();
SET LOCAL ROLE qc_many_alice;
SELECT queryclaw.api_call_async(qc_test.url('/same'), context => '{"n": 1}') AS id \gset trigger_
RESET ROLE;
SELECT d.context AS direct, t.context AS with_trigger,
       to_jsonb(d) - '{id,context}'::text[] = to_jsonb(t) - '{id,context}'::text[] AS same_row
  FROM queryclaw.requests d, queryclaw.requests t
 WHERE d.id = :direct_id AND t.id = :trigger_id;
ROLLBACK;

-- A read-only transaction cannot queue, as it cannot INSERT.
SET ROLE qc_many_alice;
BEGIN READ ONLY;
SELECT qc_test.try($$SELECT queryclaw.api_call_async(qc_test.url('/ro'))$$) AS read_only;
ROLLBACK;
RESET ROLE;

-- clean up
DELETE FROM queryclaw.requests WHERE role IN ('qc_many_alice', 'qc_many_bob');
DROP SCHEMA qc_many CASCADE;
DROP OWNED BY qc_many_alice, qc_many_bob;
DROP ROLE qc_many_alice, qc_many_bob;
