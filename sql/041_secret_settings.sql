--
-- Secrets (the API keys, a proxy URL with credentials) are never kept
-- where every role can read them: values set for a role or a database are
-- kept in pg_db_role_setting, values set for a function in pg_proc.  With
-- the library preloaded, every session refuses them there; postgresql.conf
-- and ALTER SYSTEM keep them.  make installcheck runs this: it changes
-- only its own role and the regression database (and the library it needs
-- is loaded into each session there).
--
CREATE ROLE regress_qc_secret_role;
ALTER ROLE regress_qc_secret_role SET queryclaw.llm_api_key = 'sk-role-0123';
ALTER ROLE regress_qc_secret_role IN DATABASE :"DBNAME" SET queryclaw.search_api_key = 'sk-role-0123';
ALTER DATABASE :"DBNAME" SET queryclaw.llm_api_key = 'sk-db-0123';
ALTER ROLE ALL SET queryclaw.search_api_key = 'sk-all-0123';
CREATE FUNCTION qc_test.with_key() RETURNS int LANGUAGE sql
    SET queryclaw.llm_api_key = 'sk-function-0123' AS 'SELECT 1';
ALTER ROLE regress_qc_secret_role SET queryclaw.proxy = 'http://user:pw@127.0.0.1:3128';

-- an empty key (send none) and a proxy without credentials hold no
-- secret, and may differ per role
ALTER ROLE regress_qc_secret_role SET queryclaw.llm_api_key = '';
ALTER ROLE regress_qc_secret_role SET queryclaw.proxy = 'http://127.0.0.1:3128';

-- nothing secret was kept
SELECT coalesce(r.rolname, 'ALL') AS role, d.datname IS NOT NULL AS in_database, s.setconfig
  FROM pg_db_role_setting s
  LEFT JOIN pg_roles r ON r.oid = s.setrole
  LEFT JOIN pg_database d ON d.oid = s.setdatabase
 WHERE s.setconfig::text LIKE '%queryclaw.%'
   -- (on a user's server, only the rows this test may have written)
   AND (r.rolname = 'regress_qc_secret_role' OR d.datname = current_database()
        OR s.setconfig::text LIKE '%sk-%');
SELECT count(*) AS functions_with_keys FROM pg_proc WHERE proconfig::text LIKE '%api_key%';

-- a session of a superuser may set them (ALTER SYSTEM, which keeps them
-- in postgresql.auto.conf, is in 041_secret_settings_system)
SET queryclaw.llm_api_key = 'sk-session-0123';
RESET queryclaw.llm_api_key;

-- A value stored before (under release 0.1, or by a session that had not
-- loaded the library) is refused as every session starts, and not used.
-- Stored here behind the check's back, as only a catalog update can.
SET allow_system_table_mods = on;
UPDATE pg_db_role_setting SET setconfig = setconfig || '{queryclaw.llm_api_key=sk-stored-0123}'
 WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND setrole = 0;
RESET allow_system_table_mods;
\c
SELECT current_setting('queryclaw.llm_api_key') <> 'sk-stored-0123' AS not_used;
ALTER DATABASE :"DBNAME" RESET queryclaw.llm_api_key;

ALTER ROLE regress_qc_secret_role RESET ALL;
DROP ROLE regress_qc_secret_role;
