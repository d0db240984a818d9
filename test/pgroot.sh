#!/usr/bin/env bash
# test/pgroot.sh: the PostgreSQL majors this machine's Debian release does
# not ship, from Debian's own packages, in cached roots made by debootstrap.
#
#   test/pgroot.sh suite PG          which Debian suite ships major PG
#   test/pgroot.sh major SUITE       the newest postgresql-NN in SUITE's root
#   test/pgroot.sh ensure SUITE      make (or check) SUITE's root; prints it
#   test/pgroot.sh add SUITE PKG...  the same, with packages PKG... added
#   test/pgroot.sh run SUITE CMD...  run CMD in the root, source tree copied in
#   test/pgroot.sh exec SUITE CMD... run the root's CMD here, on this network
#   test/pgroot.sh run-major PG CMD  run CMD in the root that ships PG
#   test/pgroot.sh test PG [ARGS]    test/run.sh in the root that ships PG
#
# Debian 13 (trixie) ships 17; Debian unstable ships the newest major, which
# is found in its root (the newest postgresql-NN there), not assumed.  A root
# lives in QC_ROOTS_DIR/SUITE and is reused while it is whole (its stamp
# lists the packages it was made with, and they are all installed); one
# that is absent or broken is made anew.  Unstable's is also renewed when
# its stamp is older than QC_ROOT_MAX_AGE_DAYS, so that a new major there is
# noticed.  The mirror is the one this machine's apt uses.
#
# A root also lends a test what this machine's release does not ship:
# `add` installs it there (llama.cpp's server, for test/llama/run.sh), and
# `exec` runs it on the caller's network.
set -uo pipefail

QC_ROOTS_DIR=${QC_ROOTS_DIR:-/var/cache/queryclaw_ext/roots}
QC_ROOT_MAX_AGE_DAYS=${QC_ROOT_MAX_AGE_DAYS:-7}
QC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# What a root has besides what test/lib.sh installs (QC_PACKAGES): what
# `make deb` builds with.
QC_ROOT_PACKAGES="ca-certificates build-essential debhelper postgresql-server-dev-all fakeroot"

log() { printf '== %s\n' "$*" >&2; }

# The Debian mirror this machine's apt uses for its own release (not the
# security archive), from one-line or deb822 sources.
debian_mirror() {
	local codename uri
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v s="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($(i + 1) == s) print $i; break } }' |
		head -1)
	if [ -z "$uri" ]; then
		uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk -v s="$codename" '
				/^[[:space:]]*$/ { if (u != "" && ok) print u; u = ""; ok = 0; next }
				$1 == "URIs:" { u = $2 }
				$1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
				END { if (u != "" && ok) print u }' | head -1)
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}

# The suite that ships major $1.  Stable releases keep their major; any
# other is looked for in unstable.
suite_for() {
	case "$1" in
	15) echo bookworm ;;
	17) echo trixie ;;
	*) echo unstable ;;
	esac
}

in_root() {
	local root=$1
	shift
	chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

# The newest postgresql-NN server package the root's apt lists know.
newest_major() {
	in_root "$1" apt-cache pkgnames postgresql- | grep -E '^postgresql-[0-9]+$' |
		sed 's/postgresql-//' | sort -n | tail -1
}

# Everything a root of major $1 must have: the tests run in it with
# nothing to install (it has no network then).
root_packages() {
	echo $QC_ROOT_PACKAGES $(QC_PG_MAJOR=$1 bash -c '. "$0/test/lib.sh" && echo $QC_PACKAGES' "$QC_SRC")
}

# test/lib.sh's optional packages of major $2 (pgvector) that the apt lists
# of root $1 know: a root of a release that has them must have them.
optional_packages() {
	local pkg
	for pkg in $(QC_PG_MAJOR=$2 bash -c '. "$0/test/lib.sh" && echo $QC_OPTIONAL_PACKAGES' "$QC_SRC"); do
		in_root "$1" apt-cache show "$pkg" >/dev/null 2>&1 && echo "$pkg"
	done
}

# Is the root whole: its stamp there, and every package it needs installed?
root_ok() {
	local root=$1 stamp=$1/.queryclaw-root pkg major
	[ -s "$stamp" ] && [ -x "$root/usr/bin/apt-get" ] || return 1
	major=$(sed -n 's/^major=//p' "$stamp")
	for pkg in $(root_packages "$major") $(optional_packages "$root" "$major"); do
		in_root "$root" dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
			grep -q 'install ok installed' || return 1
	done
}

# Install packages $2... into root $1 with its own apt (lists updated
# first), in a mount namespace of its own so that /proc vanishes with it.
root_apt_get() {
	local dir=$1
	shift
	unshare --mount --propagation private bash -c '
		mount -t proc proc "$0/proc" || exit 1
		chroot "$0" apt-get update -qq &&
			chroot "$0" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"' \
		"$dir" "$@" >>"$dir.log" 2>&1 ||
		{ tail -20 "$dir.log" >&2; return 1; }
	in_root "$dir" apt-get clean
}

# Install into root $1 (of suite $2) what it lacks, and stamp it.
apt_install() {
	local dir=$1 suite=$2 major=$3
	root_apt_get "$dir" $(root_packages "$major") $(optional_packages "$dir" "$major") || return 1
	printf 'suite=%s\nmajor=%s\npackages=%s\n' "$suite" "$major" "$(root_packages "$major")" \
		>"$dir/.queryclaw-root"
}

# Unstable's root is renewed when old, so that a newer major is picked up.
root_stale() {
	[ "$2" = unstable ] || return 1
	[ -n "$(find "$1/.queryclaw-root" -mtime +"$QC_ROOT_MAX_AGE_DAYS" 2>/dev/null)" ]
}

# Make the root of suite $1 in $2: debootstrap, then the packages, in a
# mount namespace of its own so that /proc vanishes with it.
make_root() {
	local suite=$1 dir=$2 mirror major start=$SECONDS
	mirror=$(debian_mirror)
	command -v debootstrap >/dev/null ||
		apt-get install -y -qq debootstrap >/dev/null || return 1
	log "making a Debian $suite root (debootstrap from $mirror)"
	debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$dir.log" 2>&1 ||
		{ tail -20 "$dir.log" >&2; return 1; }
	# Unstable's Release file may be past its Valid-Until on a mirror that is
	# a snapshot; no recommends; no services started, no cluster created.
	printf 'Acquire::Check-Valid-Until "false";\nAPT::Install-Recommends "false";\n' \
		>"$dir/etc/apt/apt.conf.d/90queryclaw"
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 755 "$dir/usr/sbin/policy-rc.d"
	mkdir -p "$dir/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$dir/etc/postgresql-common/createcluster.conf"
	cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null
	unshare --mount --propagation private bash -c '
		mount -t proc proc "$1/proc" || exit 1
		chroot "$1" apt-get update -qq' _ "$dir" >>"$dir.log" 2>&1 ||
		{ tail -20 "$dir.log" >&2; return 1; }
	major=$(newest_major "$dir")
	[ -n "$major" ] || { echo "no postgresql-NN in Debian $suite" >&2; return 1; }
	log "installing PostgreSQL $major and the build packages into the $suite root"
	apt_install "$dir" "$suite" "$major" || return 1
	log "the $suite root took $((SECONDS - start)) s"
}

# Make sure the root of suite $1 is there and whole; print its path.  One
# run at a time makes or checks a root (a lock per suite).
ensure_root() {
	local suite=$1 dir="$QC_ROOTS_DIR/$1"
	mkdir -p "$QC_ROOTS_DIR" || return 1
	exec 9>"$QC_ROOTS_DIR/$suite.lock"
	flock 9
	# a root that only lacks packages (the list grew) gets them
	if ! root_stale "$dir" "$suite" && ! root_ok "$dir" && [ -s "$dir/.queryclaw-root" ]; then
		log "adding packages to the $suite root"
		apt_install "$dir" "$suite" "$(sed -n 's/^major=//p' "$dir/.queryclaw-root")" 2>/dev/null ||
			rm -f "$dir/.queryclaw-root"
	fi
	if ! root_ok "$dir" || root_stale "$dir" "$suite"; then
		rm -rf "$dir" "$dir.new"
		mkdir -p "$dir.new"
		make_root "$suite" "$dir.new" || { rm -rf "$dir.new"; return 1; }
		mv "$dir.new" "$dir"
	fi
	exec 9>&-
	echo "$dir"
}

# Make sure the root of suite $1 is there, whole, and has packages $2...
# besides its own (what one test needs and the others do not: llama.cpp's
# server for test/llama/run.sh); print its path.  They are not in its
# stamp: a renewed root gets them again from the next run that asks.  A
# package the root's Debian does not ship is an error that names it.
add_packages() {
	local suite=$1 dir pkg missing=()
	shift
	dir=$(ensure_root "$suite") || return 1
	exec 9>"$QC_ROOTS_DIR/$suite.lock"
	flock 9
	for pkg; do
		in_root "$dir" dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$pkg")
	done
	for pkg in "${missing[@]}"; do
		in_root "$dir" apt-cache show "$pkg" >/dev/null 2>&1 ||
			{ echo "Debian $suite has no package $pkg" >&2; return 1; }
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "adding ${missing[*]} to the $suite root"
		root_apt_get "$dir" "${missing[@]}" || return 1
	fi
	exec 9>&-
	echo "$dir"
}

# Run a command in the root of suite $1 on a copy of the source tree (the
# build writes into the tree, and the host's tree has its own build), in
# /tmp/queryclaw-src.XXXXXX/queryclaw_ext there (dpkg-buildpackage writes
# beside it), with /proc, /sys and /dev of the host.  As test/run.sh does,
# it runs in a network namespace of its own with only loopback (the
# packages are installed by then): nothing in the root can reach any other
# address.  QC_ROOT_OUT, when set, is a directory of the host that the
# command sees as /tmp/queryclaw-out.  The copy goes when it ends.
run_in_root() {
	local suite=$1 root copy rc
	shift
	root=$(ensure_root "$suite") || return 1
	mkdir -p "$root/tmp" "$root/tmp/queryclaw-out"
	copy=$(mktemp -d "$root/tmp/queryclaw-src.XXXXXX") || return 1
	mkdir "$copy/queryclaw_ext"
	tar -C "$QC_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude='*.d' --exclude=test/unit/test_rules --exclude=./deb \
		--exclude=./test/fuzz/build -cf - . |
		tar -C "$copy/queryclaw_ext" -xf - || return 1
	chmod -R a+rX "$copy"
	unshare --mount --net --propagation private bash -c '
		root=$1 dir=$2
		shift 2
		ip link set lo up || exit 1
		# the root a mount point of its own, so that test/run.sh can make
		# its namespaces (unshare --propagation) inside it
		mount --bind "$root" "$root" && mount -t proc proc "$root/proc" &&
			mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" || exit 1
		if [ -n "${QC_ROOT_OUT:-}" ]; then
			mount --bind "$QC_ROOT_OUT" "$root/tmp/queryclaw-out" || exit 1
		fi
		exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LC_ALL=C.UTF-8 CI="${CI:-}" QC_TESTS="${QC_TESTS:-}" QC_PG_MAJOR="$QC_PG_MAJOR" \
			QC_NO_ISOLATION="${QC_NO_ISOLATION:-}" bash -c "cd \"\$0\" && exec \"\$@\"" "$dir" "$@"' \
		_ "$root" "/tmp/${copy##*/}/queryclaw_ext" "$@"
	rc=$?
	rm -rf "$copy"
	return $rc
}

# Run command $2... of the root of suite $1 as it is, without the source
# tree, in the caller's network namespace: a server it starts listens on
# the caller's loopback (test/llama/run.sh's llama-server, in that test's
# network namespace).  /proc and /sys are the host's, in a mount namespace of its
# own; QC_ROOT_OUT, when set, is seen as /tmp/queryclaw-out, as for run.
# The root must be there (ensure or add first); it is not checked again,
# so that this starts at once.  Its process becomes the command's.
exec_in_root() {
	local suite=$1 root="$QC_ROOTS_DIR/$1"
	shift
	[ -s "$root/.queryclaw-root" ] ||
		{ echo "there is no Debian $suite root in $QC_ROOTS_DIR (test/pgroot.sh ensure $suite makes it)" >&2; return 1; }
	mkdir -p "$root/tmp/queryclaw-out"
	exec unshare --mount --propagation private bash -c '
		root=$1
		shift
		mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" || exit 1
		if [ -n "${QC_ROOT_OUT:-}" ]; then
			mount --bind "$QC_ROOT_OUT" "$root/tmp/queryclaw-out" || exit 1
		fi
		exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LC_ALL=C.UTF-8 "$@"' _ "$root" "$@"
}

case "${1:-}" in
suite) suite_for "$2" ;;
major)
	root=$(ensure_root "$2") || exit 1
	sed -n 's/^major=//p' "$root/.queryclaw-root"
	;;
ensure) ensure_root "$2" ;;
add) add_packages "${@:2}" ;;
exec) exec_in_root "${@:2}" ;;
run)
	suite=$2
	shift 2
	root=$(ensure_root "$suite") || exit 1
	QC_PG_MAJOR=$(sed -n "s/^major=//p" "$root/.queryclaw-root")
	export QC_PG_MAJOR
	run_in_root "$suite" "$@"
	;;
run-major | test)
	what=$1 want=$2
	suite=$(suite_for "$want")
	shift 2
	root=$(ensure_root "$suite") || exit 1
	QC_PG_MAJOR=$(sed -n "s/^major=//p" "$root/.queryclaw-root")
	if [ "$QC_PG_MAJOR" != "$want" ]; then
		echo "Debian $suite ships PostgreSQL $QC_PG_MAJOR, not $want: use that one (PG=$QC_PG_MAJOR)" >&2
		exit 1
	fi
	export QC_PG_MAJOR
	if [ "$what" = test ]; then
		log "PostgreSQL $QC_PG_MAJOR from Debian $suite"
		set -- bash test/run.sh "$@"
	fi
	run_in_root "$suite" "$@"
	;;
*)
	echo "usage: $0 suite PG | major SUITE | ensure SUITE | add SUITE PACKAGE... | run SUITE COMMAND... | exec SUITE COMMAND... | test PG" >&2
	exit 2
	;;
esac
