--
-- llm_embed(): embeddings from an OpenAI-compatible /embeddings endpoint
-- (the scripted model's vectors are deterministic: texts sharing words are
-- near), and queryclaw.max_tokens_per_day with queryclaw.my_budget.
--
SELECT qc_test.audit_flush();
CREATE ROLE qc_embedder;
CREATE ROLE qc_spender;
GRANT USAGE ON SCHEMA qc_test TO qc_embedder, qc_spender;
GRANT EXECUTE ON FUNCTION queryclaw.llm_embed(text, text), queryclaw.llm_embed(text[], text),
                          queryclaw.llm_chat_tools(text, text[], text, text, integer, jsonb)
   TO qc_spender;

-- refusals first: no EXECUTE; no endpoint; an endpoint error
SET ROLE qc_embedder;
SELECT qc_test.try($$SELECT queryclaw.llm_embed('hello')$$);
RESET ROLE;
SET queryclaw.llm_url = '';
SELECT qc_test.try($$SELECT queryclaw.llm_embed('hello')$$);
RESET queryclaw.llm_url;
SELECT qc_test.try($$SELECT queryclaw.llm_embed('EMBED_ERROR')$$);
-- a passing failure is retried, each attempt audited
SET queryclaw.retry_base_delay = '10ms';
SELECT array_length(queryclaw.llm_embed('EMBED_FLAKY:one'), 1) AS dims_after_retry;
RESET queryclaw.retry_base_delay;
SELECT qc_test.audit_flush();
SELECT outcome, status, detail->'attempt' AS attempt FROM queryclaw.audit_log
 WHERE func = 'llm_embed' ORDER BY id DESC LIMIT 2;
-- the embeddings key is a secret: never kept where every role can read it
SELECT qc_test.try($$ALTER ROLE qc_spender SET queryclaw.embed_api_key = 'sk-role-embed-0123'$$);

-- over its token budget a role is refused (53400) before anything is sent,
-- for embeddings and chat alike; each request counts the usage reported
SET queryclaw.max_tokens_per_day = 5;
SET ROLE qc_spender;
SELECT * FROM queryclaw.my_budget;
SELECT array_length(queryclaw.llm_embed('one two three four five six'), 1) AS dims;
SELECT role, tokens_per_day, tokens_used, tokens_left FROM queryclaw.my_budget;
SELECT qc_test.try($$SELECT queryclaw.llm_embed('seven')$$);
SELECT qc_test.try($$SELECT queryclaw.llm_chat_tools('SCENARIO:plain', tools => NULL)$$);
RESET ROLE;
-- with no budget, nothing is refused, and tokens are still counted
RESET queryclaw.max_tokens_per_day;
SET ROLE qc_spender;
SELECT queryclaw.llm_chat_tools('SCENARIO:plain', tools => NULL)->>'answer' AS answer;
SELECT tokens_per_day, tokens_used > 6 AS counted, tokens_left FROM queryclaw.my_budget;
RESET ROLE;
SELECT qc_test.audit_flush();
SELECT func, outcome, reason, status FROM queryclaw.audit_log
 WHERE role = 'qc_spender' ORDER BY id;

-- embeddings: one text, and many in groups of embed_batch_size, in order;
-- a NULL input gives a NULL embedding and is not sent
SELECT queryclaw.llm_embed('PostgreSQL extensions') AS embedding;
SET queryclaw.embed_batch_size = 2;
CREATE TABLE inputs AS
SELECT ARRAY['red apples', 'green apples', NULL, 'blue sky', 'apples'] AS a;
CREATE TABLE batched AS SELECT e.* FROM inputs, queryclaw.llm_embed(a) AS e;
RESET queryclaw.embed_batch_size;
SELECT qc_test.audit_flush();
SELECT func, method, qc_test.scrub(url) AS url, outcome, detail->'inputs' AS inputs,
       detail->'total_tokens' AS tokens, detail->>'model' AS model
  FROM queryclaw.audit_log WHERE func = 'llm_embed' AND role = current_user ORDER BY id DESC LIMIT 3;
SELECT b.ord, array_length(b.embedding, 1) AS dims,
       b.embedding IS NOT DISTINCT FROM queryclaw.llm_embed(a[b.ord]) AS same_as_one_by_one
  FROM batched b, inputs ORDER BY b.ord;
DROP TABLE inputs, batched;

-- nearest texts by cosine similarity, on real[]
CREATE TABLE docs (id int, body text, embedding real[]);
INSERT INTO docs (id, body) VALUES (1, 'red apples and pears'), (2, 'the blue sky at night'),
                                   (3, 'green apples');
UPDATE docs SET embedding = e.embedding
  FROM queryclaw.llm_embed(ARRAY(SELECT body FROM docs ORDER BY id)) AS e WHERE e.ord = docs.id;
CREATE FUNCTION cosine(a real[], b real[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT sum(x * y) / sqrt(sum(x * x) * sum(y * y))
      FROM unnest(a, b) AS t(x, y) $$;
SELECT id, body FROM docs
 ORDER BY cosine(embedding, queryclaw.llm_embed('apples')) DESC, id LIMIT 2;
-- with pgvector, the same through a cast to vector (when it is installed)
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector') THEN
        CREATE EXTENSION IF NOT EXISTS vector;
        ALTER TABLE docs ADD COLUMN v vector;
        UPDATE docs SET v = embedding::vector;
        IF (SELECT array_agg(id ORDER BY v <=> queryclaw.llm_embed('apples')::vector, id) FROM docs)
           <> (SELECT array_agg(id ORDER BY cosine(embedding, queryclaw.llm_embed('apples')) DESC, id) FROM docs) THEN
            RAISE EXCEPTION 'pgvector orders the documents differently';
        END IF;
        ALTER TABLE docs DROP COLUMN v;
        DROP EXTENSION vector;
    END IF;
END $$;
DROP TABLE docs;
DROP FUNCTION cosine(real[], real[]);

-- the key: llm_api_key goes only to the LLM endpoint's host; embed_api_key
-- anywhere (model auth-probe answers [1] when a key came)
SELECT queryclaw.llm_embed('x', 'auth-probe') AS same_host_gets_llm_key;
SELECT regexp_replace(current_setting('qc_test.llm_base'), '127\.0\.0\.1', 'localhost') || '/v1' AS other_host \gset
SET queryclaw.embed_url = :'other_host';
SELECT queryclaw.llm_embed('x', 'auth-probe') AS other_host_gets_no_key;
SET queryclaw.embed_api_key = 'sk-embed-key';
SELECT queryclaw.llm_embed('x', 'auth-probe') AS other_host_gets_embed_key;
-- the embeddings key is never stored either: a statement holding it is
-- audited with the key replaced
SELECT queryclaw.llm_embed('sk-embed-key', 'auth-probe') AS key_in_statement;
SELECT qc_test.audit_flush();
SELECT query FROM queryclaw.audit_log WHERE func = 'llm_embed' ORDER BY id DESC LIMIT 1;
-- in the header llm_api_key_header names, as the model's key (Azure OpenAI)
SET queryclaw.llm_api_key_header = 'api-key';
SELECT queryclaw.llm_embed('x', 'auth-probe') AS embed_key_in_named_header;
RESET queryclaw.llm_api_key_header;
RESET queryclaw.embed_api_key;
RESET queryclaw.embed_url;

DROP OWNED BY qc_embedder, qc_spender;
DROP ROLE qc_embedder, qc_spender;
