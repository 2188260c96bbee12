#!/bin/sh
# Builds tests/c/hostile.c against include/edgeguard.h and a built libedgeguard.so.
#
#   tests/c/build.sh sanitize PROFILE OUT   ASan + UBSan, aborting on the first report
#   tests/c/build.sh plain    PROFILE OUT   no instrumentation (for valgrind)
#
# PROFILE is the cargo profile directory under target/ (debug or release).
# The binary gets an rpath to that directory, so it runs without LD_LIBRARY_PATH.
set -eu
mode=$1 profile=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
libdir=${CARGO_TARGET_DIR:-$root/target}/$profile
[ -f "$libdir/libedgeguard.so" ] || { echo "no $libdir/libedgeguard.so; run cargo build first" >&2; exit 1; }
case $mode in
sanitize) flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" ;;
plain) flags="-O1 -g" ;;
*) echo "mode must be sanitize or plain" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086 # $flags is a word list on purpose
${CC:-clang} -std=c11 -Wall -Wextra -Werror $flags -I "$root/include" \
    "$root/tests/c/hostile.c" -o "$out" -L "$libdir" -Wl,-rpath,"$libdir" -ledgeguard -lm
