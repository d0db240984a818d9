#!/usr/bin/env bash
# test/deb.sh: `make deb` — a Debian package of the extension for each
# tested PostgreSQL major (make deb PG=17: that one), built the way Debian
# builds its own postgresql-NN-* extension packages (debian/: pg_buildext
# through debhelper's pgxs_loop sequence, whose test step runs
# `make installcheck` on a scratch cluster), each in a root of the Debian
# release that ships the major (test/pgroot.sh), then installed there and
# smoke-tested: CREATE EXTENSION and a call on a cluster that preloads it.
# The packages land in deb/, and lintian (when installed) checks them; ends
# with "N passed, N failed".
#
# Run with --in-root by test/pgroot.sh inside a root: the build and the
# smoke test of the major QC_PG_MAJOR.
set -uo pipefail

if [ "${1:-}" = --in-root ]; then
	M=$QC_PG_MAJOR
	pkg=postgresql-$M-queryclaw-ext
	ok() { echo "ok - PostgreSQL $M: $*"; }
	not_ok() { echo "not ok - PostgreSQL $M: $*"; }
	log=/tmp/queryclaw-out/build-$M.log
	if pg_buildext updatecontrol >"$log" 2>&1 &&
		dpkg-buildpackage -us -uc -b >>"$log" 2>&1; then
		ok "$pkg built with pg_buildext (installcheck passed in the build)"
	else
		tail -30 "$log"
		not_ok "$pkg built with pg_buildext (see the log above)"
		exit 1
	fi
	deb=$(ls ../"${pkg}"_*.deb)
	cp "$deb" /tmp/queryclaw-out/
	# The file list is read whole before it is searched: `dpkg -L | grep -q`
	# under pipefail fails whenever grep quits before dpkg has written all.
	if dpkg -i "$deb" >>"$log" 2>&1 && files=$(dpkg -L "$pkg") &&
		grep -qx "/usr/lib/postgresql/$M/lib/queryclaw_ext.so" <<<"$files" &&
		grep -qx "/usr/share/postgresql/$M/extension/queryclaw_ext.control" <<<"$files"; then
		ok "${deb##*/} installs its library and extension files"
	else
		tail -10 "$log"
		not_ok "${deb##*/} installs"
		exit 1
	fi
	work=$(mktemp -d)
	chown postgres: "$work"
	as_pg() { runuser -u postgres -- "$@"; }
	bin=/usr/lib/postgresql/$M/bin
	as_pg "$bin/initdb" -D "$work/data" -A trust --no-sync >>"$log" 2>&1 &&
		printf "listen_addresses = ''\nunix_socket_directories = '%s'\nshared_preload_libraries = 'queryclaw_ext'\nqueryclaw.database = 'postgres'\n" \
			"$work" >>"$work/data/postgresql.conf" &&
		as_pg "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w start >>"$log" 2>&1 ||
		{ cat "$work/log" 2>/dev/null; not_ok "a cluster preloading the package's library starts"; exit 1; }
	psql() { as_pg "$bin/psql" -X -At -h "$work" -d postgres -v ON_ERROR_STOP=1 "$@" 2>&1; }
	out=$(psql -c 'CREATE EXTENSION queryclaw_ext' \
		-c "SELECT queryclaw.html_to_text('<h1>Packaged</h1><p>for ' || current_setting('server_version_num')::int / 10000 || '</p>', 'markdown')")
	if [ "$out" = "$(printf 'CREATE EXTENSION\n# Packaged\n\nfor %s' "$M")" ]; then
		ok "CREATE EXTENSION and a call on the installed package"
	else
		printf '%s\n' "$out"
		not_ok "CREATE EXTENSION and a call on the installed package"
	fi
	# 18 and newer know a module's name and version (PG_MODULE_MAGIC_EXT)
	if [ "$M" -ge 18 ]; then
		out=$(psql -c "SELECT module_name || ' ' || version FROM pg_get_loaded_modules() WHERE file_name = 'queryclaw_ext.so'")
		want="queryclaw_ext $(sed -n "s/^default_version = '\(.*\)'/\1/p" queryclaw_ext.control)"
		if [ "$out" = "$want" ]; then ok "pg_get_loaded_modules() says $out"; else not_ok "pg_get_loaded_modules() says '$out', not '$want'"; fi
	fi
	as_pg "$bin/pg_ctl" -D "$work/data" -m fast -w stop >>"$log" 2>&1
	rm -rf "$work"
	if dpkg --purge "$pkg" >>"$log" 2>&1; then ok "$pkg removes cleanly"; else not_ok "$pkg removes cleanly"; fi
	exit 0
fi

QC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
pgroot="$QC_ROOT/test/pgroot.sh"
# The tested majors: this machine's release's, Debian 13's, and unstable's.
if [ -n "${PG:-}" ]; then
	majors=$PG
else
	unstable=$(bash "$pgroot" major unstable) || exit 1
	majors=$(printf '%s\n' "$(bash -c '. "$0/test/lib.sh" && echo "$QC_PG_MAJOR"' "$QC_ROOT")" 17 "$unstable" | sort -un)
fi
mkdir -p "$QC_ROOT/deb"
passed=0
failed=0
for m in $majors; do
	out=$(mktemp -d)
	chmod 755 "$out"
	suite=$(bash "$pgroot" suite "$m")
	echo "== PostgreSQL $m: package built and tested in a Debian $suite root"
	QC_ROOT_OUT=$out bash "$pgroot" run-major "$m" bash test/deb.sh --in-root | tee "$out/tap"
	passed=$((passed + $(grep -c '^ok ' "$out/tap")))
	failed=$((failed + $(grep -c '^not ok ' "$out/tap")))
	grep -q '^not ok\|^ok .*removes cleanly' "$out/tap" || {
		echo "not ok - PostgreSQL $m: the package test did not finish"
		failed=$((failed + 1))
	}
	cp "$out"/*.deb "$out"/build-*.log "$QC_ROOT/deb/" 2>/dev/null
	rm -rf "$out"
done
ls "$QC_ROOT"/deb/*.deb 2>/dev/null | sed 's|.*/|   |'
# lintian, where this machine has it: no error allowed; the warnings left
# are listed in docs/versions.md
if command -v lintian >/dev/null; then
	for deb in "$QC_ROOT"/deb/*.deb; do
		[ -e "$deb" ] || continue
		report=$(lintian "$deb" 2>&1 | grep -v '^running with root privileges')
		[ -z "$report" ] || printf '%s\n' "$report" | sed 's/^/#   /'
		if grep -q '^E: ' <<<"$report"; then
			echo "not ok - lintian finds errors in ${deb##*/}"
			failed=$((failed + 1))
		else
			echo "ok - lintian finds no error in ${deb##*/}"
			passed=$((passed + 1))
		fi
	done
else
	echo "skip - lintian is not installed: apt-get install lintian, then make deb again"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
