--
-- The transport refuses to be entered again while a run of requests owns
-- it.  Without preload, a call's audit row is written in the caller's
-- transaction as the call ends, while the other requests of its batch are
-- still on the wire, so a trigger a superuser put on the audit log runs
-- inside that run: one that calls api_call must be refused, and leave the
-- run's transfers alone.  (The nested call used to take the slot of a
-- transfer in flight: "The easy handle is already added to a multi
-- handle", or worse.)
--
CREATE FUNCTION qc_test.reenter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.url LIKE '%/reenter%' THEN
        IF current_setting('qc_test.catch', true) = 'on' THEN
            BEGIN
                PERFORM queryclaw.api_call(qc_test.url('/hello?nested'));
            EXCEPTION WHEN OTHERS THEN
                RAISE NOTICE 'nested call: % (%)', SQLERRM, SQLSTATE;
            END;
        ELSE
            PERFORM queryclaw.api_call(qc_test.url('/hello?nested'));
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER qc_reenter AFTER INSERT ON queryclaw.audit_log
    FOR EACH ROW EXECUTE FUNCTION qc_test.reenter();

-- a slow request on the wire, then one refused at once (its audit row
-- fires the trigger while the first is in flight): the nested call is
-- refused, with a clear error
\set SHOW_CONTEXT never
SELECT ord, status, error FROM queryclaw.api_call_many(jsonb_build_array(
    jsonb_build_object('url', qc_test.url('/slow?ms=500')),
    jsonb_build_object('url', 'http://10.0.0.1/reenter')));
\set SHOW_CONTEXT errors

-- caught in the trigger, the refusal leaves the batch as it was: the slow
-- request's own response, the refused one's error
SET qc_test.catch = on;
SELECT ord, status, response->>'body' AS body, error FROM queryclaw.api_call_many(jsonb_build_array(
    jsonb_build_object('url', qc_test.url('/slow?ms=500')),
    jsonb_build_object('url', 'http://10.0.0.1/reenter')));
RESET qc_test.catch;

-- nothing was sent for the nested calls, and the transport works after them
SELECT count(*) FILTER (WHERE url LIKE '%nested%') AS nested_rows FROM queryclaw.audit_log;
SELECT queryclaw.api_call(qc_test.url('/hello'))->>'body' AS after;

DROP TRIGGER qc_reenter ON queryclaw.audit_log;
DROP FUNCTION qc_test.reenter();
