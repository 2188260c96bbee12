#!/usr/bin/env bash
# Replay throughput and peak RSS: 1 thread and all cores, two input sizes,
# against a serde_json::Value baseline. Inputs go to target/replay-bench/
# (generated once, reused). Extra arguments are input sizes in requests:
#     scripts/bench-replay.sh                 # 1000000 2000000
#     scripts/bench-replay.sh 100000 200000   # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench replay -- "$@"
