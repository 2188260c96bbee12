#!/usr/bin/env bash
# Measures the official CatBoost library per single-document prediction:
# nanoseconds per call, and heap allocations per call counted by valgrind's
# DHAT (dhat-rs sees only Rust's allocator; the library allocates in C++).
#
# Method: benches/model_official_allocs.rs loads a model, predicts every
# document once (warm-up), then makes N predictions. DHAT runs it with N=0 and
# N=$ALLOC_PREDICTIONS; (blocks(N) - blocks(0)) / N is the steady-state count
# per prediction, load and warm-up cancelling out. The time comes from a run
# outside valgrind with $TIME_PREDICTIONS predictions. A third DHAT run loads
# and drops the model twice more: the same heap left at exit means dropping an
# OfficialModel frees what loading allocated.
#
# Usage: scripts/official-allocs.sh [MODEL.cbm DOCS.jsonl]...
# Default: the binary CTR fixture, then the bench models of benches/data/
# (model-baseline: 300 trees of depth 6, 4 categorical features; model-bench:
# 1000 trees of depth 6, 20 float and 8 categorical features).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALLOC_PREDICTIONS="${ALLOC_PREDICTIONS:-1000}"
TIME_PREDICTIONS="${TIME_PREDICTIONS:-20000}"

"$ROOT/scripts/build-libcatboostmodel.sh"
# shellcheck source=official-env.sh
source "$ROOT/scripts/official-env.sh"
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
cd "$ROOT"

if (($# == 0)); then
    set -- tests/fixtures/catboost/binary_ctr.cbm tests/fixtures/catboost/binary_ctr.docs.jsonl
    for name in model-baseline model-bench; do
        if [[ -f benches/data/$name.cbm ]]; then
            set -- "$@" "benches/data/$name.cbm" "benches/data/$name-docs.jsonl"
        else
            echo "note: no benches/data/$name.cbm (python3 models/make_fixtures.py --bench)" >&2
        fi
    done
fi
(($# % 2 == 0)) || { echo "usage: $0 [MODEL.cbm DOCS.jsonl]..." >&2; exit 2; }

bin=$(cargo bench --features official --bench model_official_allocs --no-run --message-format=json |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "model_official_allocs" and msg.get("executable"):
        print(msg["executable"])
')
[[ -x "$bin" ]] || { echo "could not find the model_official_allocs bench executable" >&2; exit 1; }

# The library links its own allocator statically; --soname-synonyms lets DHAT
# replace malloc/new inside it as well as in libc.
dhat() { # dhat FIELD ARGS... -> "<blocks>" of DHAT's FIELD line ("Total" or "At t-end")
    local field=$1 out
    shift
    out=$(valgrind --tool=dhat --dhat-out-file=/dev/null \
        --soname-synonyms=somalloc='*catboostmodel*' "$bin" "$@" 2>&1 >/dev/null) ||
        { echo "$out" >&2; return 1; }
    echo "$out" | sed -n "s/^==[0-9]*== $field: *[0-9,]* bytes in \([0-9,]*\) blocks.*/\1/p" | tr -d ,
}

while (($#)); do
    model=$1 docs=$2
    shift 2
    timing=$("$bin" "$model" "$docs" "$TIME_PREDICTIONS")
    base=$(dhat Total "$model" "$docs" 0)
    loaded=$(dhat Total "$model" "$docs" "$ALLOC_PREDICTIONS")
    [[ -n "$base" && -n "$loaded" ]] || { echo "could not read DHAT's totals" >&2; exit 1; }
    end1=$(dhat "At t-end" "$model" "$docs" 0 1)
    end3=$(dhat "At t-end" "$model" "$docs" 0 3)
    per_call=$(python3 -c "print(f'{($loaded - $base) / $ALLOC_PREDICTIONS:.2f}')")
    echo "$timing allocs_per_prediction=$per_call (DHAT blocks: $base at N=0, $loaded at N=$ALLOC_PREDICTIONS)" \
        "live_at_exit_1_load=$end1 live_at_exit_3_loads=$end3"
done
