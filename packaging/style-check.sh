#!/usr/bin/env bash
# Style gate of the test run (packaging/dev test, packaging/dev style):
#   packaging/style-check.sh BUILD_DIR [--all]
# 1. clang-format: every tracked C++ file must be formatted as .clang-format says; the first
#    differences are printed. Fix with: git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format -i
# 2. clang-tidy (.clang-tidy, compile commands of BUILD_DIR): no finding in the daemon's sources
#    changed since the commit in .ci/tidy-base (a changed header brings its own .cpp), or in all of
#    them with --all. Tests and benchmarks are left out: Catch2's macros bury real findings in
#    noise. A whole-tree run takes about 20 s per file on the 2-core CI machine, too long for every
#    change: when `--all` is clean, move .ci/tidy-base to that commit.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: style-check.sh BUILD_DIR [--all]}
all=${2:-}
cd "$root"

echo "== clang-format ($(clang-format --version | grep -o 'version [0-9.]*')) =="
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h')
if ! clang-format --dry-run --Werror "${sources[@]}" 2>"$build/clang-format.log"; then
    grep -c 'error:' "$build/clang-format.log" | xargs printf '%s places differ from .clang-format; the first:\n'
    head -40 "$build/clang-format.log"
    exit 1
fi
echo "${#sources[@]} files formatted as .clang-format says"

if [[ "$all" == --all ]]; then
    mapfile -t tidy < <(git ls-files 'daemon/*.cpp')
    echo "== clang-tidy: all ${#tidy[@]} sources =="
else
    base=$(cat .ci/tidy-base)
    if ! git merge-base --is-ancestor "$base" HEAD 2>/dev/null; then
        echo "== clang-tidy: .ci/tidy-base $base is not in this clone's history; checking the last commit only =="
        base=HEAD~1
    fi
    mapfile -t tidy < <(git diff --name-only --diff-filter=d "$base" HEAD -- 'daemon/*.cpp' 'daemon/*.hpp' |
        sed 's/\.hpp$/.cpp/' | sort -u | while read -r f; do [[ -f "$f" ]] && echo "$f"; done)
    echo "== clang-tidy: ${#tidy[@]} sources changed since $(git rev-parse --short "$base") =="
fi
# Only sources the build compiles (a benchmark in a build without them has no compile command).
mapfile -t tidy < <(for f in "${tidy[@]}"; do grep -q "\"file\": \"$root/$f\"" "$build/compile_commands.json" && echo "$f"; done)
[[ ${#tidy[@]} -eq 0 ]] && { echo "nothing to check"; exit 0; }
printf '%s\n' "${tidy[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
    2> >(grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' >&2)
echo "clang-tidy: no findings"
