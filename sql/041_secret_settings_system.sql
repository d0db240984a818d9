--
-- ALTER SYSTEM keeps secrets in postgresql.auto.conf, checked as
-- postgresql.conf is (041_secret_settings has where they are refused).
-- make test only: make installcheck does not write the configuration of a
-- user's server.
--
ALTER SYSTEM SET queryclaw.search_api_key = 'sk-system-0123';
ALTER SYSTEM SET queryclaw.proxy = 'http://user:pw@127.0.0.1:3128';
SELECT name, error FROM pg_file_settings
 WHERE name IN ('queryclaw.search_api_key', 'queryclaw.proxy') ORDER BY name;
ALTER SYSTEM RESET queryclaw.search_api_key;
ALTER SYSTEM RESET queryclaw.proxy;
