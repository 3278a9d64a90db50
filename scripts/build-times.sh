#!/usr/bin/env bash
# How long a newcomer and CI wait, measured on this machine: clones this repository's HEAD into a fresh folder
# (nothing built, as a new user or CI starts), runs .ci/run there — whose first stage is `make test` with
# warnings as errors — and prints:
#   the clean build's minutes (ninja's first compile to its last link) and the tests' minutes (the rest of
#   `make test`), each .ci/run stage's minutes, and the ten slowest translation units of each build folder
#   (ninja's log: wall seconds of each compile, with the other core busy too).
# A benchmark, not a test. Usage: scripts/build-times.sh [--stage STAGE] [--keep]
#   --stage test      run `make test` alone (the newcomer's command), not the whole of .ci/run
#   --stage sanitize  run `make test-sanitize` alone (CI's second stage), from its own fresh clone
#   --keep         keep the clone (its path is printed); by default it is removed
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
stage=ci keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) stage=${2:-}; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "build-times.sh: unknown argument $1 (--stage test|sanitize|ci, --keep)" >&2; exit 2 ;;
  esac
done
case "$stage" in test|sanitize|ci) ;; *) echo "build-times.sh: --stage must be test, sanitize or ci, not '$stage'" >&2; exit 2 ;; esac

work=$(mktemp -d /tmp/attnlab-build-times.XXXXXX)
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
git clone -q --no-local "$repo" "$work/attnlab"
# CI runs with ../shared beside the clone; the tests do not read it, but keep the layout.
[ -d "$repo/../shared" ] && ln -s "$repo/../shared" "$work/shared"
cd "$work/attnlab"
echo "build-times: $(git log -1 --format='%h %s' | cut -c1-80)"
echo "build-times: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

start=$SECONDS
if [ "$stage" != ci ]; then
  target=$([ "$stage" = test ] && echo test || echo test-sanitize)
  CI=true make $target >"$work/log.txt" 2>&1 || { tail -40 "$work/log.txt"; echo "build-times: make $target failed (log above)" >&2; exit 1; }
  echo "ci: make $target took $((SECONDS - start)) s" >>"$work/log.txt"
else
  CI=true bash .ci/run >"$work/log.txt" 2>&1 || { tail -40 "$work/log.txt"; echo "build-times: .ci/run failed (log above)" >&2; exit 1; }
fi
total=$((SECONDS - start))

minutes() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'; }
# ninja's log (v5): start ms, end ms, mtime, output, hash — one line per edge of the last build.
build_seconds() { awk 'NR > 1 && $2 > m { m = $2 } END { printf "%.0f", m / 1000 }' "$1"; }
compile_seconds() { awk 'NR > 1 && $4 ~ /\.(o|gch)$/ { s += ($2 - $1) / 1000 } END { printf "%.0f", s }' "$1"; }

echo
echo "stage                      minutes"
grep -E '^ci: make .* took [0-9]+ s$' "$work/log.txt" | while read -r _ _ name rest; do
  secs=${rest##*took }; secs=${secs% s}
  name=${name%% *}
  if [ "$name" = test ] && [ -f build/.ninja_log ]; then
    b=$(build_seconds build/.ninja_log)
    printf "%-26s %7s\n" "make test" "$(minutes "$secs")"
    printf "%-26s %7s\n" "  clean build (ninja)" "$(minutes "$b")"
    printf "%-26s %7s\n" "  deps, configure, tests" "$(minutes $((secs - b)))"
  else
    printf "%-26s %7s\n" "make $name" "$(minutes "$secs")"
  fi
done
printf "%-26s %7s\n" "all" "$(minutes "$total")"

for dir in build build-sanitize build-fuzz; do
  log="$dir/.ninja_log"
  [ -f "$log" ] || continue
  echo
  echo "$dir: $(compile_seconds "$log") compile-seconds in $(awk 'NR > 1 && $4 ~ /\.(o|gch)$/' "$log" | wc -l) objects; the ten slowest (wall s):"
  awk 'NR > 1 && $4 ~ /\.(o|gch)$/ { printf "%8.1f  %s\n", ($2 - $1) / 1000, $4 }' "$log" | sort -rn | head -10 |
    sed -E 's#CMakeFiles/[^/]+\.dir/##'
done
grep -E '^(Total Test time|[0-9]+% tests passed)' "$work/log.txt" | sed 's/^/ctest: /'
[ "$keep" = 1 ] && echo "build-times: the clone is kept at $work/attnlab"
exit 0
