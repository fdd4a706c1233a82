#!/usr/bin/env bash
# Mutation testing (issue 49 point 14): cargo-mutants over the protocol types, pinning, the
# layers crate and the HTTP pool, each mutant tested by the test binaries that cover it, so a
# mutant costs one incremental build and a few seconds of tests.
#
#   scripts/mutants.sh                  # every area: protocol pin pool layers
#   scripts/mutants.sh pin pool         # some areas
#   MUTANTS_ARGS='--shard 1/4' scripts/mutants.sh pin    # extra cargo-mutants options
#
# Needs `cargo install --locked cargo-mutants` (written against 27.1). Not part of `.ci/run`:
# a full run is hours on two cores (~30 s a mutant, ~1 400 mutants). The survivors of the last
# run, each killed or explained, are in mutants/SURVIVORS.md; each area's full report is in
# target/mutants/<area>/mutants.out/ (outcomes.json, missed.txt, caught.txt, timeout.txt, logs).
#
# Mutants are built in a scratch copy of the tree (never in place, so the working tree is never
# left mutated), with a copy of target/ so only the workspace crates rebuild (do not build in
# this tree while that copy is made, its first minute: a file cargo deletes under the copy
# stops the run); one job at a time
# (`--jobs 1`), and a bound on every build and test run, so a mutant that hangs a test is a
# timeout, not a stall.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

if ! cargo mutants --version >/dev/null 2>&1; then
    echo "scripts/mutants.sh: cargo-mutants is not installed (cargo install --locked cargo-mutants)" >&2
    exit 2
fi

areas=("$@")
if [ ${#areas[@]} -eq 0 ]; then
    areas=(protocol pin pool layers)
fi

common=(--jobs 1 --copy-target=true --no-shuffle --minimum-test-timeout 60 --build-timeout 900)
# shellcheck disable=SC2206 # word splitting of the extra options is wanted
extra=(${MUTANTS_ARGS:-})

status=0
for area in "${areas[@]}"; do
    case "$area" in
        # The library's unit tests (`--lib`): each module's tests sit beside it.
        protocol) select=(-p kaged-mcp -f 'src/protocol/**/*.rs' -f 'src/protocol/*.rs' -C --lib) ;;
        pin) select=(-p kaged-mcp -f 'src/pin/*.rs' -C --lib) ;;
        pool) select=(-p kaged-mcp -f src/transport/http/pool.rs -C --lib) ;;
        # The layers crate's unit tests and its tests/ (tower-test mocks), not its doctests.
        layers) select=(-p kaged-mcp-layers -C --tests) ;;
        *)
            echo "scripts/mutants.sh: unknown area '$area' (protocol, pin, pool, layers)" >&2
            exit 2
            ;;
    esac
    out="target/mutants/$area"
    mkdir -p "$out"
    echo "== $area: $(cargo mutants --list "${select[@]}" | wc -l) mutants, report in $out/mutants.out" >&2
    start=$(date +%s)
    # cargo-mutants exits 2 when a mutant survived, 3 on a timeout: the run goes on to the next
    # area and the script exits non-zero at the end.
    rm -rf "$out/mutants.out"
    code=0
    cargo mutants "${common[@]}" "${select[@]}" "${extra[@]}" -o "$out" || code=$?
    if [ "$code" -ne 0 ] && [ "$code" -ne 2 ] && [ "$code" -ne 3 ]; then
        # 1 (usage), 4 (the unmutated tree failed its tests) or an error of cargo-mutants
        # itself: no outcome to count.
        echo "== $area: cargo-mutants failed (exit $code), see above" >&2
        status=1
        continue
    fi
    [ "$code" -ne 0 ] && status=$code
    echo "== $area: $(( $(date +%s) - start )) s; missed: $(wc -l <"$out/mutants.out/missed.txt"), timeouts: $(wc -l <"$out/mutants.out/timeout.txt")" >&2
done
exit "$status"
