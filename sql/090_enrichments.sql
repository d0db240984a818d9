--
-- Enrichments: columns kept filled from an API, declared once.  What is
-- refused at creation (and why), then what the async worker does with an
-- enrichment: the backfill, live inserts and updates, rows asking the same
-- thing sharing one call, NULL requests, a failed row kept and retried,
-- pause and resume, alter, drop, and two roles kept apart.
--
\set VERBOSITY terse
CREATE ROLE qc_enr_alice;
CREATE ROLE qc_enr_bob;
GRANT USAGE ON SCHEMA qc_test TO qc_enr_alice, qc_enr_bob;
GRANT EXECUTE ON FUNCTION
    queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval),
    queryclaw.web_fetch_request(text, text, integer),
    queryclaw.api_call_request(text, text, jsonb, text, integer, text),
    queryclaw.llm_request(text, text[], text, text, integer, jsonb),
    queryclaw.llm_embed_request(text, text),
    queryclaw.alter_enrichment(text, text, text, name, boolean),
    queryclaw.pause_enrichment(text), queryclaw.resume_enrichment(text),
    queryclaw.retry_enrichment(text), queryclaw.refresh_enrichment(text),
    queryclaw.drop_enrichment(text), queryclaw.estimate_enrichment(text),
    queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text),
    queryclaw.web_fetch_async(text, text, integer, regprocedure, jsonb),
    queryclaw.llm_chat_tools_async(text, text[], text, text, integer, jsonb, regprocedure, jsonb),
    queryclaw.api_call(text, text, jsonb, text, integer)
    TO qc_enr_alice, qc_enr_bob;
-- the fixture's count of requests to /flaky with a key
CREATE FUNCTION qc_test.enr_flaky_count(key text) RETURNS int LANGUAGE sql
AS $$ SELECT (queryclaw.api_call(qc_test.url('/flaky/count?key=' || key))->'body'->>'count')::int $$;
ALTER ROLE qc_enr_alice SET queryclaw.retry_max = 0;

CREATE TABLE companies (id int PRIMARY KEY, name text, note text, info jsonb, city text, staff int);
CREATE TABLE no_key (name text, info jsonb);
ALTER TABLE companies OWNER TO qc_enr_alice;
ALTER TABLE no_key OWNER TO qc_enr_alice;
INSERT INTO companies SELECT i, 'co' || (i % 3), NULL FROM generate_series(1, 9) i;

-- wait until the enrichment has nothing stale or running (or 15 s passed)
CREATE FUNCTION qc_test.enriched(e text) RETURNS boolean LANGUAGE sql
AS $$ SELECT qc_test.wait_until(format('(SELECT stale + running FROM queryclaw.enrichments WHERE name = %L) = 0', e)) $$;

SET ROLE qc_enr_alice;
-- refused at creation
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'no_key',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$, target => 'info')$$) AS no_primary_key;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$r$)$$) AS neither_apply_nor_target;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$r$,
    apply => 'info = result', target => 'info')$$) AS both_apply_and_target;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$r$,
    apply => $a$name = result ->> 'x'$a$)$$) AS apply_writes_an_input;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || nme))$r$, target => 'info')$$) AS unknown_column_in_request;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$r$, apply => 'nfo = result')$$) AS unknown_column_in_apply;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$r$, apply => 'staff = result')$$) AS wrong_type_in_apply;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.web_fetch_request(qc_test.url('/hello'))$r$, target => 'id')$$) AS wrong_type_for_target;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$jsonb_build_object('url', name)$r$, target => 'info')$$) AS not_a_constructor;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$name$r$, target => 'info')$$) AS not_jsonb;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo')) FROM companies; DROP TABLE companies; SELECT 1$r$,
    target => 'info')$$) AS two_statements;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$,
    apply => $a$info = result WHERE false$a$)$$) AS apply_with_where;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$, target => 'info', mode => 'sometimes')$$) AS bad_mode;
-- an embedding goes into real[] (or pgvector's vector), nothing else
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.llm_embed_request(name)$r$, target => 'info')$$) AS embedding_into_jsonb;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.llm_embed_request(name)$r$, target => 'staff')$$) AS embedding_into_integer;
RESET ROLE;
-- the owner queues the requests: without EXECUTE on api_call_async, 42501 now
REVOKE EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
    FROM qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$, target => 'info')$$) AS may_not_send;
RESET ROLE;
GRANT EXECUTE ON FUNCTION queryclaw.api_call_async(text, text, jsonb, text, integer, regprocedure, jsonb, text)
    TO qc_enr_alice;
-- bob may read companies but not update it: 42501
GRANT SELECT ON companies TO qc_enr_bob;
SET ROLE qc_enr_bob;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$, target => 'info')$$) AS no_update_privilege;
RESET ROLE;
GRANT UPDATE ON companies TO qc_enr_bob;
SET ROLE qc_enr_bob;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'companies',
    $r$queryclaw.api_call_request(qc_test.url('/echo'))$r$, target => 'info')$$) AS no_trigger_privilege;
RESET ROLE;
SELECT count(*) AS nothing_left_behind FROM pg_class WHERE relname ~ '^enrichment_[0-9]+_';

-- A backfill: 9 rows naming 3 companies ask 3 calls; the echo's answer
-- goes into info, its query's n into city.
SELECT qc_test.reset_requests();
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('echo', 'companies',
    request => $$queryclaw.api_call_request(qc_test.url('/echo?n=' || name))$$,
    apply => $$info = result -> 'body', city = result #>> '{body,query,n}'$$);
SELECT qc_test.enriched('echo');
SELECT id, name, city, info -> 'query' AS asked FROM companies ORDER BY id;
SELECT name, rows, done, stale, running, failed, skipped, calls, calls_saved, last_error
  FROM queryclaw.enrichments;
RESET ROLE;
SELECT qc_test.requests_served() AS calls_served;
SELECT func, state, context - 'enrichment_id' - 'request_hash' AS context FROM queryclaw.requests
 WHERE context ? 'enrichment' ORDER BY id;

-- Live: an insert is asked; an update of a column that is not an input
-- asks nothing; an update of an input asks again.
SELECT qc_test.reset_requests();
SET ROLE qc_enr_alice;
INSERT INTO companies VALUES (10, 'newco');
SELECT qc_test.enriched('echo');
SELECT city FROM companies WHERE id = 10;
UPDATE companies SET note = 'just a note' WHERE id <= 5;
SELECT count(*) AS stale_after_note FROM queryclaw.enrichment_rows WHERE state <> 'done';
UPDATE companies SET name = 'renamed' WHERE id = 1;
SELECT qc_test.enriched('echo');
SELECT id, name, city FROM companies WHERE id IN (1, 2) ORDER BY id;
RESET ROLE;
SELECT qc_test.requests_served() AS calls_served;

-- NULL: nothing to ask, the row is skipped
SET ROLE qc_enr_alice;
SELECT queryclaw.alter_enrichment('echo',
    request => $$CASE WHEN name <> 'co0' THEN queryclaw.api_call_request(qc_test.url('/echo?n=' || name)) END$$);
SELECT qc_test.enriched('echo');
SELECT state, count(*) FROM queryclaw.enrichment_rows GROUP BY 1 ORDER BY 1;
SELECT done, skipped, stale FROM queryclaw.enrichments;

-- A 404 fails its row, whose values stay; retry_enrichment asks again
-- once the API answers (the fixture's /flaky fails each key once).
SELECT queryclaw.alter_enrichment('echo',
    request => $$queryclaw.api_call_request(qc_test.url('/flaky?status=404&fail=1&run=enr-' || name))$$,
    apply => $$info = result -> 'body'$$, reenrich => false);
UPDATE companies SET name = 'flaky' WHERE id = 3;
SELECT qc_test.enriched('echo');
SELECT state, qc_test.scrub(error) AS error, sqlstate FROM queryclaw.enrichment_rows WHERE key = '{"id": 3}';
SELECT city, info ->> 'path' AS info_kept FROM companies WHERE id = 3;
SELECT queryclaw.retry_enrichment('echo') AS retried;
SELECT qc_test.enriched('echo');
SELECT state, info ->> 'attempt' AS attempt FROM queryclaw.enrichment_rows, companies
 WHERE key = '{"id": 3}' AND id = 3;
-- without reenrich, the other rows keep what the old definition wrote
SELECT count(*) AS still_from_echo FROM companies WHERE info ->> 'path' = '/echo';

-- Paused: rows become stale but nothing is asked until resumed.
SELECT queryclaw.alter_enrichment('echo',
    request => $$queryclaw.api_call_request(qc_test.url('/flaky?fail=0&run=enr-' || name))$$,
    reenrich => false);
SELECT queryclaw.pause_enrichment('echo');
UPDATE companies SET name = 'paused' WHERE id = 4;
SELECT pg_sleep(0.5);
SELECT paused, stale FROM queryclaw.enrichments;
SELECT queryclaw.resume_enrichment('echo');
SELECT qc_test.enriched('echo');
SELECT paused, stale, info ->> 'key' AS asked_for FROM queryclaw.enrichments, companies WHERE id = 4;

-- Changed twice while its request is on the wire (the fixture answers
-- after 300 ms): the row ends with what its last inputs asked.
SELECT queryclaw.alter_enrichment('echo',
    request => $$queryclaw.api_call_request(qc_test.url('/flaky?fail=0&ms=300&run=' || name))$$);
SELECT qc_test.enriched('echo');
UPDATE companies SET name = 'first' WHERE id = 5;
SELECT qc_test.wait_until($$(SELECT state = 'running' FROM queryclaw.enrichment_rows WHERE key = '{"id": 5}')$$);
UPDATE companies SET name = 'second' WHERE id = 5;
UPDATE companies SET name = 'third' WHERE id = 5;
SELECT qc_test.enriched('echo');
SELECT name, info ->> 'key' AS answered_for FROM companies WHERE id = 5;

-- A deleted row's request that has not gone out is never sent: alice's
-- requests wait while queryclaw.enabled is off for her.
RESET ROLE;
ALTER ROLE qc_enr_alice SET queryclaw.enabled = off;
SET ROLE qc_enr_alice;
INSERT INTO companies VALUES (20, 'deleted');
SELECT qc_test.wait_until($$(SELECT state = 'running' FROM queryclaw.enrichment_rows WHERE key = '{"id": 20}')$$);
DELETE FROM companies WHERE id = 20;
RESET ROLE;
ALTER ROLE qc_enr_alice RESET queryclaw.enabled;
SELECT qc_test.wait_until($$(SELECT count(*) = 0 FROM queryclaw.requests WHERE state NOT IN ('done', 'failed', 'cancelled'))$$);
SELECT state, error FROM queryclaw.requests WHERE request ->> 'url' LIKE '%run=deleted%';
SELECT error, sqlstate FROM queryclaw.enrichment_rows WHERE key = '{"id": 20}';
SELECT qc_test.enr_flaky_count('deleted') AS times_sent;
SELECT count(*) AS state_rows FROM queryclaw.enrichment_rows WHERE key = '{"id": 20}';
SET ROLE qc_enr_alice;

-- Another role sees, alters and drops none of it.
RESET ROLE;
SELECT id AS echo_id FROM queryclaw.enrichment_definitions WHERE name = 'echo' \gset
SET ROLE qc_enr_bob;
SELECT count(*) AS bob_sees FROM queryclaw.enrichments;
SELECT count(*) AS bob_sees_rows FROM queryclaw.enrichment_rows;
SELECT qc_test.try($$SELECT queryclaw.drop_enrichment('echo')$$) AS bob_drops;
SELECT qc_test.try($$SELECT queryclaw.pause_enrichment('echo')$$) AS bob_pauses;
WITH u AS (UPDATE queryclaw.enrichment_definitions SET paused = true RETURNING 1)
SELECT count(*) AS bob_updated FROM u;
WITH u AS (DELETE FROM queryclaw.enrichment_rows RETURNING 1)
SELECT count(*) AS bob_deleted FROM u;
-- nor gives alice's enrichment a row, nor takes it over
SELECT qc_test.try(format($$INSERT INTO queryclaw.enrichment_rows (enrichment, owner, key, state)
                           VALUES (%s, 'qc_enr_bob', '{"id": 99}', 'stale')$$, :echo_id)) AS bob_adds_a_row;
SELECT qc_test.try(format($$INSERT INTO queryclaw.enrichment_rows (enrichment, owner, key, state)
                           VALUES (%s, 'qc_enr_alice', '{"id": 99}', 'stale')$$, :echo_id)) AS bob_adds_alices_row;
-- nor moves a row or a call into it: whose it is, and of which
-- enrichment, is written once
SELECT qc_test.try(format('UPDATE queryclaw.enrichment_rows SET enrichment = %s', :echo_id)) AS bob_moves_a_row;
SELECT qc_test.try($$UPDATE queryclaw.enrichment_rows SET owner = 'qc_enr_alice'$$) AS bob_gives_a_row;
SELECT qc_test.try($$UPDATE queryclaw.enrichment_rows SET key = '{"id": 1}'$$) AS bob_rekeys_a_row;
SELECT qc_test.try(format('UPDATE queryclaw.enrichment_calls SET enrichment = %s', :echo_id)) AS bob_moves_a_call;
SELECT qc_test.try($$UPDATE queryclaw.enrichment_calls SET request_hash = 'x'$$) AS bob_rehashes_a_call;
SELECT regexp_replace(qc_test.try(format('SELECT queryclaw.enrichment_define(%s)', :echo_id)),
                      '(enrichment[ _])[0-9]+', '\1N', 'g') AS bob_redefines;
SELECT qc_test.try(format('SELECT queryclaw.enrichment_cancel(''{1}'', ''qc_enr_alice'')')) AS bob_cancels;
SELECT regexp_replace(qc_test.try(format('SELECT * FROM queryclaw.enrichment_%s_request', :echo_id)),
                      '(enrichment[ _])[0-9]+', '\1N', 'g') AS bob_reads_view;
SELECT regexp_replace(qc_test.try(format('SELECT queryclaw.enrichment_%s_apply(''{}'', ''{"id": 1}'', '''')', :echo_id)),
                      '(enrichment[ _])[0-9]+', '\1N', 'g') AS bob_applies;
RESET ROLE;

-- queryclaw_admin sees every enrichment (without its table's row count,
-- where it may not read the table)
CREATE ROLE qc_enr_admin IN ROLE queryclaw_admin;
SET ROLE qc_enr_admin;
SELECT name, owner, rows, done FROM queryclaw.enrichments;
RESET ROLE;
DROP ROLE qc_enr_admin;

-- A role without EXECUTE on create_enrichment has no enrichment at all.
CREATE ROLE qc_enr_carol;
GRANT USAGE ON SCHEMA qc_test TO qc_enr_carol;
SET ROLE qc_enr_carol;
SELECT qc_test.try($$INSERT INTO queryclaw.enrichment_definitions
                       (name, owner, source, request, target, mode, cache_ttl, definition_hash,
                        key_columns, backfill_done)
                     VALUES ('sneak', 'qc_enr_carol', 'companies', 'x', 'info', 'live', '1 day', '',
                             '{}', true)$$) AS carol_inserts;
RESET ROLE;
DROP OWNED BY qc_enr_carol;
DROP ROLE qc_enr_carol;

-- Dropped: its triggers and states go, the values stay.
SET ROLE qc_enr_alice;
SELECT queryclaw.drop_enrichment('echo');
SELECT count(*) AS enrichments FROM queryclaw.enrichments;
SELECT count(*) FILTER (WHERE info IS NOT NULL) AS values_kept FROM companies;
INSERT INTO companies VALUES (11, 'after drop');
RESET ROLE;
SELECT count(*) AS states_left FROM queryclaw.enrichment_rows;
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'companies'::regclass;
SELECT count(*) AS objects_left FROM pg_class WHERE relname ~ '^enrichment_[0-9]+_';

-- A model's answer into columns: llm_request with an output_schema (the
-- scripted model answers {"city": "Lyon"}), and a page's text into a
-- column with target.
CREATE TABLE firms (id int PRIMARY KEY, name text, hq_city text, page text, tokens int);
INSERT INTO firms VALUES (1, 'Acme'), (2, 'Globex');
ALTER TABLE firms OWNER TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('firm_hq', 'firms',
    request => $$queryclaw.llm_request('SCENARIO:json Where is ' || name || ' headquartered?',
                   tools => '{}',
                   output_schema => '{"type": "object", "properties": {"city": {"type": "string"}},
                                      "required": ["city"]}')$$,
    apply => $$hq_city = result #>> '{answer,city}', tokens = (result #>> '{usage,total_tokens}')::int$$);
SELECT queryclaw.create_enrichment('firm_page', 'firms',
    request => $$queryclaw.web_fetch_request(qc_test.url('/html?firm=' || id))$$, target => 'page');
SELECT qc_test.enriched('firm_hq') AND qc_test.enriched('firm_page') AS enriched;
SELECT id, name, hq_city, tokens > 0 AS counted, replace(left(page, 28), E'\n', ' ') AS page FROM firms ORDER BY id;
SELECT name, done, calls, tokens > 0 AS tokens_counted FROM queryclaw.enrichments ORDER BY name;
-- what a backfill would cost, asking nothing
SELECT * FROM queryclaw.estimate_enrichment('firm_hq');
RESET ROLE;
SELECT func, count(*) FROM queryclaw.requests WHERE context ->> 'enrichment' LIKE 'firm%' GROUP BY 1 ORDER BY 1;
SET client_min_messages = warning;
DROP TABLE firms CASCADE;
RESET client_min_messages;

-- Embeddings: each row's text embedded by the queue into a real[] column
-- (the scripted model's vectors have 8 dimensions, the same as llm_embed
-- gives); a live insert too; an input the endpoint refuses fails its row.
CREATE TABLE passages (id int PRIMARY KEY, body text, embedding real[], tags int[],
                       embedding8 float8[]);
INSERT INTO passages VALUES (1, 'the quick brown fox'), (2, 'a lazy dog'), (3, 'the quick brown fox');
ALTER TABLE passages OWNER TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'passages',
    $r$queryclaw.llm_embed_request(body)$r$, target => 'tags')$$) AS embedding_into_int_array;
RESET ROLE;
-- queued by its owner, who needs EXECUTE on llm_embed_request at creation too
REVOKE EXECUTE ON FUNCTION queryclaw.llm_embed_request(text, text) FROM qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT qc_test.try($$SELECT queryclaw.create_enrichment('e', 'passages',
    $r$queryclaw.llm_embed_request(body)$r$, target => 'embedding')$$) AS embedding_may_not_send;
RESET ROLE;
GRANT EXECUTE ON FUNCTION queryclaw.llm_embed_request(text, text) TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('passage_embedding', 'passages',
    request => $$queryclaw.llm_embed_request(body)$$, target => 'embedding');
SELECT queryclaw.create_enrichment('passage_embedding8', 'passages',
    request => $$queryclaw.llm_embed_request(body, model => 'other-model')$$, target => 'embedding8');
SELECT qc_test.enriched('passage_embedding') AND qc_test.enriched('passage_embedding8') AS enriched;
INSERT INTO passages (id, body) VALUES (4, 'a quick dog'), (5, 'EMBED_ERROR');
SELECT qc_test.enriched('passage_embedding') AND qc_test.enriched('passage_embedding8') AS enriched;
RESET ROLE;
SELECT id, array_length(embedding, 1) AS dims,
       CASE WHEN body <> 'EMBED_ERROR' THEN embedding = queryclaw.llm_embed(body) END AS as_llm_embed,
       CASE WHEN body <> 'EMBED_ERROR'
            THEN embedding8::real[] = queryclaw.llm_embed(body, 'other-model') END AS float8_too
  FROM passages ORDER BY id;
SET ROLE qc_enr_alice;
SELECT name, done, failed, calls, calls_saved, tokens, last_error FROM queryclaw.enrichments
 WHERE name LIKE 'passage%' ORDER BY name;
SELECT key, state, sqlstate, error FROM queryclaw.enrichment_rows WHERE state = 'failed' ORDER BY error;
RESET ROLE;
SELECT func, request - 'input' AS request, state, count(*) FROM queryclaw.requests
 WHERE context ->> 'enrichment' LIKE 'passage%' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT qc_test.audit_flush() AS flushed;
SELECT func, detail ->> 'enrichment' AS enrichment, detail ->> 'model' AS model, status, count(*)
  FROM queryclaw.audit_log WHERE detail ->> 'enrichment' LIKE 'passage%' GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
-- A TRUNCATE fires no trigger, so the states stay: a row inserted again
-- under such a key is asked anew all the same.
SET ROLE qc_enr_alice;
TRUNCATE passages;
INSERT INTO passages (id, body) VALUES (2, 'a lazy cat'), (6, 'a new passage');
SELECT qc_test.enriched('passage_embedding') AND qc_test.enriched('passage_embedding8') AS enriched;
RESET ROLE;
SELECT id, embedding = queryclaw.llm_embed(body) AS as_llm_embed FROM passages ORDER BY id;
SET client_min_messages = warning;
DROP TABLE passages CASCADE;
RESET client_min_messages;

-- 1,000 rows naming 10 keys make 10 calls; a row whose request raises
-- (a scheme the policy refuses) fails alone.
SELECT qc_test.reset_requests();
CREATE TABLE many (id int PRIMARY KEY, k text, answer text);
INSERT INTO many SELECT i, 'k' || (i % 10) FROM generate_series(1, 1000) i;
INSERT INTO many VALUES (1001, 'ftp');
ALTER TABLE many OWNER TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('many', 'many',
    request => $$queryclaw.api_call_request(CASE WHEN k = 'ftp' THEN 'ftp://127.0.0.1/'
                                                 ELSE qc_test.url('/echo?k=' || k) END)$$,
    apply => $$answer = result #>> '{body,query,k}'$$);
SELECT qc_test.enriched('many');
SELECT count(*) FILTER (WHERE answer = k) AS answered, count(*) FILTER (WHERE answer IS NULL) AS unanswered
  FROM many;
SELECT done, failed, calls, calls_saved FROM queryclaw.enrichments WHERE name = 'many';
SELECT key, state, sqlstate, error FROM queryclaw.enrichment_rows WHERE state = 'failed';
-- each call's audit row names the enrichment
RESET ROLE;
SELECT qc_test.audit_flush() AS flushed;
SET ROLE qc_enr_alice;
SELECT count(*) AS audited FROM queryclaw.my_audit WHERE detail ->> 'enrichment' = 'many';
-- results kept past cache_ttl leave at the feed's next turn, fresh ones stay
SELECT count(*) AS calls_kept FROM queryclaw.enrichment_calls WHERE state = 'done';
UPDATE queryclaw.enrichment_calls SET expires_at = now() - interval '1 minute', request_id = NULL
 WHERE request_hash IN (SELECT request_hash FROM queryclaw.enrichment_calls
                         WHERE state = 'done' ORDER BY request_hash LIMIT 3);
SELECT queryclaw.enrichment_tidy(d) FROM queryclaw.enrichment_definitions d WHERE d.name = 'many';
SELECT count(*) AS calls_kept, count(*) FILTER (WHERE expires_at < now()) AS expired_kept
  FROM queryclaw.enrichment_calls WHERE state = 'done';
-- a dropped table takes its enrichment with it
SET client_min_messages = warning;
DROP TABLE many CASCADE;
RESET client_min_messages;
SELECT count(*) AS enrichments_left FROM queryclaw.enrichments;
RESET ROLE;
SELECT qc_test.requests_served() AS calls_served;

-- a request expression that calls the network itself fails its row, with
-- the reason: the worker that feeds enrichments sends nothing
SELECT qc_test.reset_requests();
CREATE TABLE fetching (id int PRIMARY KEY, answer text);
INSERT INTO fetching VALUES (1);
ALTER TABLE fetching OWNER TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('fetching', 'fetching',
    request => $$queryclaw.api_call_request(qc_test.url('/echo?k=' ||
                   (queryclaw.api_call(qc_test.url('/echo?inside')) ->> 'status')))$$,
    apply => $$answer = result #>> '{body,query,k}'$$);
SELECT qc_test.enriched('fetching');
SELECT r.state, r.sqlstate, r.error, f.answer
  FROM queryclaw.enrichment_rows r JOIN fetching f ON f.id = (r.key ->> 'id')::int;
SELECT queryclaw.drop_enrichment('fetching');
RESET ROLE;
SELECT qc_test.requests_served() AS calls_served;
DROP TABLE fetching;

-- Results are written back many at a time: a result that apply raises on
-- fails its row alone, and a column of the table called result neither
-- hides the request's result from apply nor is written.
SELECT qc_test.reset_requests();
CREATE TABLE together (id int PRIMARY KEY, k text, result text, n int);
INSERT INTO together
SELECT i, CASE WHEN i = 7 THEN 'seven' ELSE i::text END, 'a column' FROM generate_series(1, 200) i;
ALTER TABLE together OWNER TO qc_enr_alice;
SET ROLE qc_enr_alice;
SELECT queryclaw.create_enrichment('together', 'together',
    request => $$queryclaw.api_call_request(qc_test.url('/echo?k=' || k))$$,
    apply => $$n = (result #>> '{body,query,k}')::int$$);
SELECT qc_test.enriched('together');
SELECT count(*) FILTER (WHERE n = id) AS written, count(*) FILTER (WHERE n IS NULL) AS unwritten,
       count(*) FILTER (WHERE result = 'a column') AS column_kept
  FROM together;
SELECT key, state, sqlstate, error FROM queryclaw.enrichment_rows WHERE state <> 'done';
-- where the role may not run the batch's function, each result is
-- written back on its own
RESET ROLE;
REVOKE EXECUTE ON FUNCTION queryclaw.enrichment_done_many(bigint[], jsonb[], text[], jsonb[]) FROM PUBLIC;
SET ROLE qc_enr_alice;
UPDATE together SET k = (id * 10)::text WHERE id <= 50;
SELECT qc_test.enriched('together');
SELECT count(*) FILTER (WHERE n = id * 10) AS rewritten FROM together WHERE id <= 50;
SELECT done, failed FROM queryclaw.enrichments WHERE name = 'together';
RESET ROLE;
GRANT EXECUTE ON FUNCTION queryclaw.enrichment_done_many(bigint[], jsonb[], text[], jsonb[]) TO PUBLIC;
SET client_min_messages = warning;
DROP TABLE together CASCADE;
RESET client_min_messages;

DROP TABLE companies, no_key;
DROP FUNCTION qc_test.enriched(text), qc_test.enr_flaky_count(text);
DROP OWNED BY qc_enr_alice, qc_enr_bob;
DROP ROLE qc_enr_alice, qc_enr_bob;
