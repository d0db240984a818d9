#!/usr/bin/env bash
# test/fuzz/check.sh PG_CONFIG: what `make test` checks of the fuzz targets.
#
# Builds every target of test/fuzz/Makefile against PG_CONFIG's headers,
# then has each replay its seed and regression inputs once (run.sh 0), so
# that a change of the code they call cannot leave them unbuildable, or a
# fixed finding come back, unnoticed.  Prints "ok - ..." and "not ok - ..."
# lines.  The compiler is installed by the caller (QC_FUZZ_PACKAGES).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
if make -C "$here" -s -j"$(nproc)" PG_CONFIG="$1" >"$log" 2>&1; then
	rm -f "$log"
	echo "ok - the fuzz targets build (clang-14, ASan + UBSan)"
else
	cat "$log"
	rm -f "$log"
	echo "not ok - the fuzz targets build (clang-14, ASan + UBSan)"
	exit 1
fi
FUZZ_CHECKS=1 exec bash "$here/run.sh" 0
