--
-- web_search against the fake SearXNG API of test/fixture/llm_server.py,
-- as a SQL function and as a tool.  Like the model's endpoint, the search
-- API is the DBA's and trusted: its port is not in local_allowlist.
-- Failed requests are retried (023_llm_providers); here, after a few ms.
--
SET queryclaw.retry_base_delay = '5ms';
SELECT * FROM queryclaw.web_search('hello world', 3);
SELECT count(*) AS default_results FROM queryclaw.web_search('hello world');
SELECT count(*) AS results FROM queryclaw.web_search('empty');
-- the query is percent-encoded as UTF-8
SELECT title, url FROM queryclaw.web_search('café & crème?', 1);
SELECT count(*) AS rows FROM queryclaw.web_search(NULL);

-- a search_url with a query string of its own gets &q=...&format=json
SELECT set_config('queryclaw.search_url', current_setting('qc_test.llm_base') || '/search?engines=fake', false) IS NOT NULL AS set;
SELECT snippet FROM queryclaw.web_search('params', 1);
RESET queryclaw.search_url;

-- the API key goes out as a bearer token and never comes back
SET queryclaw.search_api_key = 'search-key-0123';
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT snippet FROM queryclaw.web_search('whoami', 1);
SELECT qc_test.audit_flush();
SELECT func, qc_test.scrub(url) AS url, status, outcome, detail->'request_headers' AS headers,
       detail->'results' AS results
  FROM queryclaw.audit_log;
RESET queryclaw.search_api_key;

-- failures
SELECT qc_test.try($$SELECT * FROM queryclaw.web_search('error')$$);
SELECT qc_test.try($$SELECT * FROM queryclaw.web_search('notjson')$$);
SELECT queryclaw.web_search('x', 0);
SET queryclaw.search_url = '';
SELECT queryclaw.web_search('x');
RESET queryclaw.search_url;
SELECT set_config('queryclaw.search_url', current_setting('qc_test.llm_base') || '/nowhere', false) IS NOT NULL AS set;
SELECT qc_test.try($$SELECT * FROM queryclaw.web_search('x')$$);
RESET queryclaw.search_url;
SET queryclaw.enabled = off;
SELECT qc_test.try($$SELECT * FROM queryclaw.web_search('x')$$);
RESET queryclaw.enabled;
-- search_url is checked when it is set
SET queryclaw.search_url = 'file:///etc/passwd';

-- as a tool: the model searches and reads the results
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT r->>'answer' AS answer, r->'tool_calls'->0->'arguments' AS arguments, r->'tool_calls'->0->'ok' AS ok
  FROM queryclaw.llm_chat_tools('SCENARIO:search', tools => '{web_search}') AS r;
SELECT qc_test.audit_flush();
SELECT func, outcome, detail->'round' AS round, detail->'results' AS results,
       detail ? 'llm_run' AS names_run
  FROM queryclaw.audit_log ORDER BY id;

-- EXECUTE is needed, directly and for the tool
CREATE ROLE qc_dave;
GRANT EXECUTE ON FUNCTION queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb) TO qc_dave;
SET ROLE qc_dave;
SELECT * FROM queryclaw.web_search('x');
SELECT queryclaw.llm_chat_tools('SCENARIO:search', tools => '{web_search}');
RESET ROLE;
DROP OWNED BY qc_dave;
DROP ROLE qc_dave;
