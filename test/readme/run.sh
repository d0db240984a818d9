#!/usr/bin/env bash
# test/readme/run.sh: every SQL example of README.md and docs/*.md, run as
# written (but docs/citus.md's, which test/citus/ runs on a Citus cluster).
#
# Usage (from test/run.sh, inside its network namespace, with the fixture
# servers of test/run.sh running):
#     test/readme/run.sh WORKDIR BINDIR LLM_PORT
#
# Starts a cluster configured by the README's postgresql.conf block, in
# whose database (queryclaw.database there) the reader's tables are made
# (setup.sql), and test/readme/site.py on ports 80 and 443 of 127.0.0.1,
# where the DNS fixture puts example.com and its subdomains; then runs
# every ```sql block of README.md, then of docs/*.md (run.py).  What the README cannot say for the test is
# set for that database alone: the model and search API are the scripted
# ones of test/fixture/llm_server.py (overriding the README's ALTER SYSTEM,
# as ALTER DATABASE settings do), 127.0.0.1 on ports 80 and 443 is allowed
# (example.com is public in the world the README describes), and the test
# CA is trusted.  Prints "ok - ..." / "not ok - ..." lines.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
QC_WORK=$1
QC_BINDIR=$2
llm_port=$3
tls="$QC_WORK/tls"

# A certificate for example.com and its subdomains from the test CA.
openssl req -newkey rsa:2048 -nodes -subj "/CN=example.com" \
	-keyout "$tls/readme.key" -out "$tls/readme.csr" 2>/dev/null &&
	printf 'subjectAltName=DNS:example.com,DNS:*.example.com\n' >"$tls/readme.ext" &&
	openssl x509 -req -in "$tls/readme.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
		-CAcreateserial -days 2 -extfile "$tls/readme.ext" -out "$tls/readme.pem" 2>/dev/null ||
	{ echo "not ok - could not make the certificate for example.com"; exit 1; }
qc_start_server "$here/site.py" readme-site --port 80 --tls-port 443 \
	--tls-port-file "$QC_WORK/readme-site-tls.port" \
	--tls-cert "$tls/readme.pem" --tls-key "$tls/readme.key" >/dev/null ||
	{ echo "not ok - the README's site did not start"; exit 1; }

conf=$("$QC_PYTHON" "$here/run.py" conf "$QC_ROOT/README.md") || { echo "not ok - $conf"; exit 1; }
db=$(sed -n "s/^queryclaw\.database *= *'\([^']*\)'.*/\1/p" <<<"$conf")
[ -n "$db" ] || { echo "not ok - the README's postgresql.conf block names no queryclaw.database"; exit 1; }
# the site holds ports 80 and 443: it goes with the cluster, so that the
# step can run again in the same namespace
trap 'qc_stop_cluster; kill "$(cat "$QC_WORK/readme-site.pid")" 2>/dev/null' EXIT
qc_start_cluster readme <<<"$conf" || { echo "not ok - a cluster configured as the README says did not start"; exit 1; }
echo "ok - a cluster configured by the README's postgresql.conf block starts"

psql=("$QC_BINDIR/psql" -h "$QC_WORK" -p 5432)
# as root the sessions run as postgres, from / (which it may enter, where
# the tree may be in a directory it cannot), reading SQL on stdin
[ "$(id -u)" -eq 0 ] && psql=(runuser -u postgres -- "${psql[@]}") && cd /
"${psql[@]}" -X -q -v ON_ERROR_STOP=1 -d postgres <<SQL >/dev/null || { echo "not ok - could not set up database $db"; exit 1; }
SELECT format('CREATE DATABASE %I', '$db') WHERE '$db' <> 'postgres' \gexec
ALTER DATABASE "$db" SET queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1';
ALTER DATABASE "$db" SET queryclaw.llm_model = 'fake-model';
ALTER DATABASE "$db" SET queryclaw.llm_api_key = '';
ALTER DATABASE "$db" SET queryclaw.search_url = 'http://127.0.0.1:$llm_port/search';
ALTER DATABASE "$db" SET queryclaw.local_allowlist = '127.0.0.1:80, 127.0.0.1:443';
ALTER DATABASE "$db" SET queryclaw.ca_file = '$tls/ca.pem';
SQL
"${psql[@]}" -X -q -v ON_ERROR_STOP=1 -d "$db" -f - <"$here/setup.sql" >/dev/null ||
	{ echo "not ok - test/readme/setup.sql failed"; exit 1; }

# a session of its own for each block, limited in time: a loop that does
# not end fails rather than hang the test
docs=()
for f in "$QC_ROOT"/docs/*.md; do
	[ "$(basename "$f")" = citus.md ] || docs+=("$f")
done
"$QC_PYTHON" "$here/run.py" run "$QC_ROOT/README.md" "${docs[@]}" -- "${psql[@]}" \
	-d "dbname=$db options='-c statement_timeout=60s'"
rc=$?
# and what they did to the reader's tables
"${psql[@]}" -X -q -At -v ON_ERROR_STOP=1 -d "$db" -f - <"$here/after.sql" || rc=1
exit $rc
