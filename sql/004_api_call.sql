--
-- api_call: methods, headers, bodies, the result object, bad input.
--
SELECT jsonb_pretty(qc_test.api(queryclaw.api_call(qc_test.url('/json'))));

-- 4xx and 5xx do not raise: ok is false
SELECT r->'status' AS status, r->'ok' AS ok, r->'body' AS body
  FROM queryclaw.api_call(qc_test.url('/status/404')) AS r;
SELECT r->'status' AS status, r->'ok' AS ok
  FROM queryclaw.api_call(qc_test.url('/status/503')) AS r;

-- every method; the fixture echoes what it received
SELECT m AS method, r->'body'->>'method' AS seen, r->'body'->>'body' AS body_seen
  FROM unnest(ARRAY['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) AS m,
       LATERAL queryclaw.api_call(qc_test.url('/echo'), m, body => CASE WHEN m <> 'GET' THEN 'payload' END) AS r;
SELECT r->'status' AS status, r->'body' AS body, r->'headers'->>'content-type' AS type
  FROM queryclaw.api_call(qc_test.url('/echo'), 'head') AS r;

-- a JSON body with no Content-Type is sent as JSON; a declared type wins
SELECT r->'body'->'headers'->>'content-type' AS sent_type, r->'body'->>'body' AS sent
  FROM queryclaw.api_call(qc_test.url('/echo'), 'POST', NULL, '{"a": 1}') AS r;
SELECT r->'body'->'headers'->>'content-type' AS sent_type
  FROM queryclaw.api_call(qc_test.url('/echo'), 'POST', '{"Content-Type": "text/csv"}', 'a,b') AS r;

-- only whitespace may follow the JSON value: anything else is not JSON
SELECT replace(replace(b, E'\n', '\n'), E'\t', '\t') AS body,
       r->'body'->'headers'->>'content-type' AS sent_type
  FROM unnest(ARRAY[E'{"a": 1} \t\n', '{"a": 1} x', '{"a": 1}{}', '[1] 2']) AS b,
       queryclaw.api_call(qc_test.url('/echo'), 'POST', NULL, b) AS r;

-- request headers: strings, numbers, booleans; empty values
SELECT h.key, h.value
  FROM queryclaw.api_call(qc_test.url('/echo'),
                          headers => '{"X-Token": "abc", "X-Count": 3, "X-Flag": true, "X-Empty": ""}') AS r,
       jsonb_each(r->'body'->'headers') AS h
 WHERE h.key LIKE 'x-%' ORDER BY h.key;
SELECT r->'body'->'headers'->>'user-agent' AS user_agent
  FROM queryclaw.api_call(qc_test.url('/echo')) AS r;
SET queryclaw.user_agent = 'enrichment-job/2';
SELECT r->'body'->'headers'->>'user-agent' AS user_agent
  FROM queryclaw.api_call(qc_test.url('/echo')) AS r;
RESET queryclaw.user_agent;

-- response headers: names lower-cased, repeated headers joined
SELECT r->'headers'->'x-fixture' AS x_fixture, r->'headers'->'x-multi' AS x_multi
  FROM queryclaw.api_call(qc_test.url('/headers')) AS r;

-- text, binary and compressed bodies
SELECT r->'body' AS body, r->'content_type' AS type
  FROM queryclaw.api_call(qc_test.url('/hello')) AS r;
SELECT r->'body' AS body, r->'body_encoding' AS encoding,
       length(decode(r->>'body', 'base64')) AS bytes
  FROM queryclaw.api_call(qc_test.url('/binary')) AS r;
SELECT r->'body' AS body FROM queryclaw.api_call(qc_test.url('/gzip')) AS r;
SELECT r->'body' AS body, r->'truncated' AS truncated
  FROM queryclaw.api_call(qc_test.url('/notjson')) AS r;

-- bad input: methods, headers (CR/LF injection, Host, hop-by-hop), shapes
SELECT queryclaw.api_call(qc_test.url('/echo'), 'TRACE');
SELECT queryclaw.api_call(qc_test.url('/echo'), 'GET x');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"X-A": "1\r\nX-Injected: yes"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"X-A\nB": "1"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"Host": "other.example"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"Transfer-Encoding": "chunked"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"Connection": "close"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"": "x"}');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '["X-A", "1"]');
SELECT queryclaw.api_call(qc_test.url('/echo'), headers => '{"X-A": {"nested": 1}}');
SELECT queryclaw.api_call(qc_test.url('/echo'), max_chars => -5);
SELECT queryclaw.api_call(NULL) IS NULL AS null_in_null_out;

-- a JSON body of any shape is the body as jsonb, a scalar too, repeated
-- keys as jsonb keeps them (the last); the result's members in jsonb's order
SELECT b AS sent, r->'body' AS body, jsonb_typeof(r->'body') AS type
  FROM unnest(ARRAY['42', '"word"', 'true', 'null', '[1, "2", {"a": 1, "a": 3.50}]']) AS b,
       queryclaw.api_call(qc_test.url('/bytes?type=application/json&hex=' || encode(convert_to(b, 'UTF8'), 'hex'))) AS r;
SELECT array(SELECT jsonb_object_keys(r)) AS members, r->'headers'->>'content-type' AS content_type,
       jsonb_typeof(r->'elapsed_ms') AS elapsed
  FROM queryclaw.api_call(qc_test.url('/bytes?type=application/json&hex=' || encode('{}', 'hex'))) AS r;
