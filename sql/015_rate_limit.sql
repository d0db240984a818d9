--
-- queryclaw.max_calls_per_hour: calls per role in any hour, counted in
-- shared memory; over the limit a call is refused (53400) before anything
-- is sent, and the refusal has its audit row.
--
SELECT qc_test.audit_flush();
TRUNCATE queryclaw.audit_log;
SELECT qc_test.reset_requests();
-- records lost before (014_durable loses one on purpose)
SELECT lost AS lost_before FROM queryclaw.audit_status() \gset
CREATE ROLE qc_carol LOGIN;
CREATE ROLE qc_dave LOGIN;
GRANT USAGE ON SCHEMA qc_test TO qc_carol, qc_dave;
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text),
                          queryclaw.web_fetch_many(text[], text, integer) TO qc_carol, qc_dave;

-- three calls, then the fourth is refused
SET queryclaw.max_calls_per_hour = 3;
SET ROLE qc_carol;
SELECT count(queryclaw.web_fetch(qc_test.url('/hello'))) AS calls FROM generate_series(1, 3);
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
-- each role has its own count; a call counts once, whatever the number of
-- redirects it follows (/chain/3 is four requests)
SET ROLE qc_dave;
SELECT length(queryclaw.web_fetch(qc_test.url('/chain/3'))) AS chain_1,
       length(queryclaw.web_fetch(qc_test.url('/chain/3'))) AS chain_2,
       length(queryclaw.web_fetch(qc_test.url('/chain/3'))) AS chain_3;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$);
RESET ROLE;
RESET queryclaw.max_calls_per_hour;
-- the refused calls sent nothing: 3 + 3 x 4 requests
SELECT qc_test.requests_served() AS requests;

-- in a batch, each request counts: those over the limit get an error row
CREATE ROLE qc_eve;
GRANT USAGE ON SCHEMA qc_test TO qc_eve;
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch_many(text[], text, integer) TO qc_eve;
SET queryclaw.max_calls_per_hour = 3;
SET ROLE qc_eve;
SELECT ord, status, content, error
  FROM queryclaw.web_fetch_many(array_fill(qc_test.url('/hello'), ARRAY[5]));
RESET ROLE;
RESET queryclaw.max_calls_per_hour;

-- check_url's lookups count like calls, and over the limit it is refused
-- (53400) before looking anything up
CREATE ROLE qc_frank;
GRANT USAGE ON SCHEMA qc_test TO qc_frank;
GRANT EXECUTE ON FUNCTION queryclaw.web_fetch(text, text, integer, text),
                          queryclaw.check_url(text) TO qc_frank;
SET queryclaw.max_calls_per_hour = 3;
SET ROLE qc_frank;
SELECT queryclaw.check_url(qc_test.url('/hello'))->>'allowed' AS check_1,
       queryclaw.check_url('http://10.0.0.1/')->>'allowed' AS check_2;
SELECT length(queryclaw.web_fetch(qc_test.url('/hello'))) AS call_3;
SELECT qc_test.try($$SELECT queryclaw.check_url(qc_test.url('/hello'))$$) AS check_4;
SELECT qc_test.try($$SELECT queryclaw.web_fetch(qc_test.url('/hello'))$$) AS call_5;
RESET ROLE;
RESET queryclaw.max_calls_per_hour;

-- the refusals are audited
SELECT qc_test.audit_flush();
SELECT role, func, outcome, reason, status
  FROM queryclaw.audit_log WHERE role IN ('qc_carol', 'qc_dave', 'qc_eve', 'qc_frank') ORDER BY role, outcome, id;

-- a superuser sets the limit per role; the count is shared by all the
-- role's sessions: a new session of carol's has no call left this hour
ALTER ROLE qc_carol SET queryclaw.max_calls_per_hour = 3;
CREATE EXTENSION dblink;
SELECT format('host=%s port=%s dbname=%s user=qc_carol', current_setting('unix_socket_directories'),
              current_setting('port'), current_database()) AS as_carol \gset
SELECT format('SELECT qc_test.try(%L)', format('SELECT queryclaw.web_fetch(%L)', qc_test.url('/hello'))) AS carol_calls \gset
SELECT dblink_connect('carol', :'as_carol') AS connected;
SELECT * FROM dblink('carol', 'SHOW queryclaw.max_calls_per_hour') AS t(max_calls_per_hour text);
SELECT * FROM dblink('carol', :'carol_calls') AS t(result text);
SELECT dblink_disconnect('carol');

-- 0 means no limit
ALTER ROLE qc_carol SET queryclaw.max_calls_per_hour = 0;
SELECT dblink_connect('carol', :'as_carol') AS connected;
SELECT * FROM dblink('carol', :'carol_calls') AS t(result text);
SELECT dblink_disconnect('carol');
DROP EXTENSION dblink;

SELECT qc_test.audit_flush();
SELECT lost - :lost_before AS lost FROM queryclaw.audit_status();
DROP OWNED BY qc_carol, qc_dave, qc_eve, qc_frank;
DROP ROLE qc_carol, qc_dave, qc_eve, qc_frank;
