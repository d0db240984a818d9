#!/usr/bin/env bash
# test/fuzz/run.sh: `make fuzz-run FUZZ_SECONDS=N` — run every fuzz target.
#
# Each target runs for N seconds (default 60), at most FUZZ_JOBS (default
# 2) at once, starting from its seed corpus in test/fuzz/corpus/TARGET plus
# whatever earlier runs found (kept in test/fuzz/build/corpus/TARGET, not
# in git).  N = 0 only replays the seeds and regression cases.  Then a
# table: executions, executions per second, coverage (edges and features),
# corpus size, and whether the target stayed clean.  A crash, a sanitizer
# report, a broken property, a leak or an input slower than 10 s fails the
# run; libFuzzer writes the input that did it to test/fuzz/build/artifacts/.
#
# FUZZ_TARGETS="url json" runs a subset.  A regression case is kept by
# copying the artifact into test/fuzz/corpus/TARGET/ under a telling name.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-${FUZZ_SECONDS:-60}}
jobs=${FUZZ_JOBS:-2}
targets=${FUZZ_TARGETS:-$(sed -n 's/^TARGETS = //p' "$here/Makefile")}
build="$here/build"
mkdir -p "$build/logs" "$build/artifacts"

# Largest input tried: HTML and bodies need room for structure.
max_len() {
	case $1 in
		html | charset) echo 16384 ;;
		*) echo 4096 ;;
	esac
}

run_one() {
	local t=$1 work="$build/corpus/$1" dict=()
	local common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1
		-artifact_prefix="$build/artifacts/$t-")

	[ -f "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
	mkdir -p "$work"
	if [ "$seconds" -eq 0 ]; then
		"$build/fuzz_$t" "${common[@]}" -runs=0 "$here/corpus/$t" >"$build/logs/$t.log" 2>&1
	else
		"$build/fuzz_$t" "${common[@]}" "${dict[@]}" -max_len="$(max_len "$t")" \
			-max_total_time="$seconds" "$work" "$here/corpus/$t" >"$build/logs/$t.log" 2>&1
	fi
}

for t in $targets; do
	[ -x "$build/fuzz_$t" ] || { echo "fuzz_$t is not built: run 'make fuzz' first" >&2; exit 1; }
done
echo "running $(echo $targets | wc -w) targets for ${seconds}s each, $jobs at a time"
for t in $targets; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait

# The figures, from libFuzzer's last status line and final statistics.
failed=0
printf '%-8s %10s %8s %6s %9s %14s  %s\n' target execs execs/s cov features corpus result
for t in $targets; do
	log="$build/logs/$t.log"
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	stat() { sed -n "s/^stat::$1: *//p" "$log"; }
	field() { echo "$last" | sed -n "s/.* $1: \([^ ]*\).*/\1/p"; }
	if grep -qE '^==[0-9]+==|^SUMMARY|^fuzz: property|^shim: ERROR|libFuzzer: (timeout|out-of-memory|fuzz target exited)' "$log"; then
		result="FAILED: see $log"
		failed=$((failed + 1))
	else
		result=clean
	fi
	printf '%-8s %10s %8s %6s %9s %14s  %s\n' "$t" "$(stat number_of_executed_units)" \
		"$(stat average_exec_per_sec)" "$(field cov)" "$(field ft)" \
		"$(field corp)" "$result"
done
[ "$failed" -eq 0 ]
