--
-- The ways users call llm_chat_tools: an UPDATE that enriches rows with a
-- model that browses, a trigger, and a procedure that commits in batches.
-- With no marker in the prompt, the scripted model browses: it fetches the
-- URL it is given and reads a city from a "... from <city>, <country>" line.
--
CREATE TABLE companies (id int PRIMARY KEY, name text, url text, hq text, summary text);
INSERT INTO companies (id, name, url) VALUES
    (1, 'Fixture Widgets', qc_test.url('/about')),
    (2, 'Ghost Corp', qc_test.url('/status/404')),
    (3, 'Walled Garden', 'http://10.0.0.1/');

-- the enrichment UPDATE of the README: a failing page is not an error, the
-- model is told and the row gets NULL
UPDATE companies SET hq = (queryclaw.llm_chat_tools(
           format('Where is %s headquartered? Its site is %s', name, url),
           output_schema => '{"type":"object","properties":{"city":{"type":"string"}}}'))->'answer'->>'city';
SELECT id, name, hq FROM companies ORDER BY id;

-- a trigger that summarises each new row's page
CREATE FUNCTION companies_summarise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.summary := queryclaw.llm_chat_tools(format('Summarise the page %s', NEW.url),
                                            tools => '{web_fetch}', max_rounds => 3)->>'answer';
    RETURN NEW;
END $$;
CREATE TRIGGER companies_summarise BEFORE INSERT ON companies
    FOR EACH ROW EXECUTE FUNCTION companies_summarise();
INSERT INTO companies (id, name, url) VALUES (4, 'Hello Inc', qc_test.url('/hello'));
SELECT id, qc_test.scrub(summary) AS summary FROM companies WHERE id = 4;
DROP TRIGGER companies_summarise ON companies;

-- a procedure that enriches in batches and commits after each one
CREATE PROCEDURE companies_enrich(batch int) LANGUAGE plpgsql AS $$
DECLARE
    done int;
BEGIN
    LOOP
        UPDATE companies
           SET summary = queryclaw.llm_chat_tools(format('Summarise the page %s', url),
                                                  tools => '{web_fetch}')->>'answer'
         WHERE id IN (SELECT id FROM companies WHERE summary IS NULL ORDER BY id LIMIT batch);
        GET DIAGNOSTICS done = ROW_COUNT;
        RAISE NOTICE 'summarised % rows', done;
        EXIT WHEN done = 0;
        COMMIT;
    END LOOP;
END $$;
CALL companies_enrich(2);
SELECT id, left(qc_test.scrub(summary), 60) AS summary FROM companies ORDER BY id;

DROP PROCEDURE companies_enrich(int);
DROP FUNCTION companies_summarise();
DROP TABLE companies;
