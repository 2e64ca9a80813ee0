#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each, JOBS at a time (default: one
# per CPU; each target is single-threaded). Seeds: fuzz/seeds/<target>.sh (if present) prints
# seed file paths, e.g. fixtures compiled by the test build; otherwise the target starts from
# an empty corpus. Fails when any target finds a crash, leak or timeout (its log is printed).
set -euo pipefail
build=${1:-build-asan}
seconds=${2:-60}
jobs=${3:-$(nproc)}
here=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
targets=()
for target in "$build"/fuzz/fuzz_*; do
  [[ -x "$target" && -f "$target" ]] && targets+=("$target")
done
if (( ${#targets[@]} == 0 )); then
  echo "run-fuzzers: no fuzz targets were built in $build/fuzz" >&2
  exit 1
fi

# run_one TARGET: exit status of the fuzzer; its output in $build/fuzz/NAME.log.
run_one() {
  local target=$1 name corpus
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
    -print_final_stats=1 -artifact_prefix="$build/fuzz/$name-" "$corpus" >"$build/fuzz/$name.log" 2>&1
}

failed=()
declare -A running=()  # pid -> target
finish_one() {  # waits for one running fuzzer and records its outcome
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  local target=${running[$pid]} name
  unset "running[$pid]"
  name=$(basename "$target")
  if (( status != 0 )); then
    failed+=("$name")
    echo "== $name FAILED (exit $status):"
    tail -n 60 "$build/fuzz/$name.log"
  else
    echo "== $name: $(grep -E '^(stat::number_of_executed_units|Done)' "$build/fuzz/$name.log" | tr '\n' ' ')"
  fi
}
for target in "${targets[@]}"; do
  while (( ${#running[@]} >= jobs )); do finish_one; done
  run_one "$target" &
  running[$!]=$target
done
while (( ${#running[@]} > 0 )); do finish_one; done

if (( ${#failed[@]} > 0 )); then
  # The cause again, last, where a reader of only the output's tail finds it: each failed
  # target's sanitizer or libFuzzer verdict and the input it saved.
  for name in "${failed[@]}"; do
    echo "== $name:" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|ERROR: libFuzzer|==[0-9]+== ERROR)|(crash|timeout|oom|leak|slow-unit)-[0-9a-f]+|^artifact_prefix|^Test unit written' \
      "$build/fuzz/$name.log" | tail -n 8 >&2 || true
    for artifact in "$build/fuzz/$name-"*; do
      [[ -f $artifact ]] && echo "   input ($(stat -c %s "$artifact") bytes, hex head): $(head -c 96 "$artifact" | od -An -tx1 | tr -d '\n' | tr -s ' ')" >&2
    done
  done
  echo "run-fuzzers: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzzers: all ${#targets[@]} targets ran clean, $jobs at a time"
