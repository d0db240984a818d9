# test/bench/benchlib.sh: what the queue's benchmarks share (sourced after
# test/lib.sh, with the cluster of qc_start_bench_with_nginx running and
# $base its nginx): the floor, a ratio, the async worker's pid, CPU and
# memory.

# The floor: $1 GETs of $base/delay from curl, $2 (64) in flight; seconds.
curl_floor() {
	local list="$QC_WORK/urls.cfg" start
	for _ in $(seq "$1"); do echo "url = \"$base/delay\""; echo 'output = "/dev/null"'; done >"$list"
	start=$(date +%s%N)
	curl -s --no-progress-meter --parallel --parallel-max "${2:-64}" --config "$list" 2>/dev/null
	awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}

worker_pid() {
	qc_psql -At -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queryclaw ${1:-async} worker' LIMIT 1"
}

# The worker's CPU time so far (user + system), in seconds; $1: callback
# for the callback worker's.
worker_cpu() {
	awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$(worker_pid "${1:-async}")/stat"
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
