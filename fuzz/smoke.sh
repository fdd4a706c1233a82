#!/usr/bin/env bash
# Every fuzz target for its own time, from its kept corpus and seeds (what CI runs):
#   fuzz/smoke.sh [SECONDS]
# Each target runs as long as the table below says: 40 s for the targets whose code changed in
# round 5 (http_answers, import_formats, lock_file, skills), 15-20 s for the others, whose kept
# corpus reached 99 % of their 90-s coverage in that time or less (fuzz/README.md, "Time per
# target in CI") and is replayed whole by every `cargo test` (tests/fuzz_regressions.rs,
# the_kept_corpus_passes_the_fuzz_checks); 365 s in all, about 3 minutes two at a time, or SECONDS each when given (.ci/run passes KAGED_FUZZ_SMOKE_SECS when set). KAGED_FUZZ_JOBS targets run at
# once (2 by default: the CI machine's cores). Prints one line per target: executions,
# coverage (libFuzzer's `cov`, edges, and `ft`, features) and corpus size at the end.
# Fails when a target finds a crash, a hang (>10 s per input) or an out-of-memory (>2 GiB),
# printing the end of its log.
# Needs cargo-fuzz (`cargo install cargo-fuzz`); works on stable Rust through RUSTC_BOOTSTRAP=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."

declare -A secs_of=(
  [config_project]=20
  [config_toml]=20
  [dpop_jwt]=20
  [http_answers]=40
  [import_formats]=40
  [jsonrpc_decode]=20
  [lock_file]=40
  [modern_shapes]=20
  [oauth_documents]=20
  [protocol_types]=20
  [skills]=40
  [sse_events]=15
  [stdio_frames]=15
  [truncate]=20
  [www_authenticate]=15
)
jobs=${KAGED_FUZZ_JOBS:-2}
targets=$(cargo fuzz list)
total=0
for t in $targets; do
  [ -n "${secs_of[$t]:-}" ] || { echo "fuzz smoke: no time set for $t in fuzz/smoke.sh" >&2; exit 1; }
  total=$((total + ${1:-${secs_of[$t]}}))
done
echo "fuzz smoke: $(wc -w <<<"$targets") targets, $total s of fuzzing, $jobs at once"
RUSTC_BOOTSTRAP=1 cargo fuzz build

logs=$(mktemp -d)
run_one() {
  local t=$1 secs=$2 logs=$3
  if "$here/run.sh" "$t" "$secs" >"$logs/$t.log" 2>&1; then
    echo ok >"$logs/$t.status"
  else
    echo failed >"$logs/$t.status"
  fi
}
export -f run_one
export here
for t in $targets; do
  echo "$t ${1:-${secs_of[$t]}}"
done | xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1" '"$logs"

failed=0
for t in $targets; do
  log=$logs/$t.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf 'fuzz smoke: %-16s %4s s  %9s execs (%s/s)  cov %s  ft %s  corpus %s  rss %s MiB  %s\n' \
    "$t" "${1:-${secs_of[$t]}}" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
    "${corp:-?}" "${rss:-?}" "$(cat "$logs/$t.status")"
  if [ "$(cat "$logs/$t.status")" != ok ]; then
    failed=1
    echo "--- the end of $t's log:"
    tail -40 "$log"
  fi
done
rm -rf "$logs"
[ "$failed" = 0 ] || { echo "fuzz smoke: a target failed" >&2; exit 1; }
echo "fuzz smoke: every target ran its time without a crash"
