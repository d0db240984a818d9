#!/usr/bin/env bash
# test/fuzz/build.sh: `make fuzz` — build the libFuzzer targets.
#
# Installs clang and its sanitizer runtimes (with the extension's own build
# dependencies) if they are missing, then builds every target listed in
# test/fuzz/Makefile into test/fuzz/build/.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

QC_PACKAGES="$QC_PACKAGES $QC_FUZZ_PACKAGES"
qc_install_deps || exit 1
make -C "$QC_ROOT/test/fuzz" -s -j"$(nproc)" PG_CONFIG="$QC_PG_CONFIG"
