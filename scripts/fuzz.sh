#!/bin/sh
# Builds every cargo-fuzz target in fuzz/, seeds the corpora from the
# fixtures, runs each target in turn for SECONDS_PER_TARGET (default 60), and
# prints per target the executions and whether it crashed.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). The toolchain here is stable:
# RUSTC_BOOTSTRAP=1 lets it accept the nightly-only flags cargo-fuzz passes
# (-Zsanitizer=address, -Cpasses=sancov-module). Targets run one at a time
# on one job: the machine is shared. Crash inputs land in
# fuzz/artifacts/<target>/; reproduce one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/<file>
# (from fuzz/'s parent directory).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-"header_list_parse header_match features_extract model_load model_predict model_kernels replay_line tls_client_hello challenge_cookie"}
export RUSTC_BOOTSTRAP=1
cd "$root"
python3 fuzz/seed.py fuzz/corpus
cargo fuzz build --fuzz-dir fuzz
status=0
summary=""
for t in $targets; do
    log=fuzz/artifacts/$t.log
    mkdir -p fuzz/artifacts/"$t"
    echo "== $t: ${seconds}s" >&2
    if cargo fuzz run --fuzz-dir fuzz "$t" fuzz/corpus/"$t" -- \
        -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
        >"$log" 2>&1; then
        verdict="no crash"
    else
        verdict="CRASH: $(grep -m1 -o 'Test unit written to [^ ]*' "$log" || echo "see $log")"
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
    corpus=$(find fuzz/corpus/"$t" -type f | wc -l)
    line=$(printf '%-18s %12s executions in %ss, corpus %s, %s' "$t" "${runs:-?}" "$seconds" "$corpus" "$verdict")
    echo "$line"
    summary="$summary$line
"
done
printf '\n%s' "$summary"
exit $status
