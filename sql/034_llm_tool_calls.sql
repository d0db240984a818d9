--
-- One model reply cannot fan out without limit: the first
-- queryclaw.llm_max_tool_calls calls of a reply run (16 by default), each
-- of the others gets an error result the model can read, and shows in
-- tool_calls with ok false.
--
SELECT qc_test.audit_flush() AS flushed;
SELECT coalesce(max(id), 0) AS audit_mark FROM queryclaw.audit_log \gset

SHOW queryclaw.llm_max_tool_calls;
SELECT context, min_val, max_val FROM pg_settings WHERE name = 'queryclaw.llm_max_tool_calls';

-- 40 calls in one reply: 16 run (and only 16 requests are sent), 24 not
SELECT qc_test.reset_requests();
SELECT r->>'answer' AS answer, r->'rounds' AS rounds, jsonb_array_length(r->'tool_calls') AS calls,
       (SELECT count(*) FROM jsonb_array_elements(r->'tool_calls') AS c WHERE (c->'ok')::boolean) AS ok,
       qc_test.scrub(r->'tool_calls'->15->>'arguments') AS sixteenth,
       (r->'tool_calls'->16) - 'arguments' AS seventeenth
  FROM queryclaw.llm_chat_tools('SCENARIO:fan_out:40 URL:' || qc_test.url('/hello'), '{web_fetch}') AS r;
SELECT qc_test.requests_served() AS requests_served;
SELECT qc_test.audit_flush() AS flushed;
SELECT func, count(*) FROM queryclaw.audit_log
 WHERE id > :audit_mark AND url NOT LIKE '%/stats%' GROUP BY func ORDER BY func;

-- a lower setting cuts sooner; 0 is not allowed
SET queryclaw.llm_max_tool_calls = 2;
SELECT r->>'answer' AS answer
  FROM queryclaw.llm_chat_tools('SCENARIO:fan_out:5', '{check_url}') AS r;
SET queryclaw.llm_max_tool_calls = 0;
RESET queryclaw.llm_max_tool_calls;

-- an ordinary role cannot raise it
CREATE ROLE qc_fan_out;
SET ROLE qc_fan_out;
SET queryclaw.llm_max_tool_calls = 1000;
RESET ROLE;
DROP ROLE qc_fan_out;
