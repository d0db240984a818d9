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
# FUZZ_CHECKS=1 prints an "ok - ..." or "not ok - ..." line a target (and
# the end of a failed one's log) instead of the table, as `make test`
# counts them.
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
		html | article | charset) echo 16384 ;;
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
[ -n "${FUZZ_CHECKS:-}" ] ||
	echo "running $(echo $targets | wc -w) targets for ${seconds}s each, $jobs at a time"
for t in $targets; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait

# What a finding writes in a target's log; did the target's run stay clean?
finding='^==[0-9]+==|^SUMMARY|^fuzz: property|^shim: ERROR|libFuzzer: (timeout|out-of-memory|fuzz target exited)'
clean() {
	! grep -qE "$finding" "$1"
}

if [ -n "${FUZZ_CHECKS:-}" ]; then
	failed=0
	for t in $targets; do
		log="$build/logs/$t.log"
		what="its $(ls "$here/corpus/$t" | wc -l) seed and regression inputs"
		[ "$seconds" -eq 0 ] && what="fuzz_$t replays $what" || what="fuzz_$t runs ${seconds}s from $what"
		# a run that ended without its final statistics did not finish
		if clean "$log" && grep -q '^stat::number_of_executed_units' "$log"; then
			echo "ok - $what"
		else
			echo "not ok - $what (test/fuzz/build/logs/$t.log):"
			# the report from its first line, and where the input was kept
			sed -n "$(grep -m1 -nE "$finding" "$log" | cut -d: -f1),+24p" "$log" | sed 's/^/    /'
			grep 'Test unit written' "$log" | sed 's/^/    /'
			failed=$((failed + 1))
		fi
	done
	[ "$failed" -eq 0 ]
	exit
fi

# The figures, from libFuzzer's last status line and final statistics.
failed=0
printf '%-8s %10s %8s %6s %9s %14s  %s\n' target execs execs/s cov features corpus result
for t in $targets; do
	log="$build/logs/$t.log"
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	stat() { sed -n "s/^stat::$1: *//p" "$log"; }
	field() { echo "$last" | sed -n "s/.* $1: \([^ ]*\).*/\1/p"; }
	if clean "$log"; then
		result=clean
	else
		result="FAILED: see $log"
		failed=$((failed + 1))
	fi
	printf '%-8s %10s %8s %6s %9s %14s  %s\n' "$t" "$(stat number_of_executed_units)" \
		"$(stat average_exec_per_sec)" "$(field cov)" "$(field ft)" \
		"$(field corp)" "$result"
done
[ "$failed" -eq 0 ]
