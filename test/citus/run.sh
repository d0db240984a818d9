#!/usr/bin/env bash
# test/citus/run.sh: `make test-citus` — queryclaw_ext on a Citus cluster.
#
# Builds Citus from the source beside this tree (../shared/citus, or
# QC_CITUS_SRC: build.sh and its archive) into a cache, once per
# PostgreSQL major and source, or uses the Citus the server already has;
# builds the extension into a private copy of PostgreSQL as test/run.sh
# does, with Citus added to it; and, in a network namespace of its own
# that has only loopback (as root), starts the fixture server, the
# scripted model and four clusters on 127.0.0.1 (a coordinator and two
# workers, each preloading citus then queryclaw_ext, made one Citus
# cluster, and a third worker that the checks add to it midway).  The checks
# (checks.sh) cover every pattern docs/citus.md describes, then every SQL
# block of docs/citus.md runs as written (test/readme/run.py).  Prints
# "ok - ..." / "not ok - ..." lines and figures, and ends with "N passed,
# N failed".
#
# PG=NN runs it against that major from the Debian root test/pgroot.sh
# makes, with Citus's build packages added to it and its source lent to
# it.  Where Citus cannot be had (a major Citus 13.2.2 does not build for,
# no source and none installed, a root that cannot be made) it says why in
# one "skip - " line and ends with "0 passed, 0 failed".
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

# What build.sh needs besides the server's -dev package.
citus_packages="libkrb5-dev libzstd-dev liblz4-dev libicu-dev"
citus_src=${QC_CITUS_SRC:-}
for dir in "$QC_ROOT/../shared/citus" /tmp/queryclaw-out/citus; do
	[ -z "$citus_src" ] && [ -r "$dir/build.sh" ] && citus_src=$(cd "$dir" && pwd)
done

skip() {
	echo "skip - the tests on a Citus cluster: $*"
	echo "0 passed, 0 failed"
	exit 0
}

# PG=NN: this script again, in the root of the Debian release that ships NN.
if [ -n "${PG:-}" ] && [ "$PG" != "$QC_PG_MAJOR" ]; then
	case $PG in 15 | 16 | 17) ;; *) skip "Citus 13.2.2 builds for PostgreSQL 15 to 17, not $PG" ;; esac
	[ "$(id -u)" -eq 0 ] || skip "PostgreSQL $PG runs from a Debian root, which needs root"
	[ -n "$citus_src" ] || skip "no Citus source (../shared/citus, or QC_CITUS_SRC)"
	suite=$(bash "$QC_ROOT/test/pgroot.sh" suite "$PG")
	said=$(bash "$QC_ROOT/test/pgroot.sh" add "$suite" $citus_packages 2>&1 >/dev/null) ||
		skip "no Debian $suite root with $citus_packages: $(tail -1 <<<"$said")"
	lent=$(mktemp -d)
	cp -r "$citus_src" "$lent/citus" && chmod -R a+rX "$lent"
	QC_ROOT_OUT=$lent bash "$QC_ROOT/test/pgroot.sh" run-major "$PG" bash test/citus/run.sh
	rc=$?
	rm -rf "$lent"
	exit $rc
fi

# Citus as the server has it, or built from source into the cache.
citus_installed() {
	[ -f "$($QC_PG_CONFIG --pkglibdir)/citus.so" ]
}

if [ -z "${QC_ISOLATED:-}" ]; then
	if ! citus_installed; then
		[ -n "$citus_src" ] || skip "Citus is not installed and there is no source to build it (../shared/citus, or QC_CITUS_SRC)"
		QC_PACKAGES="$QC_PACKAGES $citus_packages"
	fi
	qc_install_deps || exit 1
	qc_reexec_isolated "$0" "$@"
fi

# Build Citus into the cache (once per major and source); print the
# directory that holds its usr/ tree.  Exits 3 as build.sh does for a
# major Citus does not support.
citus_build() {
	local cache key dir rc=0
	cache=${QC_CITUS_CACHE:-/var/cache/queryclaw_ext/citus}
	[ "$(id -u)" -eq 0 ] || cache=${QC_CITUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/queryclaw_ext/citus}
	key=$QC_PG_MAJOR-$(cat "$citus_src"/build.sh "$citus_src"/*.tar.* | sha256sum | cut -c1-12)
	dir=$cache/$key
	mkdir -p "$cache" || return 1
	(
		flock 9
		[ -f "$dir/.built" ] && exit 0
		rm -rf "$dir" "$dir.work"
		qc_log "building Citus for PostgreSQL $QC_PG_MAJOR (cached in $dir)" >&2
		DESTDIR=$dir bash "$citus_src/build.sh" "$QC_PG_CONFIG" "$dir.work" >"$dir.log" 2>&1
		rc=$?
		rm -rf "$dir.work"
		[ $rc -eq 0 ] && touch "$dir/.built"
		exit $rc
	) 9>"$cache/$key.lock" || rc=$?
	[ $rc -eq 0 ] && { echo "$dir"; return 0; }
	[ $rc -eq 3 ] || tail -5 "$dir.log" >&2
	return $rc
}

if ! citus_installed; then
	built=$(citus_build)
	case $? in
	0) ;;
	3) skip "$(tail -1 "${QC_CITUS_CACHE:-/var/cache/queryclaw_ext/citus}"/$QC_PG_MAJOR-*.log 2>/dev/null)" ;;
	*) echo "not ok - Citus did not build"; echo "0 passed, 1 failed"; exit 1 ;;
	esac
fi
qc_setup_test || exit 1
if [ -n "${built:-}" ]; then
	tar -C "$built" --exclude='*/bitcode' -cf - usr | tar -C "$QC_WORK/install" -xf - ||
		{ echo "not ok - Citus could not be added to the private install"; echo "0 passed, 1 failed"; exit 1; }
fi
qc_log "$(grep -h '^default_version' "$QC_WORK/install/usr/share/postgresql/$QC_PG_MAJOR/extension/citus.control")"

passed=0
failed=0

# The nodes: name, port.  The coordinator first; the third worker is
# added to the cluster by checks.sh midway.
nodes=(coordinator:5432 worker1:5433 worker2:5434 worker3:5435)

# Stop every node that runs, then what qc_cleanup stops.
citus_cleanup() {
	local rc=$? node
	for node in "${nodes[@]}"; do
		[ -f "$QC_WORK/${node%%:*}/postmaster.pid" ] &&
			qc_as_pg "$QC_BINDIR/pg_ctl" -D "$QC_WORK/${node%%:*}" -m immediate -w stop >/dev/null 2>&1
	done
	(exit $rc)
	qc_cleanup
}
trap citus_cleanup EXIT

port=$(qc_start_server "$QC_ROOT/test/fixture/server.py" fixture) || exit 1
# the scripted model, whose embeddings count tokens (max_tokens_per_day)
llm_port=$(qc_start_server "$QC_ROOT/test/fixture/llm_server.py" llm) || exit 1
# docs/citus.md's examples name api.example.com, as the README's do: the
# README's site answers for it on port 80, where the DNS fixture of the
# test network namespace sends it (elsewhere they are not run)
site=""
if [ -n "${QC_ISOLATED:-}" ]; then
	qc_start_server "$QC_ROOT/test/readme/site.py" site --port 80 >/dev/null || exit 1
	site=", 127.0.0.1:80"
fi

# initdb and start node $1 on port $2 (TCP on 127.0.0.1, for Citus's
# connections between nodes, and a socket in QC_WORK), with the settings
# on stdin added.
start_node() {
	local data="$QC_WORK/$1"
	qc_as_pg "$QC_BINDIR/initdb" -D "$data" -A trust --no-sync -E UTF8 --locale=C.UTF-8 \
		>"$QC_WORK/initdb-$1.log" 2>&1 || { cat "$QC_WORK/initdb-$1.log" >&2; return 1; }
	{
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$QC_WORK'"
		echo "port = $2"
		echo "fsync = off"
		echo "lc_messages = 'C'"
		echo "shared_preload_libraries = 'citus,queryclaw_ext'"
		echo "max_prepared_transactions = 100"
		echo "citus.node_conninfo = 'sslmode=disable'"
		echo "citus.shard_count = 4"
		echo "citus.enable_unsafe_triggers = on"
		cat
	} | qc_as_pg tee -a "$data/postgresql.conf" >/dev/null
	node_ctl "$1" start || return 1
	# the workers' database, made before they start (else they wait for it)
	qc_as_pg "$QC_BINDIR/psql" -X -q -h "$QC_WORK" -p "$2" -d postgres \
		-c "CREATE DATABASE queryclaw_citus" && node_ctl "$1" -m fast restart
}

# pg_ctl on node $1 ($2...: its options and action).
node_ctl() {
	local name=$1
	shift
	qc_as_pg env http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
		"$QC_BINDIR/pg_ctl" -D "$QC_WORK/$name" -l "$QC_WORK/$name.log" -w "$@" >/dev/null ||
		{ tail -20 "$QC_WORK/$name.log" >&2; return 1; }
}

qc_log "a Citus cluster: a coordinator and two workers, and a third worker to add"
for node in "${nodes[@]}"; do
	start_node "${node%%:*}" "${node##*:}" <<CONF || { echo "not ok - node ${node%%:*} did not start"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }
queryclaw.enabled = on
queryclaw.local_allowlist = '127.0.0.1:$port$site'
queryclaw.timeout = '5s'
queryclaw.database = 'queryclaw_citus'
queryclaw.async_workers = 2
queryclaw.llm_url = 'http://127.0.0.1:$llm_port/v1'
queryclaw.llm_model = 'fake-model'
CONF
done


qc_run_checks bash "$QC_ROOT/test/citus/checks.sh" "$QC_WORK" "$QC_BINDIR" "$port" "$llm_port"

# every SQL block of docs/citus.md, as written, in a session of its own
# on the coordinator, after the checks (test/readme/run.py)
if [ -n "$site" ]; then
	qc_log "docs/citus.md's SQL examples"
	psql=("$QC_BINDIR/psql" -h "$QC_WORK" -p 5432)
	[ "$(id -u)" -eq 0 ] && psql=(runuser -u postgres -- "${psql[@]}")
	qc_run_checks "$QC_PYTHON" "$QC_ROOT/test/readme/run.py" run "$QC_ROOT/docs/citus.md" -- "${psql[@]}" \
		-d "dbname=queryclaw_citus options='-c statement_timeout=60s'"
else
	echo "skip - docs/citus.md's examples need the test network namespace (root, unshare, QC_NO_ISOLATION unset)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
