#!/usr/bin/env bash
# Overhead of recording stacks on a CPU-bound workload that times itself (fixed work, so any
# overhead shows as a longer run): stacksym record (bpf and perf backends), `perf record -g`
# and bpftrace, each at 99 and 999 Hz; plus stacksym's own CPU time per 1000 samples and the
# samples it lost. Needs root. Prints a Markdown table.
#
#   bench/record_overhead.sh [BUILD_DIR] [REPS]
# Environment: WORK (kilo-iterations of the workload, default 300), THREADS (default: CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
REPS=${2:-3}
WORK=${WORK:-300}
THREADS=${THREADS:-$(nproc)}
STACKSYM="$BUILD/stacksym"
TMP=$(mktemp -d /tmp/stacksym-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }
gcc -O2 -fno-omit-frame-pointer -pthread bench/workloads/cpu_burn.c -o "$TMP/cpu_burn"
WORKLOAD=("$TMP/cpu_burn" "$WORK" "$THREADS")

# shellcheck source=bench/best_time.sh
source bench/best_time.sh

echo "workload: cpu_burn $WORK kilo-iterations x $THREADS threads on $(nproc) CPUs, best of $REPS" >&2
BASE=$(best_time "${WORKLOAD[@]}")
echo "| tool | Hz | workload time (s) | slowdown | samples | lost | stacksym CPU / 1000 samples |"
echo "|---|---|---|---|---|---|---|"
echo "| none (baseline) | - | $BASE | - | - | - | - |"

for hz in 99 999; do
  for backend in bpf perf; do
    t=$(best_time "$STACKSYM" record --backend "$backend" -F "$hz" -o "$TMP/out.pb.gz" -- "${WORKLOAD[@]}")
    echo "| stacksym record ($backend) | $hz | $t | $(slowdown "$t") | $(best_stacksym_figures) |"
  done
  if command -v perf >/dev/null; then
    t=$(best_time perf record -q -g -F "$hz" -o "$TMP/perf.data" -- "${WORKLOAD[@]}")
    samples=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
    lost=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null | awk '/LOST events:/ {print $3; exit}')
    echo "| perf record -g | $hz | $t | $(slowdown "$t") | ${samples:-?} | ${lost:-0} | - |"
  fi
  if command -v bpftrace >/dev/null; then
    if t=$(best_time bpftrace -q -e "profile:hz:$hz { @[ustack, kstack] = count(); }" \
             -c "${WORKLOAD[*]}"); then
      echo "| bpftrace profile:hz | $hz | $t | $(slowdown "$t") | - | - | - |"
    else
      echo "| bpftrace profile:hz | $hz | failed | - | - | - | - |"
    fi
  fi
done
