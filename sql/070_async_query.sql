--
-- Each attempt of an asynchronous request is an audit row that carries
-- the statement that queued it (requests.query), redacted as a direct
-- call's row redacts its statement: the trigger or job that caused a
-- call is known after the request is deleted.  For llm_chat_tools_async,
-- the model's requests and the tool calls too.
--
CREATE ROLE qc_query_alice;
GRANT USAGE ON SCHEMA qc_test TO qc_query_alice;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.web_fetch(text, text, integer, text),
    queryclaw.wait(bigint[], interval)
    TO qc_query_alice;
-- one retry, soon: an API request that fails once has two attempts
ALTER ROLE qc_query_alice SET queryclaw.retry_max = 1;
ALTER ROLE qc_query_alice SET queryclaw.retry_base_delay = '10ms';
TRUNCATE queryclaw.requests CASCADE;

-- A table whose rows are enriched by a trigger: an API call with the
-- row's key in a secret header, or a model that reads the row's page.
CREATE TABLE qc_query_items (
    id int GENERATED ALWAYS AS IDENTITY, url text, api_key text, note text, request_id bigint);
GRANT SELECT, INSERT ON qc_query_items TO qc_query_alice;
CREATE FUNCTION qc_query_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.api_key IS NOT NULL THEN
        NEW.request_id := queryclaw.api_call_async(NEW.url,
                              headers => jsonb_build_object('X-Api-Key', NEW.api_key));
    ELSE
        NEW.request_id := queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || NEW.url,
                              tools => '{web_fetch}');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER qc_query_enqueue BEFORE INSERT ON qc_query_items
    FOR EACH ROW EXECUTE FUNCTION qc_query_enqueue();

-- The INSERT holds two secrets: one the redaction knows by its name
-- (password=...), and a bare key that only the call shows to be one (it
-- goes out in X-Api-Key).
SET ROLE qc_query_alice;
INSERT INTO qc_query_items (url, api_key, note)
VALUES (qc_test.url('/flaky?run=query-api&fail=1&status=503'), 'k3y-v4lue-0123456', 'password=hunter2');
INSERT INTO qc_query_items (url, note) VALUES (qc_test.url('/hello'), 'a model reads it');
SELECT i.id, r.func, r.state, r.attempts
  FROM queryclaw.wait(ARRAY(SELECT request_id FROM qc_query_items), NULL) r
  JOIN qc_query_items i ON i.request_id = r.id ORDER BY i.id;
-- the request keeps its statement, redacted
SELECT i.id, r.query FROM queryclaw.requests r JOIN qc_query_items i ON i.request_id = r.id
 ORDER BY i.id;
RESET ROLE;

-- Every attempt's audit row carries it: the API request's two, the
-- model's requests and the tool call of the LLM request.
SELECT qc_test.audit_flush();
SELECT i.id, a.func, a.outcome, a.detail->'request'->'attempt' AS attempt,
       a.query = r.query AS enqueuing_statement
  FROM queryclaw.audit_log a
  JOIN queryclaw.requests r ON (a.detail->'request'->>'id')::bigint = r.id
  JOIN qc_query_items i ON i.request_id = r.id
 ORDER BY i.id, a.id;
-- neither secret is stored anywhere
SELECT count(*) FILTER (WHERE a.query LIKE '%hunter2%') AS named_secret,
       count(*) FILTER (WHERE a.query LIKE '%k3y-v4lue%') AS key_sent
  FROM queryclaw.audit_log a;
SELECT count(*) AS requests_with_a_secret FROM queryclaw.requests
 WHERE query LIKE '%hunter2%' OR query LIKE '%k3y-v4lue%';

-- With queryclaw.audit_query off when it is queued, no statement is kept,
-- and its attempts' rows have none.
TRUNCATE qc_query_items;
SET queryclaw.audit_query = off;
SET ROLE qc_query_alice;
INSERT INTO qc_query_items (url, api_key) VALUES (qc_test.url('/hello'), 'another-key-0123');
SELECT r.state, r.query FROM queryclaw.wait(ARRAY(SELECT request_id FROM qc_query_items), NULL) r;
RESET ROLE;
RESET queryclaw.audit_query;
SELECT qc_test.audit_flush();
SELECT a.func, a.outcome, a.query
  FROM queryclaw.audit_log a
  JOIN qc_query_items i ON (a.detail->'request'->>'id')::bigint = i.request_id;

-- clean up
DROP TABLE qc_query_items;
DROP FUNCTION qc_query_enqueue();
TRUNCATE queryclaw.requests CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queryclaw FROM qc_query_alice;
REVOKE USAGE ON SCHEMA qc_test FROM qc_query_alice;
DELETE FROM queryclaw.audit_log WHERE role = 'qc_query_alice';
DROP ROLE qc_query_alice;
