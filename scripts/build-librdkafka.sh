#!/usr/bin/env bash
# Builds librdkafka as a shared library from the source the rdkafka crate
# vendors (rdkafka-sys, pinned by Cargo.lock: the librdkafka edgeguard's own
# Kafka client is), into a cache outside the repo:
#
#   ${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}/librdkafka-<version>/
#       lib/librdkafka.so.1
#       build.log
#
# What for: Debian 12's rsyslog-kafka (omkafka) links Debian's librdkafka
# 2.0.2, which cannot talk to the test broker (tansu 0.6 answers its
# ApiVersionRequest with a well-formed v3 response, and 2.0.2 fails with
# "ApiVersionRequest failed: Local: Read underflow", api.version.request=false
# or not). librdkafka keeps its ABI (SONAME librdkafka.so.1), so rsyslogd
# started with LD_LIBRARY_PATH pointing here runs Debian's omkafka on 2.12.
# docs/kafka.md says what a fleet does instead (a distribution's newer
# librdkafka, or Confluent's packages).
#
# Environment:
#   EDGEGUARD_CACHE        cache root (default ~/.cache/edgeguard)
#   EDGEGUARD_BUILD_JOBS   make parallelism (default: number of CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}"
JOBS="${EDGEGUARD_BUILD_JOBS:-$(nproc)}"

# The vendored source of the rdkafka-sys that Cargo.lock pins.
cargo fetch --locked >/dev/null
manifest=$(cargo metadata --locked --format-version 1 --features kafka |
    python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "rdkafka-sys"))')
source_dir="$(dirname "$manifest")/librdkafka"
version=$(sed -n 's/^#define RD_KAFKA_VERSION *0x\([0-9a-f]*\).*/\1/p' "$source_dir/src/rdkafka.h")
version=$(printf '%d.%d.%d' "0x${version:0:2}" "0x${version:2:2}" "0x${version:4:2}")
PREFIX="$CACHE/librdkafka-$version"
LIB="$PREFIX/lib/librdkafka.so.1"

if [[ -f "$LIB" ]]; then
    echo "librdkafka: already built: $LIB"
    exit 0
fi
mkdir -p "$PREFIX"
exec 9>"$PREFIX/.build.lock"
flock 9
if [[ -f "$LIB" ]]; then
    echo "librdkafka: already built: $LIB"
    exit 0
fi
LOG="$PREFIX/build.log"
echo "librdkafka: building $version from $source_dir into $PREFIX (log: $LOG)"
start=$SECONDS
rm -rf "$PREFIX/src"
cp -r "$source_dir" "$PREFIX/src"
(
    cd "$PREFIX/src"
    # Plaintext brokers and zlib, as the tests use them; no OpenSSL, SASL,
    # zstd or curl to find at build time.
    ./configure --disable-ssl --disable-gssapi --disable-zstd \
        --disable-curl --disable-lz4-ext &&
        make -j "$JOBS" libs
) >"$LOG" 2>&1 || { echo "librdkafka: FAILED, see $LOG"; tail -n 30 "$LOG"; exit 1; }
mkdir -p "$PREFIX/lib"
cp "$PREFIX/src/src/librdkafka.so.1" "$LIB.tmp"
mv "$LIB.tmp" "$LIB"
rm -rf "$PREFIX/src"
echo "librdkafka: built in $(( SECONDS - start )) s: $LIB"
