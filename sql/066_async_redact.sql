--
-- No secret a request of the queue sends is kept in clear, wherever the
-- queue or the audit log stores it: tried as an attacker would, by a
-- member of queryclaw_admin reading every column of queryclaw.requests for
-- the retention period (the statement text of direct calls: 007_audit).
-- Each secret below is a distinct word of 6 characters or more, not shaped
-- like a token (so only the rules under test can hide it), searched for in
-- the whole row text of the requests, the audit log and what the callbacks
-- were given.
--
CREATE ROLE qc_redact_eve;
GRANT USAGE ON SCHEMA qc_test TO qc_redact_eve;
GRANT EXECUTE ON FUNCTION
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.api_call(text, text, jsonb, text, integer),
    queryclaw.web_fetch(text, text, integer, text)
    TO qc_redact_eve;
ALTER ROLE qc_redact_eve SET queryclaw.retry_base_delay = '10ms';
ALTER ROLE qc_redact_eve SET queryclaw.retry_max = 1;

-- what the callbacks were given; one callback raises, quoting the result
CREATE TABLE qc_redact_seen (id bigint, result jsonb, error text, context jsonb);
GRANT INSERT ON qc_redact_seen TO qc_redact_eve;
CREATE FUNCTION qc_redact_note(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE sql
AS $$ INSERT INTO qc_redact_seen VALUES (id, result, error, context) $$;
CREATE FUNCTION qc_redact_quote(id bigint, result jsonb, error text, context jsonb)
RETURNS void LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'no thanks for %', result->>'url'; END $$;
REVOKE EXECUTE ON FUNCTION qc_redact_note(bigint, jsonb, text, jsonb),
                           qc_redact_quote(bigint, jsonb, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION qc_redact_note(bigint, jsonb, text, jsonb),
                          qc_redact_quote(bigint, jsonb, text, jsonb) TO qc_redact_eve;

-- Where a secret is: how many rows of the queue, of the audit log and of
-- what the callbacks were given hold it, in any column.
CREATE FUNCTION pg_temp.found(secret text) RETURNS text LANGUAGE sql
AS $$ SELECT format('requests %s, audit_log %s, callbacks %s',
                    (SELECT count(*) FROM queryclaw.requests r WHERE r::text LIKE '%' || secret || '%'),
                    (SELECT count(*) FROM queryclaw.audit_log a WHERE a::text LIKE '%' || secret || '%'),
                    (SELECT count(*) FROM qc_redact_seen s WHERE s::text LIKE '%' || secret || '%')) $$;

SELECT qc_test.audit_flush();
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE queryclaw.audit_log;

-- The result and the error, as stored and as the callback gets them.
SET ROLE qc_redact_eve;
-- Through api_call_async, in this order (n):
-- - userinfo (sent as Basic credentials, which /echo shows base64-encoded)
-- - secret query parameters, which /echo shows in its body
-- - a redirect followed to a URL with a token
-- - a redirect not followed whose Location (the result's header) holds one
-- - a key sent in a header, echoed by the server in response headers of
--   plain names; beside the server's own cookie, session token and
--   Content-Location
-- - the Authorization header echoed in the body
-- - a request retried, then failed with the last response kept
-- - a callback that raises, quoting the URL of the result it was given
SELECT count(queryclaw.api_call_async(url, method, headers, body, callback => cb::regprocedure,
                                      context => jsonb_build_object('n', n)))
  FROM (VALUES
    ('userinfo', replace(qc_test.url('/echo'), 'http://', 'http://USERNAME01:PASSWORD01@'),
     'GET', NULL::jsonb, NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('query parameters', qc_test.url('/echo?q=1&api_key=APIKEY02&token=TOKEN03x'),
     'GET', NULL, NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('redirect followed', qc_test.url('/redirect?to=/echo%3Fsession_id%3DSESSION05'),
     'GET', NULL, NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('redirect held', qc_test.url('/redirect-token'),
     'POST', NULL, 'x=1', 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('headers echoed', qc_test.url('/echo-headers'),
     'GET', '{"X-Api-Key": "HDRKEY06"}', NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('authorization echoed', qc_test.url('/echo'),
     'GET', '{"Authorization": "Bearer AUTHZ07x"}', NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('retried', qc_test.url('/flaky?key=redact&fail=9&status=503&api_key=RETRYKEY09'),
     'GET', NULL, NULL, 'qc_redact_note(bigint,jsonb,text,jsonb)'),
    ('callback raised', qc_test.url('/echo?access_token=CBKEY10x'),
     'GET', NULL, NULL, 'qc_redact_quote(bigint,jsonb,text,jsonb)')
  ) AS t(n, url, method, headers, body, cb);
-- Through web_fetch_async: the content echoing a key; the error of a
-- failed request quoting one back
SELECT count(queryclaw.web_fetch_async(url, callback => 'qc_redact_note(bigint,jsonb,text,jsonb)',
                                       context => jsonb_build_object('n', n)))
  FROM (VALUES ('web_fetch content', qc_test.url('/echo?api_key=FETCHKEY04')),
               ('failed', qc_test.url('/reflect/401?api_key=ERRKEY08'))) AS t(n, url);
-- An LLM request whose tool call fetches a URL with a key, the page
-- quoting it, the answer quoting the page
SELECT queryclaw.llm_chat_tools_async('SCENARIO:tool_call URL:' || qc_test.url('/reflect/200?api_key=LLMKEY11'),
                                      '{web_fetch}',
                                      callback => 'qc_redact_note(bigint,jsonb,text,jsonb)',
                                      context => '{"n": "llm"}') IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                               WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0$c$) AS settled;
SELECT qc_test.audit_flush();
SELECT context->>'n' AS n, state, attempts, result->'status' AS status, sqlstate
  FROM queryclaw.requests ORDER BY id;
SELECT s AS secret, pg_temp.found(s) AS found
  FROM unnest(ARRAY['USERNAME01', 'PASSWORD01', encode('USERNAME01:PASSWORD01', 'base64'),
                    'APIKEY02', 'TOKEN03x', 'FETCHKEY04', 'SESSION05', 'FIXLOCATION04',
                    'HDRKEY06', 'FIXCOOKIE01', 'FIXSESSION02', 'FIXTOKEN03', 'AUTHZ07x',
                    'ERRKEY08', 'RETRYKEY09', 'CBKEY10x', 'LLMKEY11']) AS s;
-- what is kept instead: the same value stored and given to the callback
SELECT context->>'n' AS n, qc_test.scrub(result->>'url') AS url,
       (SELECT result = s.result FROM qc_redact_seen s WHERE s.id = r.id) AS callback_saw_it
  FROM queryclaw.requests r WHERE result ? 'url' ORDER BY id;
SELECT result->'headers'->'location' AS location,
       result->'headers'->'content-location' AS content_location,
       result->'headers'->'set-cookie' AS set_cookie,
       result->'headers'->'x-session-token' AS session_token,
       result->'headers'->'x-seen-1' IS NOT NULL AS others_kept
  FROM queryclaw.requests WHERE context->>'n' IN ('redirect held', 'headers echoed') ORDER BY id;
SELECT context->>'n' AS n, result->'body'->'headers'->>'authorization' AS authorization,
       result->'body'->'query' AS query
  FROM queryclaw.requests WHERE context->>'n' IN ('authorization echoed', 'query parameters') ORDER BY id;
SELECT context->>'n' AS n, qc_test.scrub(error) AS error
  FROM queryclaw.requests WHERE error IS NOT NULL ORDER BY id;
SELECT result->>'answer' AS answer, qc_test.scrub(result->'tool_calls'->0->'arguments'->>'url') AS tool_url
  FROM queryclaw.requests WHERE context->>'n' = 'llm';

-- Nor does a secret the enqueuing statement built (format(), a prepared
-- statement's parameter) stay anywhere: the request's audit rows hold the
-- statement with the secrets its call sends redacted, and its result
-- echoes nothing.
TRUNCATE queryclaw.requests CASCADE;
TRUNCATE queryclaw.audit_log;
TRUNCATE qc_redact_seen;
SET ROLE qc_redact_eve;
PREPARE qc_redact_q(text) AS
    SELECT queryclaw.api_call_async(qc_test.url('/echo?api_key=' || $1)) IS NOT NULL AS queued;
EXECUTE qc_redact_q('PREPASYNC12');
DEALLOCATE qc_redact_q;
SELECT queryclaw.api_call_async(qc_test.url('/echo'), 'GET',
                                format('{"X-Nomad-Token": "%s"}', 'FMTASYNC13')::jsonb) IS NOT NULL AS queued;
RESET ROLE;
SELECT qc_test.wait_until($c$(SELECT count(*) FROM queryclaw.requests
                               WHERE state NOT IN ('done', 'failed', 'cancelled')) = 0$c$) AS settled;
SELECT qc_test.audit_flush();
SELECT func, query FROM queryclaw.audit_log ORDER BY query COLLATE "C";
SELECT s AS secret, pg_temp.found(s) AS found FROM unnest(ARRAY['PREPASYNC12', 'FMTASYNC13']) AS s;

TRUNCATE queryclaw.requests CASCADE;
DROP TABLE qc_redact_seen;
DROP FUNCTION qc_redact_note(bigint, jsonb, text, jsonb), qc_redact_quote(bigint, jsonb, text, jsonb);
DROP OWNED BY qc_redact_eve;
DROP ROLE qc_redact_eve;
