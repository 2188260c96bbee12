#!/usr/bin/env bash
# Builds tansu (a Kafka-compatible broker from crates.io) for the Kafka tests,
# into a cache outside the repo, the way build-libcatboostmodel.sh builds the
# official CatBoost library:
#
#   ${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}/tansu-0.6.0/
#       bin/tansu      the broker
#       target/        cargo's build tree while building (an interrupted
#                      build resumes from it; removed once built: 1.5 GiB)
#       build.log
#
# Why tansu: it is the Kafka-compatible broker the package registries offer
# (no JVM on this machine, no network beyond the registries). Storage:
# `dynostore` gives it in-memory storage (`memory://`: a broker start is
# instant and leaves nothing behind), `libsql` a SQLite file (`sqlite://`),
# which survives the broker's restart (tests/kafka's restart case). About
# 15 minutes on 2 idle cores, much longer on busy ones.
#
# Environment:
#   EDGEGUARD_CACHE        cache root (default ~/.cache/edgeguard)
#   EDGEGUARD_BUILD_JOBS   cargo parallelism (default: number of CPUs)
#   EDGEGUARD_FORCE=1      rebuild even when the binary exists
set -euo pipefail

TANSU_VERSION=0.6.0
CACHE="${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}"
PREFIX="$CACHE/tansu-$TANSU_VERSION"
BIN="$PREFIX/bin/tansu"
LOG="$PREFIX/build.log"
JOBS="${EDGEGUARD_BUILD_JOBS:-$(nproc)}"

built() {
    [[ -x "$BIN" && "${EDGEGUARD_FORCE:-0}" != 1 ]]
}

if built; then
    echo "tansu: already built: $BIN"
    exit 0
fi

mkdir -p "$PREFIX"
# Two cargo builds in one target directory wait for each other anyway; the
# lock makes the second one say so and then find the binary built.
exec 9>"$PREFIX/.build.lock"
if ! flock -n 9; then
    echo "tansu: another build holds $PREFIX/.build.lock; waiting for it"
    flock 9
    if built; then
        echo "tansu: already built: $BIN"
        exit 0
    fi
fi
echo "tansu: building tansu $TANSU_VERSION into $PREFIX (log: $LOG)"
exec 3>&1
exec >>"$LOG" 2>&1
trap 'rc=$?; if (( rc != 0 )); then echo "tansu: FAILED (exit $rc), see $LOG" >&3; tail -n 30 "$LOG" >&3; fi' EXIT

echo "== $(date -u +%FT%TZ) cargo install tansu $TANSU_VERSION -j$JOBS"
start=$SECONDS
# --locked: tansu's own Cargo.lock, so the build does not drift with new
# releases of its dependencies. CARGO_TARGET_DIR in the cache: an interrupted
# build (CI's budget ran out) resumes where it stopped on the next run.
CARGO_TARGET_DIR="$PREFIX/target" cargo install tansu \
    --version "=$TANSU_VERSION" --locked --features dynostore,libsql \
    --root "$PREFIX" --jobs "$JOBS"
echo "== built in $(( SECONDS - start )) s"
rm -rf "$PREFIX/target"
echo "tansu: built in $(( SECONDS - start )) s: $BIN" >&3
