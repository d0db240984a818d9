--
-- The ways users call it: an UPDATE that enriches a table, a trigger that
-- fills a column through api_call on INSERT, and a procedure that enriches
-- in batches with COMMIT between them.
--
CREATE TABLE products (id int PRIMARY KEY, path text, page text, info jsonb);
INSERT INTO products
SELECT g, CASE WHEN g % 5 = 0 THEN '/status/404' ELSE '/json' END FROM generate_series(1, 10) g;

-- one UPDATE: api_call never raises on HTTP errors, so one bad row does not
-- abort the statement
UPDATE products SET info = queryclaw.api_call(qc_test.url(path));
SELECT id, info->'status' AS status, info->'body'->>'name' AS name
  FROM products ORDER BY id;

-- web_fetch raises on an HTTP error, so guard it on the API result
UPDATE products SET page = queryclaw.web_fetch(qc_test.url('/hello'))
 WHERE (info->>'ok')::boolean;
SELECT count(page) AS pages, count(*) FILTER (WHERE page IS NULL) AS skipped FROM products;

-- a trigger that enriches each new row
CREATE FUNCTION products_enrich() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.info := queryclaw.api_call(qc_test.url(NEW.path));
    RETURN NEW;
END $$;
CREATE TRIGGER products_enrich BEFORE INSERT ON products
    FOR EACH ROW EXECUTE FUNCTION products_enrich();
INSERT INTO products (id, path) VALUES (100, '/json'), (101, '/status/500');
SELECT id, info->'status' AS status, info->'ok' AS ok FROM products WHERE id >= 100 ORDER BY id;
DROP TRIGGER products_enrich ON products;

-- a procedure that works in batches and commits after each one, so a long
-- job keeps what it has done
CREATE PROCEDURE enrich_in_batches(batch int) LANGUAGE plpgsql AS $$
DECLARE
    done int;
BEGIN
    LOOP
        UPDATE products SET page = queryclaw.web_fetch(qc_test.url('/text-plain'), max_chars => 8)
         WHERE id IN (SELECT id FROM products WHERE page IS NULL AND (info->>'ok')::boolean
                      ORDER BY id LIMIT batch);
        GET DIAGNOSTICS done = ROW_COUNT;
        RAISE NOTICE 'enriched % rows', done;
        EXIT WHEN done = 0;
        COMMIT;
    END LOOP;
END $$;
UPDATE products SET page = NULL;
CALL enrich_in_batches(3);
SELECT count(page) AS enriched, min(page) AS sample FROM products;

DROP PROCEDURE enrich_in_batches(int);
DROP FUNCTION products_enrich();
DROP TABLE products;
