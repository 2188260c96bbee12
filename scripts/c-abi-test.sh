#!/bin/sh
# Hostile input at the C ABI from C, under AddressSanitizer + UndefinedBehaviorSanitizer.
# Builds the debug library if needed (cargo skips it when up to date), builds
# tests/c/hostile.c with the sanitizers and runs it. Exit status: the program's.
#
#   scripts/c-abi-test.sh [debug|release]     (default debug)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
profile=${1:-debug}
cd "$root"
if [ "$profile" = release ]; then cargo build --release --lib; else cargo build --lib; fi
out=${CARGO_TARGET_DIR:-$root/target}/c-abi/hostile-asan
mkdir -p "$(dirname "$out")"
tests/c/build.sh sanitize "$profile" "$out"
# The Rust library is not ASan-instrumented, so its allocations are only
# seen through malloc/free interception; leak checking covers both sides.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$out" "$root/tests/fixtures/catboost"
