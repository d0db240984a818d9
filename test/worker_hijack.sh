#!/usr/bin/env bash
# test/worker_hijack.sh: the audit worker cannot be steered by the database
# it writes (run by test/run.sh on its preloaded cluster, after the suite).
#
# The attacker owns queryclaw.database but is no superuser.  Owners may
# attach settings to their database (ALTER DATABASE ... SET), and every
# session that connects there, the audit worker's included, starts with
# them.  Two attacks, each followed by a restart since the worker reads
# its settings when it starts:
#
# 1. search_path: the owner's schema first, holding the operators the
#    retention DELETE compares with (= on bigint, < on timestamptz) and an
#    unnest, each of which would make its caller grant the owner SUPERUSER
#    and leave a mark, then do its job so that nothing looks wrong;
# 2. the settings the worker's transactions depend on:
#    default_transaction_read_only, statement_timeout, lock_timeout,
#    default_transaction_isolation, row_security...
#
# and then, since the worker pins what its statements depend on whatever
# the server's configuration says, the same settings set by a superuser
# with ALTER SYSTEM, after a reload and after a restart.
#
# After each, the worker must write a burst of audit rows (held up a moment
# by a lock, so that they are one batch) and apply the retention, and the
# owner must still be no superuser, no mark left, no failure of the worker
# in the server log.  Prints TAP-style "ok - ..." / "not ok - ..." lines.
#
# Arguments: the work directory, the data directory and the bin directory
# of the running cluster (test/lib.sh's QC_WORK, QC_PGDATA, QC_BINDIR).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
QC_WORK=$1 QC_PGDATA=$2 QC_BINDIR=$3
db=queryclaw_regression
owner=qc_db_owner
log="$QC_WORK/postgres.log"

# The test's own sessions override whatever the attacker set on the
# database (settings from the client outrank the database's).
safe_options="-c search_path=public -c default_transaction_read_only=off -c statement_timeout=0
 -c lock_timeout=0 -c idle_in_transaction_session_timeout=0
 -c default_transaction_isolation=read\\ committed -c row_security=on"

# Run SQL (stdin or -c) as role $1 in the database; rows unaligned.
sql_as() {
	local role=$1
	shift
	qc_as_pg env PGOPTIONS="$safe_options" "$QC_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 \
		-h "$QC_WORK" -p 5432 -d "$db" -U "$role" "$@"
}

# Restart, wait for the worker, and note where the log stands.
restart() {
	qc_restart_cluster || { echo "not ok - the server restarted"; exit 1; }
	sql_as postgres -c "DO \$\$ BEGIN FOR i IN 1..750 LOOP
		EXIT WHEN (SELECT worker_pid FROM queryclaw.audit_status()) IS NOT NULL;
		PERFORM pg_sleep(0.02); END LOOP; END \$\$" >/dev/null
	log_start=$(stat -c %s "$log")
}

# Rows of two months ago, a burst of calls while the table is locked, a
# configuration reload (the worker applies the retention at once then),
# and the checks.  $1 names the attack.
attack_and_check() {
	local what=$1
	sql_as postgres >/dev/null <<'SQL'
INSERT INTO queryclaw.audit_log (at, role, pid, func, method, url, outcome)
SELECT now() - interval '60 days', 'qc_expired', 1, 'web_fetch', 'GET', 'https://example.com/old', 'ok'
  FROM generate_series(1, 20);
BEGIN;
LOCK TABLE queryclaw.audit_log IN SHARE MODE;
SELECT count(error) FROM queryclaw.web_fetch_many(
    ARRAY['http://10.0.0.1/?hijack=1', 'http://10.0.0.1/?hijack=2', 'http://10.0.0.1/?hijack=3',
          'http://10.0.0.1/?hijack=4', 'http://10.0.0.1/?hijack=5']);
SELECT pg_sleep(0.2);
COMMIT;
SELECT pg_reload_conf();
DO $$ BEGIN FOR i IN 1..750 LOOP
    EXIT WHEN (SELECT count(*) FROM queryclaw.audit_log WHERE role = 'qc_expired') = 0
          AND (SELECT count(*) FROM queryclaw.audit_log WHERE url LIKE '%hijack=%') = 5;
    PERFORM pg_sleep(0.02); END LOOP; END $$;
SQL
	qc_check "$what: the worker wrote the calls' audit rows" \
		"$(sql_as postgres -c "SELECT count(*) FROM queryclaw.audit_log WHERE url LIKE '%hijack=%'")" 5
	qc_check "$what: the worker applied the retention" \
		"$(sql_as postgres -c "SELECT count(*) FROM queryclaw.audit_log WHERE role = 'qc_expired'")" 0
	qc_check "$what: the database owner is no superuser" \
		"$(sql_as postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = '$owner'")" f
	qc_check "$what: no function of the database owner ran in the worker" \
		"$(sql_as postgres -c "SELECT coalesce(string_agg(DISTINCT what || ' as ' || by_role, ', '), 'none') FROM evil.marker")" none
	qc_check "$what: the server log shows no failure of the worker" \
		"$(tail -c +$((log_start + 1)) "$log" |
			grep -E '(WARNING|ERROR|FATAL|PANIC): +queryclaw audit writer|"queryclaw audit writer".*exited' |
			head -1)" ""
	sql_as postgres -c "DELETE FROM queryclaw.audit_log WHERE url LIKE '%hijack=%'"
}

sql_as postgres >/dev/null <<SQL || { echo "not ok - the attack was set up"; exit 1; }
CREATE ROLE $owner LOGIN;
ALTER DATABASE $db OWNER TO $owner;
ALTER SYSTEM SET queryclaw.audit_retention = '30 days';
SQL

# 1. The owner's schema first in the database's search_path, holding what
# the worker's statements could resolve to.
sql_as $owner >/dev/null <<SQL || { echo "not ok - the attack was set up"; exit 1; }
CREATE SCHEMA evil;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
CREATE TABLE evil.marker (what text, by_role text);
GRANT INSERT ON evil.marker TO PUBLIC;
-- leave a mark, and try to make the owner a superuser
CREATE FUNCTION evil.take_over(what text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO evil.marker VALUES (what, current_user);
    BEGIN
        ALTER ROLE $owner SUPERUSER;
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
END \$\$;
GRANT EXECUTE ON FUNCTION evil.take_over(text) TO PUBLIC;
CREATE FUNCTION evil.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM evil.take_over('='); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.eq);
CREATE FUNCTION evil.lt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM evil.take_over('<'); RETURN \$1 OPERATOR(pg_catalog.<) \$2; END \$\$;
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.lt);
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS \$\$
BEGIN PERFORM evil.take_over('unnest'); RETURN QUERY SELECT * FROM pg_catalog.unnest(\$1); END \$\$;
ALTER DATABASE $db SET search_path = evil, pg_catalog, public;
SQL
restart
attack_and_check "search_path"

# 2. The settings the worker's transactions depend on.
sql_as $owner >/dev/null <<SQL || { echo "not ok - the attack was set up"; exit 1; }
ALTER DATABASE $db SET default_transaction_read_only = on;
ALTER DATABASE $db SET statement_timeout = 1;
ALTER DATABASE $db SET lock_timeout = 1;
ALTER DATABASE $db SET idle_in_transaction_session_timeout = 1;
ALTER DATABASE $db SET default_transaction_isolation = 'serializable';
ALTER DATABASE $db SET row_security = off;
SQL
restart
attack_and_check "transaction settings"

# 3. The same settings in the server's configuration (a superuser's, but
# the worker pins what its statements depend on), applied by a reload,
# then by a restart.  First without the database's: the worker would keep
# the server's values it set back, whatever a reload says.
sql_as $owner >/dev/null <<SQL || { echo "not ok - the attack was set up"; exit 1; }
ALTER DATABASE $db RESET search_path;
ALTER DATABASE $db RESET default_transaction_read_only;
ALTER DATABASE $db RESET statement_timeout;
ALTER DATABASE $db RESET lock_timeout;
ALTER DATABASE $db RESET idle_in_transaction_session_timeout;
ALTER DATABASE $db RESET default_transaction_isolation;
ALTER DATABASE $db RESET row_security;
SQL
restart
sql_as postgres >/dev/null <<SQL || { echo "not ok - the attack was set up"; exit 1; }
ALTER SYSTEM SET search_path = evil, pg_catalog, public;
ALTER SYSTEM SET default_transaction_read_only = on;
ALTER SYSTEM SET statement_timeout = 1;
ALTER SYSTEM SET lock_timeout = 1;
ALTER SYSTEM SET default_transaction_isolation = 'serializable';
ALTER SYSTEM SET row_security = off;
SELECT pg_reload_conf();
SQL
# the postmaster has read the file once a new session starts with it (in
# another database: this one's settings outrank the file), and it signals
# the worker at once then
for _ in $(seq 150); do
	[ "$(qc_as_pg env PGOPTIONS="-c statement_timeout=0" "$QC_BINDIR/psql" -X -At -h "$QC_WORK" -p 5432 -d postgres -c 'SHOW lock_timeout')" = 1ms ] && break
	sleep 0.1
done
sleep 0.2
log_start=$(stat -c %s "$log")
attack_and_check "server settings, reloaded"
restart
attack_and_check "server settings, at start"

# Leave the server and the database as they were.
sql_as postgres >/dev/null <<SQL
ALTER SYSTEM RESET search_path;
ALTER SYSTEM RESET default_transaction_read_only;
ALTER SYSTEM RESET statement_timeout;
ALTER SYSTEM RESET lock_timeout;
ALTER SYSTEM RESET default_transaction_isolation;
ALTER SYSTEM RESET row_security;
ALTER DATABASE $db RESET ALL;
DROP SCHEMA evil CASCADE;
ALTER DATABASE $db OWNER TO postgres;
DROP ROLE $owner;
ALTER SYSTEM RESET queryclaw.audit_retention;
SELECT pg_reload_conf();
SQL
