--
-- Rows are matched to roles by OID, never by a name read as an
-- identifier: role names differ by case and may hold dots, spaces and
-- quotes.  An attacker named "Qc_Name" must not read qc_name's requests
-- or audit rows (a name folded to lower case would match), and each of
-- these roles sees its own rows and only those: through the table, wait(),
-- cancel_requests(), queue_status, my_audit and stats.  A role renamed
-- keeps its rows; a new role given an old name does not get them.
--
-- The requests stay queued: queryclaw.enabled is off for every role here.
--
-- tag: what the role's URLs end with, so that its rows can be told apart
CREATE TEMP TABLE qc_names (name text PRIMARY KEY, tag text);
INSERT INTO qc_names VALUES ('qc_name'), ('Qc_Name'), ('QC_NAME'), ('qc.name'),
       ('qc name'), ('qc"name'), ('public.qc_name'), (' qc_name');
UPDATE qc_names SET tag = 'by=role' || (SELECT count(*) FROM qc_names o WHERE o.name < qc_names.name);
DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT name FROM qc_names LOOP
        EXECUTE format('CREATE ROLE %I', r);
        EXECUTE format('ALTER ROLE %I SET queryclaw.enabled = off', r);
        EXECUTE format('GRANT USAGE ON SCHEMA qc_test TO %I', r);
        EXECUTE format('GRANT EXECUTE ON FUNCTION queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
                        queryclaw.wait(bigint[], interval), queryclaw.cancel_requests(bigint[]),
                        queryclaw.web_fetch(text, text, integer, text) TO %I', r);
    END LOOP;
END
$$;

-- Each role queues one request and makes one audited call, the request's
-- path and the URL checked naming the role.
CREATE TABLE qc_name_ids (name text, id bigint);
GRANT INSERT ON qc_name_ids TO PUBLIC;
DO $$
DECLARE
    r text;
    t text;
BEGIN
    FOR r, t IN SELECT name, tag FROM qc_names ORDER BY name LOOP
        EXECUTE format('SET ROLE %I', r);
        INSERT INTO qc_name_ids
            SELECT r, queryclaw.web_fetch_async(qc_test.url('/hello?' || t));
        -- refused (queryclaw.enabled is off), and audited
        PERFORM qc_test.try(format('SELECT queryclaw.web_fetch(%L)',
                                   qc_test.url('/hello?' || t)));
        RESET ROLE;
    END LOOP;
END
$$;
SELECT qc_test.audit_flush() AS flushed;

-- What one role sees of the queue and the audit log, through every way
-- in: "own/others", the rows that are its own and those that are not, or
-- the error the way in raised.
CREATE FUNCTION qc_test.sees(who text) RETURNS TABLE (way text, seen text)
LANGUAGE plpgsql AS $$
DECLARE
    tag text := '%' || (SELECT n.tag FROM qc_names n WHERE n.name = who);
    me oid := (SELECT oid FROM pg_roles WHERE rolname = who);
    ids bigint[] := ARRAY(SELECT id FROM qc_name_ids);
    -- each way in: rows of (is it the role's own, how many)
    ways text[] := ARRAY[
        'requests', $q$SELECT request->>'url' LIKE $1, 1 FROM queryclaw.requests
                       WHERE request->>'url' LIKE '%by=%'$q$,
        'wait', $q$SELECT request->>'url' LIKE $1, 1 FROM queryclaw.wait($3, '0')$q$,
        'queue_status', $q$SELECT role::oid = $2, requests FROM queryclaw.queue_status$q$,
        'my_audit', $q$SELECT url LIKE $1, 1 FROM queryclaw.my_audit WHERE url LIKE '%by=%'$q$,
        'stats', $q$SELECT role = $4, calls FROM queryclaw.stats$q$];
BEGIN
    EXECUTE format('SET ROLE %I', who);
    FOR i IN 1..array_length(ways, 1) / 2 LOOP
        way := ways[2 * i - 1];
        BEGIN
            EXECUTE format($q$SELECT coalesce(sum(n) FILTER (WHERE own), 0) || '/' ||
                                     coalesce(sum(n) FILTER (WHERE NOT own), 0)
                                FROM (%s) AS r(own, n)$q$, ways[2 * i])
               INTO seen USING tag, me, ids, who;
        EXCEPTION WHEN OTHERS THEN
            seen := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
    RESET ROLE;
END
$$;
GRANT EXECUTE ON FUNCTION qc_test.sees(text) TO PUBLIC;
GRANT SELECT ON qc_name_ids TO PUBLIC;

-- every role: one of its own in each, none of the others'
SELECT n.name, s.way, s.seen
  FROM qc_names n, qc_test.sees(n.name) s
 ORDER BY n.name COLLATE "C", s.way;

-- cancel_requests() given every id cancels the caller's own only
SET ROLE "Qc_Name";
SELECT queryclaw.cancel_requests(ARRAY(SELECT id FROM qc_name_ids)) AS cancelled_by_Qc_Name;
RESET ROLE;
SELECT name, state FROM qc_name_ids JOIN queryclaw.requests USING (id)
 ORDER BY name COLLATE "C";

-- A role renamed keeps its rows; a new role given the old name sees none.
ALTER ROLE "qc.name" RENAME TO qc_renamed;
CREATE ROLE "qc.name";
GRANT USAGE ON SCHEMA qc_test TO "qc.name";
GRANT EXECUTE ON FUNCTION queryclaw.wait(bigint[], interval) TO "qc.name";
SET ROLE qc_renamed;
SELECT count(*) AS renamed_requests FROM queryclaw.requests;
SELECT count(*) AS renamed_audit FROM queryclaw.my_audit WHERE url LIKE '%by=%';
SET ROLE "qc.name";
SELECT count(*) AS new_requests FROM queryclaw.requests;
SELECT count(*) AS new_wait FROM queryclaw.wait(ARRAY(SELECT id FROM qc_name_ids), '0');
SELECT count(*) AS new_audit FROM queryclaw.my_audit;
SELECT count(*) AS new_stats FROM queryclaw.stats;
RESET ROLE;

-- clean up
DELETE FROM queryclaw.requests WHERE id IN (SELECT id FROM qc_name_ids);
DROP FUNCTION qc_test.sees(text);
DROP TABLE qc_name_ids;
DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT name FROM qc_names UNION ALL SELECT 'qc_renamed' LOOP
        EXECUTE format('DROP OWNED BY %I', r);
        EXECUTE format('DROP ROLE %I', r);
    END LOOP;
END
$$;
