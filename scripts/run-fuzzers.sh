#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each. Seeds: fuzz/seeds/<target>.sh
# (if present) prints seed file paths, e.g. fixtures compiled by the test build; otherwise the
# target starts from an empty corpus. Fails on the first crash, leak or timeout.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
targets=("$build"/fuzz/fuzz_*)
if (( ${#targets[@]} == 0 )); then
  echo "run-fuzzers: no fuzz targets were built in $build/fuzz" >&2
  exit 1
fi
ran=0
for target in "${targets[@]}"; do
  [[ -x "$target" && -f "$target" ]] || continue
  ran=$((ran + 1))
  name=$(basename "$target")
  corpus="$build/fuzz/corpus-$name"
  mkdir -p "$corpus"
  if [[ -x "$here/fuzz/seeds/$name.sh" ]]; then
    while IFS= read -r seed; do
      [[ -f "$seed" ]] && cp -f "$seed" "$corpus/" || true
    done < <("$here/fuzz/seeds/$name.sh" "$build")
  fi
  echo "== $name: ${seconds}s, $(ls "$corpus" | wc -l) seeds"
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz/$name-" "$corpus" 2>"$build/fuzz/$name.log" || {
      tail -n 60 "$build/fuzz/$name.log"
      echo "run-fuzzers: $name FAILED" >&2
      exit 1
    }
  grep -E '^(stat::number_of_executed_units|Done)' "$build/fuzz/$name.log" || tail -n 2 "$build/fuzz/$name.log"
done
echo "run-fuzzers: all $ran targets ran clean"
