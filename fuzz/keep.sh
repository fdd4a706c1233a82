#!/usr/bin/env bash
# Refreshes the checked-in minimised corpus of fuzz targets: fuzz/keep.sh TARGET...
#
# For each TARGET, libFuzzer's merge (what `cargo fuzz cmin` runs) keeps, from the current
# fuzz/kept/TARGET and the scratch corpus fuzz/corpus/TARGET (fuzz/run.sh's), a small set of
# inputs that reaches every edge they reach together beyond what the seeds (fuzz/seeds/TARGET)
# reach; that set replaces fuzz/kept/TARGET. Edges, not libFuzzer's finer features (edges with
# hit-count buckets): -use_counters=0 keeps the same coverage (`cov`) in about 40 % of the
# inputs, so a run loads its corpus sooner, and finds the buckets again within seconds. Seeds
# stay where they are, readable; kept inputs are named by the SHA-1 of their bytes.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: fuzz/keep.sh TARGET..." >&2; exit 2; }
cd "$(dirname "$0")/.."

for target in "$@"; do
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/merged" "fuzz/corpus/$target" "fuzz/kept/$target"
  # The seeds go first: only what adds to them is kept.
  [ -d "fuzz/seeds/$target" ] && cp "fuzz/seeds/$target"/* "$work/merged/"
  ls "$work/merged" >"$work/seeds"
  flags=(-merge=1 -use_counters=0 -rss_limit_mb=2048 -timeout=10)
  case $target in
    stdio_frames | sse_events) flags+=(-max_len=20000) ;;
  esac
  RUSTC_BOOTSTRAP=1 nice -n 19 cargo fuzz run "$target" "$work/merged" \
    "fuzz/kept/$target" "fuzz/corpus/$target" -- "${flags[@]}" >"$work/log" 2>&1 ||
    { tail -30 "$work/log"; exit 1; }
  rm -rf "fuzz/kept/$target"
  mkdir -p "fuzz/kept/$target"
  for f in "$work/merged"/*; do
    grep -qxF "$(basename "$f")" "$work/seeds" || mv "$f" "fuzz/kept/$target/"
  done
  echo "fuzz keep: $target: $(ls "fuzz/kept/$target" | wc -l) inputs," \
    "$(du -sk "fuzz/kept/$target" | cut -f1) KiB on disk" \
    "($(grep -o 'MERGE-OUTER: [0-9]* new files with [0-9]* new features added; [0-9]* new coverage edges' "$work/log" | tail -1))"
  rm -rf "$work"
  trap - EXIT
done
