#!/usr/bin/env bash
# test/meta/counts.sh: a step of the test command that did not run never
# passes as "0 failed".
#
# Usage (from test/run.sh):  test/meta/counts.sh
#
# Gives test/lib.sh's counting functions (qc_run_checks, qc_count_results,
# qc_skip and qc_summary) the steps that once went uncounted: a make that
# could not enter its directory ("Permission denied", as make installcheck
# once did from a clone the postgres user could not enter), a pg_regress
# that ran fewer tests than it was given, a script that said nothing,
# and a skip.  Each must count as failed (or as skipped, saying why), and
# the summary line must say so.  Prints "ok - ..." / "not ok - ..." lines.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
QC_WORK=$(mktemp -d)
trap 'rm -rf "$QC_WORK"' EXIT

# What one step adds to the counts, as "passed failed skipped".
counted() {
	local passed=0 failed=0 skipped=0
	"$@" >"$QC_WORK/shown" 2>&1
	echo "$passed $failed $skipped"
}

# A fake pg_regress run: its log (first argument), and the count asked for.
regress() {
	local suite="$QC_WORK/suite"
	rm -rf "$suite" && mkdir -p "$suite"
	printf '%s' "$1" >"$suite/regress.log"
	qc_count_results "$suite" "$2" "$3"
}

qc_check "a step whose make cannot enter its directory counts as failed" \
	"$(counted qc_run_checks make -C "$QC_WORK/no-such-directory" installcheck)" "0 1 0"
qc_check "a step that exits 0 and says nothing counts as failed" \
	"$(counted qc_run_checks true)" "0 1 0"
qc_check "a step's own ok and not ok lines are counted" \
	"$(counted qc_run_checks printf 'ok - a\nok - b\nnot ok - c\n')" "2 1 0"
qc_check "a step that skips, saying why, counts as skipped" \
	"$(counted qc_run_checks echo 'skip - no Citus here')" "0 0 1"
qc_check "pg_regress that could not run any of its 10 tests counts 10 failed" \
	"$(counted regress "make: *** installcheck: Permission denied.  Stop.
" 10 2)" "0 10 0"
qc_check "pg_regress that ran 2 of 3 tests counts the third as failed" \
	"$(counted regress "test 001_setup                   ... ok          12 ms
test 002_policy                  ... ok          30 ms
" 3 2)" "2 1 0"
qc_check "pg_regress 16's TAP lines are counted" \
	"$(counted regress "ok 1         - 001_setup                                  12 ms
not ok 2     - 002_policy                                 30 ms
" 2 1)" "1 1 0"
qc_check "pg_regress that failed with every test ok counts as failed" \
	"$(counted regress "test 001_setup                   ... ok          12 ms
" 1 2)" "1 1 0"
qc_check "a test that passes with its step's status 0 is all that passes" \
	"$(counted regress "test 001_setup                   ... ok          12 ms
" 1 0)" "1 0 0"

summary() {
	local passed=$1 failed=$2 skipped=$3
	qc_summary
}
qc_check "the summary names the skipped steps" "$(summary 5 0 1)" "5 passed, 0 failed, 1 skipped"
qc_check "the summary of a run without skips" "$(summary 5 1 0)" "5 passed, 1 failed"
