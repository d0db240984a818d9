# test/lib.sh: shared set-up for `make test` and `make demo`.
#
# Sourced, not run.  Installs missing Debian packages, builds and installs
# the extension, and starts loopback servers and a scratch PostgreSQL
# cluster that are all stopped by qc_cleanup (registered as an EXIT trap).
# PostgreSQL refuses to run as root, so as root the cluster runs as the
# "postgres" OS user; as another user it runs as that user.

# The PostgreSQL major this machine's Debian release ships (its "postgresql"
# package), unless QC_PG_MAJOR says otherwise: test/pgroot.sh sets it in the
# roots of other releases.
qc_native_pg_major() {
	local major
	major=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/.*Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -1)
	if [ -z "$major" ]; then
		qc_as_root apt-get update -qq >/dev/null 2>&1
		major=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/.*Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -1)
	fi
	echo "$major"
}
QC_PG_MAJOR=${QC_PG_MAJOR:-$(qc_native_pg_major)}

QC_PACKAGES="make gcc pkg-config python3 python3-brotli openssl postgresql-$QC_PG_MAJOR
 postgresql-server-dev-$QC_PG_MAJOR libcurl4-openssl-dev libcjson-dev libxml2-dev libidn2-dev
 iproute2 util-linux"

# Installed when the package lists know them, skipped otherwise: pgvector
# for the embeddings test's cast to vector (Debian ships it only in some
# releases; the test passes the same without it).
QC_OPTIONAL_PACKAGES="postgresql-$QC_PG_MAJOR-pgvector"

# What the fuzz targets are built with (test/fuzz/): `make fuzz`, and
# `make test` where it builds them (qc_in_pgroot).
QC_FUZZ_PACKAGES="clang-14 libclang-rt-14-dev"

QC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QC_PG_CONFIG=/usr/lib/postgresql/$QC_PG_MAJOR/bin/pg_config
QC_BINDIR=$($QC_PG_CONFIG --bindir 2>/dev/null)
# Debian's interpreter, which has the Debian python3-* modules the servers use
QC_PYTHON=/usr/bin/python3
[ -x "$QC_PYTHON" ] || QC_PYTHON=python3
QC_WORK=""
QC_PGDATA=""
# What qc_start_nginx needs; the benchmarks add it to QC_PACKAGES.
QC_NGINX_PACKAGES="nginx-light libnginx-mod-http-echo"
QC_NGINX_PORT=""

qc_log() { printf '== %s\n' "$*"; }

# Do we run inside one of test/pgroot.sh's roots?  Its stamp is at the top
# of the root.  A root has only the packages pgroot.sh put in it, and no
# network to install more while the tests run.
qc_in_pgroot() { [ -e /.queryclaw-root ]; }

# Run as root: directly when we are root, else through sudo.
qc_as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Run as the cluster's OS user.
# As root, from /: the tree may be in a directory the postgres user cannot
# enter (root's home, a mktemp -d folder), and psql and pg_ctl warn, or
# fail, when they cannot change back to their working directory.
qc_as_pg() {
	if [ "$(id -u)" -eq 0 ]; then (cd / && exec runuser -u postgres -- "$@"); else "$@"; fi
}

# Run SQL (stdin or -c) in database $QC_DB (queryclaw_regression unless
# set) of the running cluster, as the superuser; rows unaligned.
qc_sql() {
	qc_as_pg "$QC_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$QC_WORK" -p 5432 \
		-d "${QC_DB:-queryclaw_regression}" "$@"
}

# Poll (every 50 ms, at most 10 s) until the SQL $1 prints t.
qc_until_true() {
	qc_wait_for "$1" 10
}

# Poll (every 50 ms, at most $2 seconds) until the SQL $1 prints t.
qc_wait_for() {
	for _ in $(seq $(($2 * 20))); do
		[ "$(qc_sql -c "$1")" = t ] && return 0
		sleep 0.05
	done
	return 1
}

# A TAP-style line for the shell checks: "ok - $1" when $2 (a value)
# equals $3, else "not ok" with both.
qc_check() {
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1 (got '$2', expected '$3')"
		return 1
	fi
}

qc_install_deps() {
	local missing=()
	for pkg in $QC_PACKAGES; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$pkg")
	done
	for pkg in $QC_OPTIONAL_PACKAGES; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
			! apt-cache show "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		qc_log "installing Debian packages: ${missing[*]}"
		# apt's and debconf's chatter is shown only when the installation fails
		local log
		log=$(mktemp)
		if ! { qc_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			qc_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
			cat "$log" >&2
			rm -f "$log"
			echo "package installation failed" >&2
			return 1
		fi
		rm -f "$log"
	fi
}

# The start of every test and benchmark script: the packages, a scratch
# directory, and a private install of the extension.
qc_setup_private() {
	qc_install_deps && qc_make_workdir && qc_build_private
}

# Build, and install into the system's PostgreSQL.
qc_build_install() {
	qc_log "building and installing queryclaw_ext"
	make -C "$QC_ROOT" -s PG_CONFIG=$QC_PG_CONFIG >/dev/null &&
		qc_as_root make -C "$QC_ROOT" -s PG_CONFIG=$QC_PG_CONFIG install >/dev/null
}

# Build, and install into a private copy of PostgreSQL under QC_WORK,
# so that a test run never depends on (or disturbs) what is installed
# system-wide, and concurrent runs from different trees cannot meet.
# PostgreSQL finds its share directory relative to its binaries, so the
# copy runs as it is.
qc_build_private() {
	local root="$QC_WORK/install"
	qc_log "building queryclaw_ext and installing it into a private PostgreSQL copy"
	make -C "$QC_ROOT" -s PG_CONFIG=$QC_PG_CONFIG >/dev/null || return 1
	mkdir -p "$root"
	tar -C / --exclude=usr/lib/postgresql/$QC_PG_MAJOR/lib/bitcode \
		-cf - usr/lib/postgresql/$QC_PG_MAJOR usr/share/postgresql/$QC_PG_MAJOR | tar -C "$root" -xf - || return 1
	make -C "$QC_ROOT" -s PG_CONFIG=$QC_PG_CONFIG DESTDIR="$root" install >/dev/null || return 1
	QC_BINDIR="$root/usr/lib/postgresql/$QC_PG_MAJOR/bin"
}

# A scratch directory the cluster's OS user can write to.
qc_make_workdir() {
	QC_WORK=$(mktemp -d /tmp/queryclaw.XXXXXX)
	chmod 755 "$QC_WORK"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$QC_WORK"
	trap qc_cleanup EXIT
	trap 'exit 130' INT TERM
}

# Can this run isolate itself (qc_isolate)?  It needs root (the cluster
# runs as "postgres", so a user namespace will not do), unshare, and the
# right to configure loopback and bind-mount in the new namespaces: tried
# once, in namespaces that vanish with the trial.
qc_can_isolate() {
	[ "$(id -u)" -eq 0 ] && [ -z "${QC_NO_ISOLATION:-}" ] &&
		unshare --net --mount --propagation private sh -c '
			ip link set lo up || exit 1
			[ -e /etc/resolv.conf ] || exit 0
			f=$(mktemp) && mount --bind "$f" /etc/resolv.conf; rc=$?
			rm -f "$f"; exit $rc' 2>/dev/null
}

# Re-run script $1 (arguments $2...) in a network and mount namespace of
# its own, as QC_ISOLATED=1, when qc_can_isolate says it may; else return.
# The re-run script then calls qc_setup_test.
qc_reexec_isolated() {
	[ -z "${QC_ISOLATED:-}" ] && qc_can_isolate &&
		exec unshare --net --mount --propagation private env QC_ISOLATED=1 bash "$@"
}

# The set-up of a test command where it stays (after qc_reexec_isolated):
# qc_setup_private, then, in namespaces of its own, qc_isolate.
qc_setup_test() {
	qc_setup_private || return 1
	if [ -n "${QC_ISOLATED:-}" ]; then
		qc_isolate || { echo "could not set up the test network namespace" >&2; return 1; }
	fi
}

# Inside the namespaces that test/run.sh re-runs itself in: bring loopback
# up, and make /etc/resolv.conf (in this mount namespace only) name the DNS
# fixture (test/fixture/dns.py) on 127.0.0.1:53; without the file glibc
# asks 127.0.0.1 anyway.  There is no other interface, so nothing the
# tests do can reach any address but loopback, and every name they resolve
# is answered by the fixture.
qc_isolate() {
	ip link set lo up || return 1
	printf 'nameserver 127.0.0.1\noptions timeout:5 attempts:1\n' >"$QC_WORK/resolv.conf"
	chmod 644 "$QC_WORK/resolv.conf"
	if [ -e /etc/resolv.conf ]; then
		mount --bind "$QC_WORK/resolv.conf" /etc/resolv.conf || return 1
	fi
	qc_start_server "$QC_ROOT/test/fixture/dns.py" dns >/dev/null
}

# Start a loopback server script; prints its port.  $1 = script, $2 = name,
# further arguments go to the script.  Callers run it in $(...), a
# subshell, so the pid goes to a file that qc_cleanup reads: a shell
# variable would not outlive the subshell.
qc_start_server() {
	local portfile="$QC_WORK/$2.port"
	"$QC_PYTHON" "$1" --port-file "$portfile" "${@:3}" >"$QC_WORK/$2.log" 2>&1 &
	echo $! >"$QC_WORK/$2.pid"
	for _ in $(seq 100); do
		[ -s "$portfile" ] && { cat "$portfile"; return 0; }
		sleep 0.1
	done
	echo "server $2 did not start; see $QC_WORK/$2.log" >&2
	return 1
}

# A loopback port that is free now, for a server that cannot pick its own
# and say which (nginx, llama-server).
qc_free_port() {
	"$QC_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A private CA and a certificate for 127.0.0.1 signed by it, in QC_WORK/tls.
qc_make_tls() {
	local dir="$QC_WORK/tls"
	mkdir -p "$dir"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=queryclaw test CA" \
		-keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
			-keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null &&
		printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/san.ext" &&
		openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
			-CAcreateserial -days 2 -extfile "$dir/san.ext" -out "$dir/server.pem" 2>/dev/null &&
		chmod 644 "$dir"/*.pem
}

# Start Debian's nginx on a free loopback port (QC_NGINX_PORT), as root or
# not, writing only under QC_WORK; qc_cleanup stops it (QC_WORK/nginx.pid).  It serves
# /small.json, /page.html (60 KB of HTML) and /delay (answers after 20 ms
# through the echo module).
qc_start_nginx() {
	local web="$QC_WORK/nginx"
	mkdir -p "$web/html" "$web/tmp"
	QC_NGINX_PORT=$(qc_free_port)
	printf '{"ok": true, "n": 42}' >"$web/html/small.json"
	"$QC_PYTHON" - "$web/html/page.html" <<'PY'
import sys
paras = "".join(f"<p>Paragraph {i}: " + "lorem ipsum dolor sit amet " * 20 + "</p>\n" for i in range(100))
page = f"<!DOCTYPE html><html><head><title>Bench page</title><style>p {{margin:0}}</style></head><body><nav><a href='/'>Home</a></nav><main><h1>Bench</h1>{paras}</main></body></html>"
open(sys.argv[1], "w").write(page[:61440] if len(page) > 61440 else page)
PY
	cat >"$web/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
pid $QC_WORK/nginx.pid;
error_log $web/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $web/tmp; proxy_temp_path $web/tmp; fastcgi_temp_path $web/tmp;
    uwsgi_temp_path $web/tmp; scgi_temp_path $web/tmp;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$QC_NGINX_PORT;
        root $web/html;
        location = /small.json { default_type application/json; }
        location = /delay { default_type text/plain; echo_sleep 0.02; echo "done"; }
        location = /slow { default_type text/plain; echo_sleep 5; echo "slow"; }
    }
}
CONF
	nginx -c "$web/nginx.conf" -e "$web/error.log" || { cat "$web/error.log" >&2; return 1; }
}

# initdb and start a cluster on a Unix socket in QC_WORK (no TCP port), in
# QC_WORK/$1 (default "data").  Extra postgresql.conf lines come on stdin,
# then from QC_EXTRA_CONF; they come last, so they override the defaults set
# here.  QC_PG_WRAPPER, when set, is a command the postmaster runs under
# (make valgrind sets it to valgrind and its options).  One cluster runs at
# a time: stop it with qc_stop_cluster before starting another.
qc_start_cluster() {
	local bindir="$QC_BINDIR"
	local postgres=()
	QC_PGDATA="$QC_WORK/${1:-data}"
	if [ -n "${QC_PG_WRAPPER:-}" ]; then
		printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$QC_PG_WRAPPER" "$bindir/postgres" >"$QC_WORK/postgres-wrapper"
		chmod 755 "$QC_WORK/postgres-wrapper"
		postgres=(-p "$QC_WORK/postgres-wrapper")
	fi
	qc_as_pg "$bindir/initdb" -D "$QC_PGDATA" -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$QC_WORK/initdb.log" 2>&1 ||
		{ cat "$QC_WORK/initdb.log" >&2; return 1; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$QC_WORK'"
		echo "port = 5432"
		echo "fsync = off"
		echo "lc_messages = 'C'"
		echo "shared_preload_libraries = 'queryclaw_ext'"
		cat
		[ -z "${QC_EXTRA_CONF:-}" ] || printf '%s\n' "$QC_EXTRA_CONF"
	} | qc_as_pg tee -a "$QC_PGDATA/postgresql.conf" >/dev/null
	qc_pg_ctl "${postgres[@]}" start || return 1
	export PGHOST="$QC_WORK" PGPORT=5432
}

# A benchmark's set-up against Debian's nginx: its packages, a private
# install, nginx on a free loopback port (base: its URL), and a cluster
# that may reach it (queryclaw.enabled, local_allowlist).  More
# postgresql.conf lines come on stdin, as for qc_start_cluster.
qc_start_bench_with_nginx() {
	qc_setup_bench_with_nginx && qc_start_bench_cluster
}

# Its two halves, for a benchmark that adds to the private install before
# the cluster starts (async.sh adds pg_net): the packages, the install and
# nginx; then the cluster (postgresql.conf lines on stdin).
qc_setup_bench_with_nginx() {
	QC_PACKAGES="$QC_PACKAGES $QC_NGINX_PACKAGES curl"
	qc_setup_private && qc_start_nginx || return 1
	base="http://127.0.0.1:$QC_NGINX_PORT"
}
qc_start_bench_cluster() {
	qc_start_cluster < <(printf "queryclaw.enabled = on\nqueryclaw.local_allowlist = '127.0.0.1:%s'\n" "$QC_NGINX_PORT"; cat)
}

# Run pg_ctl on the cluster ($@: its options and action).  Proxy variables
# name a dead loopback port: the extension must ignore them (only
# queryclaw.proxy counts), or every request would fail.
qc_pg_ctl() {
	qc_as_pg env http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
		HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 \
		"$QC_BINDIR/pg_ctl" -D "$QC_PGDATA" -l "$QC_WORK/postgres.log" -w "$@" >/dev/null ||
		{ cat "$QC_WORK/postgres.log" >&2; return 1; }
}

# Restart the running cluster: what is read only at start (the audit
# worker's settings) is read again.
qc_restart_cluster() {
	qc_pg_ctl -m fast restart
}

qc_stop_cluster() {
	if [ -n "$QC_PGDATA" ] && [ -f "$QC_PGDATA/postmaster.pid" ]; then
		qc_as_pg "$QC_BINDIR/pg_ctl" -D "$QC_PGDATA" -m fast -w stop >/dev/null 2>&1
	fi
}

# An SQL statement that waits (at most 30 s) until the audit worker has
# written every queued record and no call is still in flight.
qc_sql_wait_for_audit() {
	echo "DO \$\$ BEGIN FOR i IN 1..1500 LOOP
		EXIT WHEN (SELECT queued + in_flight FROM queryclaw.audit_status()) = 0;
		PERFORM pg_sleep(0.02); END LOOP; END \$\$;"
}

# The SQL expression for the CPU time (user + system, in clock ticks) used
# so far by the server process whose pid is $1, an SQL expression: what a
# benchmark counts so that other work on the machine does not.
qc_sql_cpu_ticks() {
	echo "(SELECT f[12]::bigint + f[13]::bigint FROM string_to_array(split_part(pg_read_file('/proc/' || $1 || '/stat'), ') ', 2), ' ') AS f)"
}

# Run pg_regress over the tests $3... of suite directory $1 (sql/ and
# expected/) in database $2 of the running cluster, and add up the results
# in the caller's passed and failed (qc_count_results: a test that gave no
# result counts as failed).
qc_run_suite() {
	local suite=$1 db=$2 status
	shift 2
	# pg_regress runs as the cluster's user, so it works on a copy it can write.
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$suite"
	qc_as_pg "$($QC_PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress" \
		--host="$QC_WORK" --port=5432 --inputdir="$suite" --outputdir="$suite" \
		--bindir="$QC_BINDIR" --dbname="$db" "$@" 2>&1 | tee "$suite/regress.log"
	status=${PIPESTATUS[0]}
	qc_count_results "$suite" $# "$status"
}

# pg_regress over the main suite's 001_setup, then every test of directory
# $1 (its sql/ and expected/), in database $2: a suite of its own that
# uses the main suite's helpers (qc_test).  It runs from QC_WORK/suite-$2.
# QC_TESTS="060_mcp" runs only the tests it names (after 001_setup).
qc_run_suite_after_setup() {
	local tests=$1 db=$2 suite="$QC_WORK/suite-$2" names
	mkdir -p "$suite/sql" "$suite/expected"
	cp "$QC_ROOT/sql/001_setup.sql" "$tests/sql/"*.sql "$suite/sql/"
	cp "$QC_ROOT/expected/001_setup.out" "$tests/expected/"*.out "$suite/expected/"
	names=$(cd "$suite/sql" && ls [0-9]*.sql | sed 's/\.sql$//')
	[ -z "${QC_TESTS:-}" ] ||
		names="001_setup $(printf '%s\n' $names | grep -Fxf <(printf '%s\n' $QC_TESTS) | grep -vx 001_setup)"
	qc_run_suite "$suite" "$db" $names
}

# Add up the results pg_regress wrote to $1/regress.log, and show its
# diffs.  $2: how many tests it was asked to run; $3: its exit status.  A
# step that did not run never passes as 0 failed: each test of the $2 that
# gave no result (pg_regress could not start, could not read its files,
# lost its server) counts as failed, and so does an exit status that is
# not 0 with no test failed.
qc_count_results() {
	local suite=$1 expected=${2:-0} status=${3:-0} ok bad
	# pg_regress 15 says "test name ... ok", 16 and newer "ok N - name" (TAP)
	ok=$(grep -cE '^(ok|test) .* ok( |$)|\.\.\. ok|^ok [0-9]+ ' "$suite/regress.log" 2>/dev/null)
	# a test without an expected file makes pg_regress say "diff command failed"
	bad=$(grep -cE 'FAILED|failed \(ignored\)|diff command failed|^not ok [0-9]+ ' "$suite/regress.log" 2>/dev/null)
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${bad:-0}))
	if [ $((ok + bad)) -lt "$expected" ]; then
		echo "not ok - $((expected - ok - bad)) of the $expected tests of $suite gave no result (pg_regress exited with status $status; its output is above)"
		failed=$((failed + expected - ok - bad))
	elif [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
		echo "not ok - pg_regress exited with status $status in $suite, though no test failed"
		failed=$((failed + 1))
	fi
	if [ -s "$suite/regression.diffs" ]; then
		qc_log "differences"
		cat "$suite/regression.diffs"
	fi
}

# Run a command that prints "ok - ...", "not ok - ..." and "skip - ..."
# lines, show them, and add them up in the caller's passed, failed and
# skipped.  A command that could not run never passes as 0
# failed: one that fails without saying "not ok", or that says nothing at
# all, counts as a failure.
qc_run_checks() {
	local log="$QC_WORK/checks.log" rc ok bad skip
	"$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	ok=$(grep -c '^ok ' "$log")
	bad=$(grep -c '^not ok ' "$log")
	skip=$(grep -c '^skip ' "$log")
	passed=$((passed + ok))
	failed=$((failed + bad))
	skipped=$((${skipped:-0} + skip))
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		echo "not ok - $* exited with status $rc"
		failed=$((failed + 1))
	elif [ $((ok + bad + skip)) -eq 0 ]; then
		echo "not ok - $* gave no result"
		failed=$((failed + 1))
	fi
}

# A step skipped, saying why ($*): shown, and counted in the caller's
# skipped.
qc_skip() {
	echo "skip - $*"
	skipped=$((${skipped:-0} + 1))
}

# The last line of a test command: "N passed, N failed", with ", N
# skipped" when steps were skipped.
qc_summary() {
	if [ "${skipped:-0}" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
}

qc_psql() {
	qc_as_pg "$QC_BINDIR/psql" -X -v ON_ERROR_STOP=1 -h "$QC_WORK" -p 5432 "$@"
}

qc_cleanup() {
	local rc=$?
	qc_stop_cluster
	if [ -n "$QC_WORK" ]; then
		for pidfile in "$QC_WORK"/*.pid; do
			[ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
		done
	fi
	wait 2>/dev/null
	if [ -n "$QC_WORK" ]; then
		if [ "$rc" -eq 0 ] || [ -n "${CI:-}" ]; then rm -rf "$QC_WORK"; else echo "kept $QC_WORK for inspection"; fi
	fi
	return $rc
}
