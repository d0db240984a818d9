--
-- llm_embed against llama-server --embeddings (the model's 64 dimensions,
-- mean pooling, normalised to length 1 by the server).  The values
-- themselves depend on the server's arithmetic: only their shape is shown.
--
CREATE FUNCTION qc_test.norm(v real[]) RETURNS numeric LANGUAGE sql IMMUTABLE
AS $$ SELECT round(sqrt(sum(x * x))::numeric, 3) FROM unnest(v) AS x $$;

SELECT array_length(e, 1) AS dims, qc_test.norm(e) AS norm
  FROM queryclaw.llm_embed('where do we ship from?') AS e;
-- the same text, the same vector; another text, another
SELECT queryclaw.llm_embed('hello') = queryclaw.llm_embed('hello') AS same,
       queryclaw.llm_embed('hello') = queryclaw.llm_embed('world') AS other_same;
-- the batch form: one row per input, in order, a NULL input not sent
SELECT ord, array_length(embedding, 1) AS dims, qc_test.norm(embedding) AS norm,
       embedding = queryclaw.llm_embed('beta') AS is_beta
  FROM queryclaw.llm_embed(ARRAY['alpha', 'beta', NULL, 'gamma'])
 ORDER BY ord;
-- each request audited, with the tokens the server counted
SELECT qc_test.audit_flush();
SELECT outcome, status, detail->'inputs' AS inputs, (detail->>'total_tokens')::int > 0 AS counted
  FROM queryclaw.audit_log WHERE func = 'llm_embed' ORDER BY id DESC LIMIT 1;
