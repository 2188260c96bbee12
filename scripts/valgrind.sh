#!/bin/sh
# The hostile C program, without sanitizers, against the release library under
# valgrind memcheck: zero errors and zero definite leaks, or a non-zero exit.
#
#   scripts/valgrind.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --lib
out=${CARGO_TARGET_DIR:-$root/target}/c-abi/hostile-plain
mkdir -p "$(dirname "$out")"
tests/c/build.sh plain release "$out"
valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite \
    --error-exitcode=1 "$out" "$root/tests/fixtures/catboost"
