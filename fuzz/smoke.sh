#!/usr/bin/env bash
# Smoke run of every fuzz target: fuzz/smoke.sh [SECONDS] (20 s each by default; .ci/run passes
# KAGED_FUZZ_SMOKE_SECS, 10 unless set).
# Fails on the first crash, hang (>10 s per input) or out-of-memory (>2 GiB).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); works on stable Rust through RUSTC_BOOTSTRAP=1.
set -euo pipefail
secs=${1:-20}
here=$(cd "$(dirname "$0")" && pwd)
targets=$(cd "$here/.." && cargo fuzz list)
for t in $targets; do
  echo "=== fuzz smoke: $t (${secs}s)"
  "$here/run.sh" "$t" "$secs"
done
echo "fuzz smoke: all targets ran ${secs}s without a crash"
