#!/usr/bin/env bash
# Tests with the official CatBoost library backend: builds libcatboostmodel.so
# when it is absent (slow the first time, see build-libcatboostmodel.sh), then
# runs `cargo test --features official` against it. Extra arguments go to
# cargo test (e.g. `scripts/test-official.sh --test official_parity`).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/build-libcatboostmodel.sh"
# shellcheck source=official-env.sh
source "$ROOT/scripts/official-env.sh"
cd "$ROOT"
cargo test --features official "$@"
