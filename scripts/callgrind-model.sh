#!/usr/bin/env bash
# Instructions per single-document prediction, counted by callgrind on the
# three bench models (examples/predict_loop.rs). Time on a shared 2-core
# machine moves by tens of percent; instruction counts move by well under
# one, so this is the figure to compare two builds of the evaluator with.
#
# scripts/callgrind-model.sh [native|scalar|strings|official|scorer|gate] [ROUNDS]
# `official` needs the library (make libcatboostmodel) and builds with
# --features official. `scalar` forces the scalar tree kernel (what a CPU
# without AVX2 runs). `scorer` counts request scoring instead
# (examples/score_loop.rs: the shipped bot + spoof scorer on the traffic
# fixture; then the schema-1 pair of models/legacy/): extraction, both
# models, and the whole `Scorer::score`. `gate` counts `gate::run` in mode
# challenge (examples/gate_loop.rs): cookies valid, forged and absent,
# without rules and with an after-scoring challenge rule.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=${1:-native}
ROUNDS=${2:-4}
cd "$ROOT"
FEATURES=()
if [ "$MODE" = official ]; then
  # shellcheck source=official-env.sh
  source "$ROOT/scripts/official-env.sh"
  FEATURES=(--features official)
fi
if [ "$MODE" = scorer ]; then
  cargo build --quiet --release --example score_loop
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
  # shipped: the schema-4 bot + spoof; legacy: the schema-1 pair.
  for set in shipped legacy; do
    printf '%-34s %18s\n' "per request ($set bot + spoof)" instructions
    for part in extract_all models_all score_all; do
      valgrind --tool=callgrind --callgrind-out-file="$OUT/$part.out" \
        --toggle-collect="*score_loop*$part*" \
        target/release/examples/score_loop "$ROUNDS" "$set" >"$OUT/$part.stdout" 2>"$OUT/$part.log"
      requests=$(awk '{print $1}' "$OUT/$part.stdout")
      instructions=$(awk '/^summary:/ {print $2}' "$OUT/$part.out")
      case $part in
        extract_all) label="features (extract)" ;;
        models_all) label="both models (hash + evaluate)" ;;
        score_all) label="Scorer::score (all of it)" ;;
      esac
      printf '%-34s %18.0f\n' "$label" "$(echo "$instructions / $requests" | bc -l)"
    done
  done
  exit 0
fi
if [ "$MODE" = gate ]; then
  cargo build --quiet --release --example gate_loop
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
  printf '%-34s %18s\n' "per request (gate, mode challenge)" instructions
  for loc in plain rule; do
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$loc.out" \
      --toggle-collect='*gate_loop*run_all*' \
      target/release/examples/gate_loop "$ROUNDS" "$loc" >"$OUT/$loc.stdout" 2>"$OUT/$loc.log"
    requests=$(awk '{print $1}' "$OUT/$loc.stdout")
    instructions=$(awk '/^summary:/ {print $2}' "$OUT/$loc.out")
    case $loc in
      plain) label="gate::run, no rules" ;;
      rule) label="gate::run, a challenge rule" ;;
    esac
    printf '%-34s %18.0f\n' "$label" "$(echo "$instructions / $requests" | bc -l)"
  done
  exit 0
fi
cargo build --quiet --release --example predict_loop "${FEATURES[@]}"
BIN=target/release/examples/predict_loop
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
printf '%-16s %8s %14s %16s\n' model trees predictions "instr/prediction"
for case in \
  "binary_ctr tests/fixtures/catboost/binary_ctr.json tests/fixtures/catboost/binary_ctr.docs.jsonl" \
  "baseline_300x6 benches/data/model-baseline.json benches/data/model-baseline-docs.jsonl" \
  "bench_1000x6 benches/data/model-bench.json benches/data/model-bench-docs.jsonl"; do
  read -r name model docs <<<"$case"
  # Only the loop over predictions is counted, not loading.
  valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.out" \
    --toggle-collect='*predict_loop*predict_all*' \
    "$BIN" "$model" "$docs" "$ROUNDS" "$MODE" >"$OUT/$name.stdout" 2>"$OUT/$name.log"
  predictions=$(awk '{print $1}' "$OUT/$name.stdout")
  instructions=$(awk '/^summary:/ {print $2}' "$OUT/$name.out")
  trees=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['oblivious_trees']))" "$model")
  printf '%-16s %8s %14s %16.0f\n' "$name" "$trees" "$predictions" \
    "$(echo "$instructions / $predictions" | bc -l)"
done
