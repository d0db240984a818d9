--
-- A run of requests started inside another gets transfer state of its
-- own, and one more level is refused.  Without preload, a call's audit row
-- is written in the caller's transaction as the call ends, while the other
-- requests of its batch are still on the wire, so a trigger a superuser
-- put on the audit log runs inside that run: a call it makes must neither
-- take the slot of a transfer in flight nor a completion that is not its
-- own.  (The nested call used to take the slot of the batch's request in
-- flight: "The easy handle is already added to a multi handle", and the
-- batch's row for it came back empty.)
--
CREATE FUNCTION qc_test.reenter() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    got jsonb;
BEGIN
    -- a refused call's row is written inside the run that made it
    IF NEW.url LIKE '%/reenter%' THEN
        BEGIN
            got := queryclaw.api_call(CASE WHEN NEW.url LIKE '%/reenter-deeper%'
                                           THEN qc_test.url('/hello?third')
                                           WHEN current_setting('qc_test.deeper', true) = 'on'
                                           THEN 'http://10.0.0.2/reenter-deeper'
                                           ELSE qc_test.url('/hello?nested') END);
            RAISE NOTICE 'nested call from %: %', NEW.url, rtrim(got->>'body', E'\n');
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE 'nested call from %: % (%)', NEW.url, SQLERRM, SQLSTATE;
        END;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER qc_reenter AFTER INSERT ON queryclaw.audit_log
    FOR EACH ROW EXECUTE FUNCTION qc_test.reenter();

-- a slow request on the wire, then one refused at once, whose audit row
-- fires the trigger while the first is in flight: the nested call gets its
-- own response, and the slow request keeps its own
SELECT ord, status, response->>'body' AS body, error FROM queryclaw.api_call_many(jsonb_build_array(
    jsonb_build_object('url', qc_test.url('/slow?ms=500')),
    jsonb_build_object('url', 'http://10.0.0.1/reenter')));

-- the nested call is refused in turn, and its row fires the trigger inside
-- the nested run: a third level is refused, with a clear error
SET qc_test.deeper = on;
SELECT ord, status, response->>'body' AS body, error FROM queryclaw.api_call_many(jsonb_build_array(
    jsonb_build_object('url', qc_test.url('/slow?ms=500')),
    jsonb_build_object('url', 'http://10.0.0.1/reenter')));
RESET qc_test.deeper;

-- nothing was sent for the third level, and the transport works after them
SELECT count(*) FILTER (WHERE url LIKE '%third%') AS third_level_rows,
       count(*) FILTER (WHERE url LIKE '%nested%') AS nested_rows FROM queryclaw.audit_log;
SELECT queryclaw.api_call(qc_test.url('/hello'))->>'body' AS after;

DROP TRIGGER qc_reenter ON queryclaw.audit_log;
DROP FUNCTION qc_test.reenter();
