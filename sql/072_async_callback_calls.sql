--
-- What a callback of an asynchronous request may call.  Callbacks run in
-- the callback workers, in the transaction that makes their request final:
-- queryclaw's functions that send a request are refused there (55000),
-- with a hint to queue the request instead; queuing one works, and so do
-- the functions that send nothing.  (A callback run inside the async
-- worker's run reached the transport that had other roles' transfers on
-- the wire: test/queue_callbacks.sh shows what that did.)
--
CREATE ROLE qc_cbr_alice;
GRANT USAGE ON SCHEMA qc_test TO qc_cbr_alice;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch(text, text, integer, text),
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.web_fetch_many(text[], text, integer),
    queryclaw.api_call_many(jsonb, integer),
    queryclaw.web_search(text, integer),
    queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb),
    queryclaw.llm_embed(text, text),
    queryclaw.check_url(text),
    queryclaw.html_to_text(text, text, text)
    TO qc_cbr_alice;

-- what each statement a callback ran did: its SQLSTATE, message and hint
CREATE TABLE qc_cbr_seen (id bigint, stmt text, sqlstate text, message text, hint text);
GRANT INSERT ON qc_cbr_seen TO qc_cbr_alice;
CREATE FUNCTION qc_cbr_try(id bigint, stmt text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    got text;
    hint text;
BEGIN
    EXECUTE stmt INTO got;
    INSERT INTO qc_cbr_seen VALUES (id, stmt, NULL, left(got, 40), NULL);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    INSERT INTO qc_cbr_seen VALUES (id, stmt, SQLSTATE, SQLERRM, hint);
END
$$;
-- the callback: each statement of context->'stmts', in turn
CREATE FUNCTION qc_cbr_callback(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$
SELECT qc_cbr_try(id, s) FROM jsonb_array_elements_text(context->'stmts') s;
$$;
-- a callback that raises what it is refused
CREATE FUNCTION qc_cbr_raw(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql AS $$
SELECT queryclaw.web_fetch(qc_test.url('/hello')) IS NULL;
$$;
GRANT EXECUTE ON FUNCTION qc_cbr_try(bigint, text), qc_cbr_callback(bigint, jsonb, text, jsonb),
                          qc_cbr_raw(bigint, jsonb, text, jsonb)
    TO qc_cbr_alice;

TRUNCATE queryclaw.requests CASCADE;
SET ROLE qc_cbr_alice;
SELECT queryclaw.api_call_async(qc_test.url('/hello'),
           callback => 'qc_cbr_callback(bigint,jsonb,text,jsonb)'::regprocedure,
           context => jsonb_build_object('stmts', jsonb_build_array(
               $s$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$s$,
               $s$SELECT queryclaw.api_call(qc_test.url('/hello'))::text$s$,
               $s$SELECT count(*)::text FROM queryclaw.web_fetch_many(ARRAY[qc_test.url('/hello')])$s$,
               $s$SELECT count(*)::text FROM queryclaw.api_call_many('[{"url": "http://127.0.0.1:1/"}]')$s$,
               $s$SELECT count(*)::text FROM queryclaw.web_search('postgres')$s$,
               $s$SELECT queryclaw.llm_chat_tools('SCENARIO:plain hi')::text$s$,
               $s$SELECT queryclaw.llm_embed('hi')::text$s$,
               $s$SELECT queryclaw.check_url(qc_test.url('/hello'))->>'allowed'$s$,
               $s$SELECT queryclaw.html_to_text('<p>still works</p>')$s$,
               $s$SELECT (queryclaw.api_call_async(qc_test.url('/hello?followup')) > 0)::text$s$)))
    AS id \gset
SELECT queryclaw.api_call_async(qc_test.url('/hello'),
           callback => 'qc_cbr_raw(bigint,jsonb,text,jsonb)'::regprocedure) AS raw_id \gset
RESET ROLE;
SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                               WHERE finished_at IS NULL) = 0$c$) AS settled;

-- every function that would send a request is refused, saying what to do
-- instead; check_url (a dry run), html_to_text and an enqueue work
SELECT replace(stmt, current_setting('qc_test.base'), 'BASE') AS stmt, sqlstate, message
  FROM qc_cbr_seen ORDER BY ctid;
SELECT DISTINCT hint FROM qc_cbr_seen WHERE sqlstate IS NOT NULL;
-- the request whose callback caught its refusals is done; the one whose
-- callback raised it failed with it, its response kept
SELECT id = :id AS caught, state, sqlstate, error, result->>'status' AS status
  FROM queryclaw.requests WHERE id IN (:id, :raw_id) ORDER BY id;
-- the request the callback queued went
SELECT state, result->>'body' AS body FROM queryclaw.requests
 WHERE request->>'url' LIKE '%followup%';
-- nothing was sent for the refused calls: only the requests themselves
SELECT qc_test.audit_flush();
SELECT func, count(*) FROM queryclaw.audit_log
 WHERE role = 'qc_cbr_alice' GROUP BY func ORDER BY func;

TRUNCATE queryclaw.requests CASCADE;
DROP TABLE qc_cbr_seen;
DROP FUNCTION qc_cbr_try(bigint, text), qc_cbr_callback(bigint, jsonb, text, jsonb),
              qc_cbr_raw(bigint, jsonb, text, jsonb);
DROP OWNED BY qc_cbr_alice;
DROP ROLE qc_cbr_alice;
