#!/usr/bin/env bash
# test/valgrind/run.sh: `make valgrind` — the regression suite with every
# backend under valgrind's memcheck.
#
# Runs test/run.sh with the postmaster started under valgrind (which
# follows it into every backend it forks), then reads the per-process
# valgrind logs.  It fails when any memory error, or any definite leak,
# has a stack that passes through the extension's code (a frame in src/ or
# in queryclaw_ext.so); errors that lie wholly inside PostgreSQL or a
# library are counted and shown, but are not ours to fix.
#
# Suppressions: PostgreSQL's own file (src/tools/valgrind.supp in its
# source package, fetched once with apt-get source into a cache directory,
# with deb-src enabled for the configured Debian mirror if need be), and
# test/valgrind/queryclaw.supp for the false positives of the libraries
# we use.  Without network access the run goes on without PostgreSQL's file.
#
# Everything is slower under valgrind, so the run raises queryclaw.timeout
# (the tests that need a short one set it themselves) and pg_ctl's wait.
# QC_TESTS="001_setup 003_web_fetch" runs a subset; QC_VALGRIND_OPTS adds
# options (e.g. --track-origins=yes).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

QC_PACKAGES="$QC_PACKAGES valgrind"
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/queryclaw

# PostgreSQL's suppression file, from the source package of the installed
# major version; prints its path, or nothing when it cannot be had.
pg_suppressions() {
	local supp="$CACHE/postgresql-$QC_PG_MAJOR-valgrind.supp" tmp version
	if [ ! -s "$supp" ]; then
		mkdir -p "$CACHE"
		if [ -z "$(apt-cache showsrc postgresql-$QC_PG_MAJOR 2>/dev/null)" ]; then
			enable_deb_src >&2 && qc_as_root apt-get update -qq >&2
		fi
		tmp=$(mktemp -d)
		# the newest version first; a mirror may lack the newest sources
		for version in $(apt-cache showsrc postgresql-$QC_PG_MAJOR 2>/dev/null | sed -n 's/^Version: //p' | sort -rV); do
			(cd "$tmp" && apt-get source -qq --download-only "postgresql-$QC_PG_MAJOR=$version" >/dev/null 2>&1) &&
				tar -xjf "$tmp"/postgresql-"$QC_PG_MAJOR"_*.orig.tar.bz2 -C "$tmp" --wildcards '*/src/tools/valgrind.supp' 2>/dev/null &&
				cp "$tmp"/postgresql-*/src/tools/valgrind.supp "$supp" && break
			rm -rf "${tmp:?}"/*
		done
		rm -rf "$tmp"
	fi
	[ -s "$supp" ] && echo "$supp"
}

# deb-src entries for the Debian mirror already configured.
enable_deb_src() {
	local src=/etc/apt/sources.list.d/debian.sources
	if [ -f "$src" ]; then
		sed 's/^Types: deb$/Types: deb-src/' "$src" |
			qc_as_root tee /etc/apt/sources.list.d/queryclaw-deb-src.sources >/dev/null
	elif [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list |
			qc_as_root tee /etc/apt/sources.list.d/queryclaw-deb-src.list >/dev/null
	else
		return 1
	fi
}

qc_install_deps || exit 1
logs=$(mktemp -d /tmp/queryclaw-valgrind.XXXXXX)
chmod 777 "$logs"

# the backends run as the cluster's user: give them copies they can read
cp "$here/queryclaw.supp" "$logs/queryclaw.supp"
supp=(--suppressions="$logs/queryclaw.supp")
pg_supp=$(pg_suppressions)
if [ -n "$pg_supp" ]; then
	cp "$pg_supp" "$logs/postgresql.supp"
	supp+=(--suppressions="$logs/postgresql.supp")
else
	echo "warning: PostgreSQL's valgrind.supp could not be fetched; going on without it" >&2
fi

export QC_PG_WRAPPER="valgrind --quiet --trace-children=yes --leak-check=full
 --show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30
 --fullpath-after= --read-var-info=no --gen-suppressions=all ${supp[*]}
 --log-file=$logs/%p.log ${QC_VALGRIND_OPTS:-}"
QC_PG_WRAPPER=$(echo $QC_PG_WRAPPER)
# Memcheck runs code 20 to 50 times slower: calls get a longer timeout,
# and a cancel is asked to stop the statement within 30 s rather than
# queryclaw.timeout (qc_test.cancel_stop in sql/001_setup.sql reads the
# bound).
export QC_EXTRA_CONF="queryclaw.timeout = '60s'
qc_test.stop_within = '30 s'"
export PGCTLTIMEOUT=900

echo "== regression suite under valgrind (logs in $logs)"
bash "$QC_ROOT/test/run.sh"
suite=$?

python3 "$here/scan.py" "$QC_ROOT" "$logs"
found=$?
if [ "$found" -eq 0 ]; then
	rm -rf "$logs"
else
	echo "kept $logs for inspection"
fi
[ "$suite" -eq 0 ] || echo "the regression suite itself failed under valgrind (see above)"
[ "$found" -eq 0 ] && [ "$suite" -eq 0 ]
