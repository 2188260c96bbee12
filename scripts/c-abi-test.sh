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
# The model C API example of docs/c-api.md (examples/model_api.c), same flags,
# on the shipped bot model (feature schema 4: 17 floats, 1 categorical).
example=${CARGO_TARGET_DIR:-$root/target}/c-abi/model_api-asan
libdir=${CARGO_TARGET_DIR:-$root/target}/$profile
${CC:-clang} -std=c11 -Wall -Wextra -Werror -O1 -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=all -I "$root/include" \
    "$root/examples/model_api.c" -o "$example" -L "$libdir" -Wl,-rpath,"$libdir" -ledgeguard -lm
out=$(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$example" "$root/models/bot.json")
echo "examples/model_api.c: $out"
case $out in
"17 floats, 1 categorical: p = "[01].[0-9]*) ;;
*) echo "examples/model_api.c: unexpected output" >&2; exit 1 ;;
esac
