#!/usr/bin/env bash
# Builds tansu (a Kafka-compatible broker from crates.io) for the Kafka tests,
# into a cache outside the repo, the way build-libcatboostmodel.sh builds the
# official CatBoost library:
#
#   ${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}/tansu-0.6.0/
#       bin/tansu      the broker
#       src/           tansu's and tansu-broker's sources, patched (below)
#       target/        cargo's build tree while building (an interrupted
#                      build resumes from it; removed once built: 1.5 GiB)
#       build.log
#
# Why tansu: it is the Kafka-compatible broker the package registries offer
# (no JVM on this machine, no network beyond the registries). Storage:
# `dynostore` gives it in-memory storage (`memory://`: a broker start is
# instant and leaves nothing behind), `libsql` a SQLite file (`sqlite://`),
# which survives the broker's restart (tests/kafka's restart cases). About
# 15 minutes on 2 idle cores, much longer on busy ones.
#
# The patch: tansu 0.6.0's group coordinator, in a formed group, drops a
# member whose session timed out while answering another member's
# heartbeat, but stays in the same generation: the survivors rejoin, get
# their old assignment back, and the dead member's partitions are read by
# no one, for good (measured: a SIGKILLed member's 2 of 4 partitions never
# moved). Patched, the heartbeat only notices the expired member; the
# coordinator's own check right after it removes the member and starts a
# new generation, as Apache Kafka does. One line in one function, checked
# to be exactly there.
#
# The second patch (tansu-storage's fetch): tansu 0.6.0 sleeps after every
# look at the log, data or not (half the time left of the consumer's
# `fetch.wait.max.ms` while 250 ms or more are left, else all of it), so a
# fetch with data waiting is answered only after most of that wait:
# measured one answer (~5 MB, one partition) every ~257 ms at librdkafka's
# 500 ms, a consumer held to a fifth of what replay scores. Apache Kafka
# answers a fetch as soon as it holds `fetch.min.bytes` and parks it (up to
# `fetch.wait.max.ms`) only when it does not. Patched, the sleep happens only
# while the fetch is still short of `fetch.min.bytes`. One statement, checked
# to be exactly there.
#
# The third patch (tansu-storage's in-memory log): asked for an offset
# inside a stored batch (a producer's batch of many messages, kept whole),
# tansu 0.6.0 answers from the next batch on, so a consumer that resumes
# from a commit, a seek or a pause inside a batch silently skips the rest
# of it: measured 217 of 20 000 messages lost by a group resuming at
# offset 2 519 (its next message was 2 736). Apache Kafka answers from the
# batch that holds the offset and the client drops the records before it.
# Patched, the in-memory log does the same, and the fetch's next offset is
# the one after the last batch it got (not the offset asked for plus the
# records counted, which a first batch starting earlier would overshoot).
# Each changed text is checked to be exactly there.
#
# PATCHES names the patches; a cache built with other ones (an older version
# of this script) is built again, once.
#
# Environment:
#   EDGEGUARD_CACHE        cache root (default ~/.cache/edgeguard)
#   EDGEGUARD_BUILD_JOBS   cargo parallelism (default: number of CPUs)
#   EDGEGUARD_FORCE=1      rebuild even when the binary exists
#
# `scripts/build-tansu.sh --check` exits 0 when the patched broker is built,
# 1 when a build is needed (.ci/run budgets it).
set -euo pipefail

TANSU_VERSION=0.6.0
CACHE="${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}"
PREFIX="$CACHE/tansu-$TANSU_VERSION"
BIN="$PREFIX/bin/tansu"
SRC="$PREFIX/src"
LOG="$PREFIX/build.log"
JOBS="${EDGEGUARD_BUILD_JOBS:-$(nproc)}"
# What src/.edgeguard-patched holds once the sources are patched.
PATCHES="group-expiry fetch-answer fetch-whole-batch"

# The sources are unpacked and carry exactly today's patches.
patched() {
    [[ -f "$SRC/.edgeguard-patched" && "$(cat "$SRC/.edgeguard-patched")" == "$PATCHES" ]]
}

# Built from those sources: a binary from before a patch (earlier versions
# of this script installed tansu unpatched, then with the first patch
# only, at the same path) is built again.
built() {
    patched && [[ -x "$BIN" && "$BIN" -nt "$SRC/.edgeguard-patched" && "${EDGEGUARD_FORCE:-0}" != 1 ]]
}

if [[ "${1:-}" == --check ]]; then
    # For .ci/run: whether a build is needed (exit 1), without building.
    built
    exit
fi
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
echo "== $(date -u +%FT%TZ) tansu $TANSU_VERSION -j$JOBS"
start=$SECONDS

# Unpacked and patched once; an interrupted build resumes in the same tree.
if ! patched; then
    echo "== fetching tansu, tansu-broker and tansu-storage $TANSU_VERSION from crates.io (cargo)"
    fetch="$PREFIX/fetch"
    rm -rf "$fetch" "$SRC"
    mkdir -p "$fetch/src" "$SRC"
    cat >"$fetch/Cargo.toml" <<TOML
[package]
name = "edgeguard-fetch-tansu"
version = "0.0.0"
edition = "2021"
publish = false

# Only the three crates' own sources: their dependencies come with tansu's
# Cargo.lock at build time.
[dependencies]
tansu = { version = "=$TANSU_VERSION", default-features = false }
tansu-broker = { version = "=$TANSU_VERSION", default-features = false }
tansu-storage = { version = "=$TANSU_VERSION", default-features = false }
TOML
    : >"$fetch/src/lib.rs"
    cargo fetch --manifest-path "$fetch/Cargo.toml"
    cache_dir="${CARGO_HOME:-$HOME/.cargo}/registry/cache"
    for crate in tansu tansu-broker tansu-storage; do
        archive=$(find "$cache_dir" -name "$crate-$TANSU_VERSION.crate" | head -n 1)
        [[ -n "$archive" ]] || { echo "ERROR: no $crate-$TANSU_VERSION.crate under $cache_dir"; exit 1; }
        mkdir -p "$SRC/$crate"
        tar -xzf "$archive" -C "$SRC/$crate" --strip-components=1
    done
    rm -rf "$fetch"

    echo "== patching tansu-broker: a member's expiry starts a new generation"
    python3 - "$SRC/tansu-broker/src/coordinator/group/administrator.rs" <<'PY'
import sys

path = sys.argv[1]
text = open(path).read()

formed = "impl<O> Group for Inner<O, Formed>\n"
check = "        if self.missed_heartbeat(group_id, now) || (generation_id < self.generation_id) {\n"
helper_at = "impl<O> Inner<O, Formed>\nwhere\n    O: Storage,\n{\n"
helper = """    // edgeguard (scripts/build-tansu.sh): whether a member's session timed
    // out, without removing it, so that Wrapper::missed_heartbeat, run
    // right after the heartbeat, removes it and starts a new generation.
    fn expired(&self, now: SystemTime) -> bool {
        self.members.values().any(|member| {
            member.last_contact.is_none_or(|last_contact| {
                now.duration_since(last_contact).unwrap_or_default().as_millis()
                    > u128::try_from(self.session_timeout_ms).unwrap_or(45_000)
            })
        })
    }

"""

def once(haystack, needle, what):
    n = haystack.count(needle)
    if n != 1:
        sys.exit(f"administrator.rs: expected {what} once, found it {n} times; tansu changed, update this patch")

once(text, formed, "the Formed group's impl")
head, tail = text.split(formed)
once(tail, check, "the Formed heartbeat's missed_heartbeat check")
tail = tail.replace(check, check.replace("self.missed_heartbeat(group_id, now)", "self.expired(now)"))
text = head + formed + tail
once(text, helper_at, "impl Inner<O, Formed>")
text = text.replace(helper_at, helper_at + helper)
open(path, "w").write(text)
PY
    echo "== patching tansu-storage: a fetch with data is answered at once"
    python3 - "$SRC/tansu-storage/src/service/fetch.rs" <<'PY'
import sys

path = sys.argv[1]
text = open(path).read()

sleep = """                sleep(if remaining.as_millis() >= 250 {
                    remaining / 2
                } else {
                    remaining
                })
                .await;
"""
# The loop goes round again (and so sleeps) only while the fetch is short
# of min_bytes: with the data in hand, answer now, as Apache Kafka does.
patched = """                // edgeguard (scripts/build-tansu.sh): wait only while the
                // fetch is short of min_bytes; with data, answer at once.
                if bytes <= min_bytes {
                    sleep(if remaining.as_millis() >= 250 {
                        remaining / 2
                    } else {
                        remaining
                    })
                    .await;
                }
"""
loop = "            while elapsed <= max_wait && bytes <= min_bytes {\n"
# The next offset to read from the log: after the last batch fetched.
advance = """            offset += fetched
                .iter()
                .map(|batch| batch.record_count as i64)
                .sum::<i64>();
"""
advanced = """            // edgeguard (scripts/build-tansu.sh): after the last batch
            // fetched; the first one may start before `offset`.
            offset = fetched.last().map_or(offset, |batch| {
                offset.max(batch.base_offset + i64::from(batch.last_offset_delta) + 1)
            });
"""
for needle, what in ((sleep, "the fetch loop's sleep"), (loop, "the fetch loop"),
                     (advance, "the partition fetch's next offset")):
    n = text.count(needle)
    if n != 1:
        sys.exit(f"fetch.rs: expected {what} once, found it {n} times; tansu changed, update this patch")
open(path, "w").write(text.replace(sleep, patched).replace(advance, advanced))
PY
    echo "== patching tansu-storage: a fetch inside a stored batch starts with that batch"
    python3 - "$SRC/tansu-storage/src/dynostore.rs" <<'PY'
import sys

path = sys.argv[1]
text = open(path).read()
# `offsets` holds the base offsets of the partition's stored batches; the
# one holding `offset` is the last base at or before it.
skip = "        for offset in offsets.split_off(&offset) {\n"
whole = """        // edgeguard (scripts/build-tansu.sh): from the batch holding
        // `offset`, as Kafka does (the client drops the records before it),
        // not from the next one.
        let first = offsets.range(..=offset).next_back().copied().unwrap_or(offset);
        for offset in offsets.split_off(&first) {
"""
n = text.count(skip)
if n != 1:
    sys.exit(f"dynostore.rs: expected the fetch's batch loop once, found it {n} times; tansu changed, update this patch")
open(path, "w").write(text.replace(skip, whole))
PY
    cat >>"$SRC/tansu/Cargo.toml" <<'TOML'

[patch.crates-io]
tansu-broker = { path = "../tansu-broker" }
tansu-storage = { path = "../tansu-storage" }
TOML
    echo "$PATCHES" >"$SRC/.edgeguard-patched"
fi

echo "== cargo build (tansu's Cargo.lock; only the patched crates' entries move to their paths)"
CARGO_TARGET_DIR="$PREFIX/target" cargo build --release --jobs "$JOBS" \
    --manifest-path "$SRC/tansu/Cargo.toml" --features dynostore,libsql --bin tansu
mkdir -p "$PREFIX/bin"
cp "$PREFIX/target/release/tansu" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "== built in $(( SECONDS - start )) s"
rm -rf "$PREFIX/target"
echo "tansu: built in $(( SECONDS - start )) s: $BIN" >&3
