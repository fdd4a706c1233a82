#!/usr/bin/env bash
# Runs one fuzz target: fuzz/run.sh TARGET [SECONDS] [more libFuzzer flags...]
#
# Works on stable Rust: RUSTC_BOOTSTRAP=1 lets stable rustc take cargo-fuzz's -Z flags
# (-Zsanitizer=address and the coverage options). Needs `cargo install cargo-fuzz`.
# The build has debug assertions and overflow checks (cargo-fuzz's default, no -O).
# New corpus entries go to fuzz/corpus/TARGET (git-ignored); the checked-in minimised corpus
# (fuzz/kept/TARGET, refreshed with fuzz/keep.sh) and seeds (fuzz/seeds/TARGET) are read too;
# a crasher lands in fuzz/artifacts/TARGET/.
# KAGED_FUZZ_ROOT may point at another checkout (for instance a snapshot of HEAD) whose
# fuzz/ is used instead of this one.
set -euo pipefail

target=${1:?usage: fuzz/run.sh TARGET [SECONDS] [libFuzzer flags...]}
secs=${2:-600}
shift $(( $# < 2 ? $# : 2 ))

root=${KAGED_FUZZ_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

case $target in
  config_project) dict=fuzz/dict/yaml.dict ;;
  config_toml) dict=fuzz/dict/toml.dict ;;
  jsonrpc_decode | protocol_types | stdio_frames | sse_events | truncate) dict=fuzz/dict/json.dict ;;
  oauth_documents | modern_shapes | lock_file | import_formats | dpop_jwt) dict=fuzz/dict/json.dict ;;
  www_authenticate) dict=fuzz/dict/www_authenticate.dict ;;
  http_answers) dict=fuzz/dict/http.dict ;;
  skills) dict=fuzz/dict/skills.dict ;;
  *) dict= ;;
esac

corpora=("fuzz/corpus/$target")
mkdir -p "fuzz/corpus/$target"
[ -d "fuzz/kept/$target" ] && corpora+=("fuzz/kept/$target")
[ -d "fuzz/seeds/$target" ] && corpora+=("fuzz/seeds/$target")

flags=(-max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
[ -n "$dict" ] && flags+=(-dict="$dict")
# Lines and events past the 4 KiB head kept for an oversized frame need longer inputs.
case $target in
  stdio_frames | sse_events) flags+=(-max_len=20000) ;;
esac

RUSTC_BOOTSTRAP=1 exec nice -n 19 cargo fuzz run "$target" "${corpora[@]}" -- "${flags[@]}" "$@"
