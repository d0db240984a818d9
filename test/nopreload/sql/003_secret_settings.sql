--
-- Without shared_preload_libraries, the check that refuses secrets for a
-- role, a database or a function only runs in sessions that have loaded
-- the library.  Elsewhere such a value is accepted, and readable by every
-- role in pg_db_role_setting; a session that loads the library then
-- refuses it with a warning, and does not use it.
--
-- this session has not loaded the library: accepted, and readable by any
-- role
ALTER DATABASE :"DBNAME" SET queryclaw.search_api_key = 'sk-db-0123';
CREATE ROLE qc_reader;
SET ROLE qc_reader;
SELECT setting FROM pg_db_role_setting, unnest(setconfig) AS setting
 WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND setting LIKE 'queryclaw.%';
RESET ROLE;
DROP ROLE qc_reader;

-- a new session starts with it; loading the library refuses it
\c
SELECT queryclaw.html_to_text('<p>loaded</p>') AS loaded;
SELECT current_setting('queryclaw.search_api_key') = '' AS not_used;

-- and now that the library is loaded, the check runs
ALTER DATABASE :"DBNAME" SET queryclaw.llm_api_key = 'sk-db-0123';

ALTER DATABASE :"DBNAME" RESET queryclaw.search_api_key;
