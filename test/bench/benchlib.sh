# test/bench/benchlib.sh: what the queue's benchmarks share (sourced after
# test/lib.sh, with the cluster of qc_start_bench_with_nginx running and
# $base its nginx): the floors, a ratio, min and median, the workers' pids,
# CPU and memory, and a build of pg_net to compare with.

# The floor through curl's command line: $1 GETs of $base/delay, $2 (64) in
# flight; seconds.  (enrich.sh's; async.sh uses raw_floor.)
curl_floor() {
	local list="$QC_WORK/urls.cfg" start
	for _ in $(seq "$1"); do echo "url = \"$base/delay\""; echo 'output = "/dev/null"'; done >"$list"
	start=$(date +%s%N)
	curl -s --no-progress-meter --parallel --parallel-max "${2:-64}" --config "$list" 2>/dev/null
	awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

# The raw floor: $1 GETs of /delay from test/bench/floor.c (a plain C
# client on raw sockets, as throughput.sh uses it) on $2 (64) keep-alive
# connections at once; seconds.  Built on first use.
raw_floor() {
	local bin="$QC_WORK/floor"
	[ -x "$bin" ] || cc -O2 -o "$bin" "$QC_ROOT/test/bench/floor.c" || return 1
	"$bin" 127.0.0.1 "$QC_NGINX_PORT" /delay "$1" "${2:-64}"
}

# The path of test/bench/curl_floor.c built against the system's libcurl
# (built on first use).
curl_floor_bin() {
	local bin="$QC_WORK/curl_floor"
	[ -x "$bin" ] || cc -O2 -o "$bin" "$QC_ROOT/test/bench/curl_floor.c" $(pkg-config --cflags --libs libcurl) || return 1
	echo "$bin"
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}

# "min / median" of the numbers given (the lower middle one for an even
# count), with $1 decimals.
min_median() {
	local digits=$1
	shift
	printf '%s\n' "$@" | sort -g |
		awk -v d="$digits" '{ v[NR] = $1 } END { printf "%.*f / %.*f", d, v[1], d, v[int((NR + 1) / 2)] }'
}

# The pid of a worker: $1 async (default) or callback for ours, pg_net for
# pg_net's.
worker_pid() {
	local type="queryclaw ${1:-async} worker"
	[ "${1:-}" = pg_net ] && type="pg_net % worker"
	qc_psql -At -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE '$type' LIMIT 1"
}

# The worker's CPU time so far (user + system), in seconds; $1 names the
# worker as for worker_pid.
worker_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$(worker_pid "${1:-async}")/stat"
}

# The seconds the worker has waited so far for a CPU while it could run
# (its run-queue wait, /proc/PID/schedstat): what other work on the machine
# took from it.  $1 names the worker as for worker_pid.
worker_waited() {
	awk '{ printf "%.3f", $2 / 1e9 }' "/proc/$(worker_pid "${1:-async}")/schedstat"
}

# The CPU seconds from $1 to now, of the worker $2 names (async, callback).
cpu_since() {
	awk -v a="$1" -v b="$(worker_cpu "${2:-async}")" 'BEGIN { printf "%.2f", b - a }'
}

# The worker's private memory (RssAnon): its RSS also counts the pages of
# shared buffers it touched, which grow with the table, not with a leak.
worker_rss() {
	local pid
	pid=$(worker_pid)
	awk '/VmRSS|RssAnon/ {printf "%s %s kB  ", $1, $2}' "/proc/$pid/status"
}

# pg_net (github.com/supabase/pg_net), built with PGXS against this
# PostgreSQL into a cache, once per major and source, then copied into the
# private install.  Its source is never part of this tree: it is looked
# for in QC_PGNET_SRC, ../shared/pg_net beside the tree, and the cache's
# src/ (where a copy of its public source can be put).  Without a source,
# a build already in the cache for this major is used.  Sets PGNET_BUILD
# (the build's directory) when pg_net is installed, else PGNET_SKIP (why
# not, in a few words).
pgnet_install() {
	local cache src="" dir key rc=0
	PGNET_BUILD="" PGNET_SKIP=""
	cache=${QC_PGNET_CACHE:-/var/cache/queryclaw_ext/pgnet}
	[ "$(id -u)" -eq 0 ] || cache=${QC_PGNET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/queryclaw_ext/pgnet}
	for dir in "${QC_PGNET_SRC:-}" "$QC_ROOT/../shared/pg_net" "$cache/src"; do
		[ -z "$src" ] && [ -n "$dir" ] && [ -r "$dir/Makefile" ] && src=$dir
	done
	if [ -n "$src" ]; then
		key=$QC_PG_MAJOR-$(cd "$src" && find Makefile pg_net.control.in src sql -type f | sort | xargs cat | sha256sum | cut -c1-12)
		dir=$cache/$key
		mkdir -p "$cache" || { PGNET_SKIP="cannot write the cache $cache"; return 1; }
		(
			flock 9
			[ -f "$dir/.built" ] && exit 0
			rm -rf "$dir" "$dir.work"
			qc_log "building pg_net for PostgreSQL $QC_PG_MAJOR (cached in $dir)" >&2
			cp -r "$src" "$dir.work" &&
				make -C "$dir.work" PG_CONFIG="$QC_PG_CONFIG" >"$dir.log" 2>&1 &&
				make -C "$dir.work" PG_CONFIG="$QC_PG_CONFIG" DESTDIR="$dir" install >>"$dir.log" 2>&1
			rc=$?
			[ $rc -eq 0 ] && cp "$src/SOURCE" "$dir/" 2>/dev/null
			rm -rf "$dir.work"
			[ $rc -eq 0 ] && touch "$dir/.built"
			exit $rc
		) 9>"$cache/$key.lock" || { PGNET_SKIP="it did not build (see $dir.log)"; return 1; }
	else
		dir=$(ls -td "$cache/$QC_PG_MAJOR"-*/.built 2>/dev/null | head -1)
		dir=${dir%/.built}
		[ -n "$dir" ] || { PGNET_SKIP="no source (QC_PGNET_SRC, ../shared/pg_net or $cache/src) and no build cached for PostgreSQL $QC_PG_MAJOR"; return 1; }
	fi
	tar -C "$dir" --exclude='*/bitcode' -cf - usr | tar -C "$QC_WORK/install" -xf - ||
		{ PGNET_SKIP="it could not be added to the private install"; return 1; }
	PGNET_BUILD=$dir
}
