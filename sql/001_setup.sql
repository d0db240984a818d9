--
-- Install the extension and the helpers the other tests use.  make
-- installcheck runs this too, on a server without make test's fixtures:
-- nothing here calls them, and scrub() leaves text alone where the
-- settings naming them are not set.
--
CREATE EXTENSION queryclaw_ext;

SELECT n.nspname, p.proname, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'queryclaw'
 ORDER BY p.proname, arguments;

-- every function is documented
SELECT p.proname, obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
  FROM pg_proc p WHERE p.pronamespace = 'queryclaw'::regnamespace ORDER BY 1;

-- The fixture server's address varies from run to run; tests refer to it
-- through these helpers and show it as BASE (and its port as PORT).
CREATE SCHEMA qc_test;

CREATE FUNCTION qc_test.url(path text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT current_setting('qc_test.base') || path $$;

-- The scripted model (test/fixture/llm_server.py) shows as LLM.
-- Where a setting is not set (make installcheck), its text is left alone.
CREATE FUNCTION qc_test.scrub(t text) RETURNS text LANGUAGE plpgsql STABLE
AS $$
DECLARE
    llm text := current_setting('qc_test.llm_base', true);
    base text := current_setting('qc_test.base', true);
    port text := current_setting('qc_test.port', true);
BEGIN
    IF llm <> '' THEN t := replace(t, llm, 'LLM'); END IF;
    IF base <> '' THEN t := replace(t, base, 'BASE'); END IF;
    IF port <> '' THEN t := replace(t, ':' || port, ':PORT'); END IF;
    RETURN t;
END
$$;

-- Run a statement and report its outcome as text: 'ok', or the SQLSTATE
-- with the message, detail and hint, the fixture's address scrubbed.
CREATE FUNCTION qc_test.try(stmt text) RETURNS text LANGUAGE plpgsql
AS $$
DECLARE
    state text; msg text; detail text; hint text;
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN qc_test.scrub(state || ': ' || msg
        || coalesce(E'\nDETAIL: ' || nullif(detail, ''), '')
        || coalesce(E'\nHINT: ' || nullif(hint, ''), ''));
END
$$;

-- api_call's result without the parts that vary (timing, the port)
CREATE FUNCTION qc_test.api(r jsonb) RETURNS jsonb LANGUAGE sql STABLE
AS $$ SELECT qc_test.scrub((r - 'elapsed_ms')::text)::jsonb $$;

-- the fixture counts the requests it serves: proof that a refusal sent nothing
CREATE FUNCTION qc_test.requests_served() RETURNS bigint LANGUAGE sql
AS $$ SELECT (queryclaw.api_call(qc_test.url('/stats'))->'body'->>'requests')::bigint $$;
CREATE FUNCTION qc_test.reset_requests() RETURNS void LANGUAGE sql
AS $$ SELECT queryclaw.api_call(qc_test.url('/stats/reset')) $$;

-- Poll (every 20 ms, at most 15 s) until condition, an SQL boolean
-- expression, holds; returns whether it does.  Tests wait for the audit
-- worker and for other sessions this way, never with fixed sleeps.
CREATE FUNCTION qc_test.wait_until(condition text) RETURNS boolean LANGUAGE plpgsql
AS $$
DECLARE
    done boolean;
BEGIN
    FOR i IN 1..750 LOOP
        EXECUTE 'SELECT ' || condition INTO done;
        EXIT WHEN done;
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN done;
END
$$;

-- With preload, the audit worker commits rows in its own transactions a
-- moment after each call: wait until it has written everything queued.
CREATE FUNCTION qc_test.audit_flush() RETURNS boolean LANGUAGE plpgsql
AS $$
BEGIN
    -- up to a minute: a worker started with the cluster may still be
    -- connecting on a loaded machine (its restart waits for the postmaster)
    FOR i IN 1..3000 LOOP
        IF (SELECT queued FROM queryclaw.audit_status()) = 0 THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN false;
END
$$;

-- Wait until the audit log holds at least n rows matching the condition
-- (rows other sessions queue as they end, say); returns how many it holds.
CREATE FUNCTION qc_test.wait_for_audit(n bigint, condition text DEFAULT 'true')
RETURNS bigint LANGUAGE plpgsql
AS $$
DECLARE
    found bigint;
BEGIN
    PERFORM qc_test.wait_until(format('(SELECT count(*) FROM queryclaw.audit_log WHERE %s) >= %s',
                                      condition, n));
    EXECUTE 'SELECT count(*) FROM queryclaw.audit_log WHERE ' || condition INTO found;
    RETURN found;
END
$$;

-- Run stmt under the statement_timeout the caller set (a query cancel that
-- arrives at a known moment) and say whether it was cancelled, and
-- stopped by the cancel: within queryclaw.timeout of it, where every call
-- it is given would have run at least that long by itself (a cancel that
-- a wait ignored would be seen at its end only).  A bound of behaviour,
-- not of speed: a loaded machine stops it late, not that late.
-- (qc_test.stop_within, if set, is the bound instead.)
CREATE FUNCTION qc_test.cancel_stop(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'not cancelled';
EXCEPTION WHEN query_canceled THEN
    RETURN SQLSTATE || ', ' ||
        CASE WHEN clock_timestamp() - statement_timestamp()
                  - current_setting('statement_timeout')::interval
                  < coalesce(current_setting('qc_test.stop_within', true),
                             current_setting('queryclaw.timeout'))::interval
             THEN 'stopped by the cancel'
             ELSE 'not stopped by the cancel: ran ' || (clock_timestamp() - statement_timestamp())::text
        END;
END
$$;

-- A schema s of role r's holding an operator = on text that raises a
-- NOTICE when called.  First on the search_path of a new session (whose
-- statements are prepared under it), it shows that the statements the
-- extension runs as a table's owner name their operators' schema: called,
-- it would run as that owner.
CREATE FUNCTION qc_test.hostile_schema(s name, r name) RETURNS void LANGUAGE plpgsql
AS $f$
BEGIN
    EXECUTE format('CREATE SCHEMA %I AUTHORIZATION %I', s, r);
    EXECUTE format($$CREATE FUNCTION %I.text_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql
                     AS 'BEGIN RAISE NOTICE ''operator of %s called as %%'', current_user;
                               RETURN a OPERATOR(pg_catalog.=) b; END'$$, s, s);
    EXECUTE format('CREATE OPERATOR %I.= (LEFTARG = text, RIGHTARG = text, FUNCTION = %I.text_eq)',
                   s, s);
    EXECUTE format('ALTER FUNCTION %I.text_eq(text, text) OWNER TO %I', s, r);
    EXECUTE format('ALTER OPERATOR %I.= (text, text) OWNER TO %I', s, r);
END
$f$;
