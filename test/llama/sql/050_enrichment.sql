--
-- An enrichment whose request is a model's, against llama-server: the
-- worker feeds it, the model's answer to the output_schema is written into
-- a column, the model's tokens are counted on the enrichment.
--
CREATE TABLE llama_places (id int PRIMARY KEY, name text, city text);
INSERT INTO llama_places VALUES (1, 'here'), (2, 'there');
SELECT queryclaw.create_enrichment('llama_places', 'llama_places',
    request => $$queryclaw.llm_request('Where is it?', tools => '{web_fetch}',
                   output_schema => '{"type": "object", "properties": {"city": {"type": "string"}},
                                      "required": ["city"], "additionalProperties": false}')$$,
    apply => $$city = result #>> '{answer,city}'$$);
DO $$
BEGIN
    FOR i IN 1 .. 1200 LOOP
        EXIT WHEN (SELECT stale + running FROM queryclaw.enrichments WHERE name = 'llama_places') = 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
-- both rows ask the same: one call
SELECT id, city FROM llama_places ORDER BY id;
SELECT done, failed, calls, calls_saved, tokens > 0 AS tokens_counted, last_error
  FROM queryclaw.enrichments WHERE name = 'llama_places';
SET client_min_messages = warning;
DROP TABLE llama_places CASCADE;
