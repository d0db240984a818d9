--
-- A library newer than the database's SQL objects: release 0.1's audit_log
-- does not accept the outcome "checked", so until ALTER EXTENSION UPDATE
-- check_url's rows say "ok" there, and check_url works all the same.
--
DROP EXTENSION queryclaw_ext;
CREATE EXTENSION queryclaw_ext VERSION '0.1';
SELECT queryclaw.check_url(qc_test.url('/before-update'))->>'allowed' AS allowed;
SELECT queryclaw.check_url('http://10.0.0.1/refused')->>'allowed' AS allowed;
ALTER EXTENSION queryclaw_ext UPDATE;
SELECT queryclaw.check_url(qc_test.url('/after-update'))->>'allowed' AS allowed;
SELECT func, split_part(url, '/', 4) AS path, outcome, reason
  FROM queryclaw.audit_log ORDER BY id;
