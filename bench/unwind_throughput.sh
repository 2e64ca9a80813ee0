#!/usr/bin/env bash
# Issue 11's throughput column: CPU-bound workloads without frame pointers on every CPU, each
# doing a fixed amount of work and timing itself, so a profiler's cost shows as a longer run:
# no profiler, stacksym record (--call-graph bpf, the default; dwarf), perf record -g and
# perf record --call-graph dwarf, at 999 Hz. Also the samples taken and lost, and stacksym's
# own CPU per 1000 samples from its summary. Needs root. Prints a Markdown table.
#
#   bench/unwind_throughput.sh [BUILD_DIR] [REPS]
# Environment: HZ (default 999), THREADS (default: CPUs), WORK (cpu_burn kilo-iterations per
# thread, default 1500), PYWORK (python3 calls of a 20-deep recursion per process, default
# 2000000).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
REPS=${2:-3}
HZ=${HZ:-999}
THREADS=${THREADS:-$(nproc)}
WORK=${WORK:-1500}
PYWORK=${PYWORK:-2000000}
STACKSYM="$BUILD/stacksym"
TMP=$(mktemp -d /tmp/stacksym-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }

# Debian's way: -O2 without frame pointers.
gcc -O2 -fomit-frame-pointer -pthread bench/workloads/cpu_burn.c -o "$TMP/cpu_burn"
cat > "$TMP/py_burn.py" <<'PY'
import os, sys, time
procs, work = int(sys.argv[1]), int(sys.argv[2])
def f(k):
    return f(k - 1) + 1 if k else 0
start = time.time()
pids = []
for _ in range(procs):
    pid = os.fork()
    if pid == 0:
        for _ in range(work):
            f(20)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print("elapsed_s %.3f" % (time.time() - start))
PY

# shellcheck source=bench/best_time.sh
source bench/best_time.sh

echo "| workload | profiler ($HZ Hz, $THREADS CPUs) | time (s), best of $REPS | slowdown | samples | lost | stacksym CPU / 1000 samples |"
echo "|---|---|---:|---:|---:|---:|---:|"
for name in cpu_burn python3; do
  if [[ $name == cpu_burn ]]; then
    WORKLOAD=("$TMP/cpu_burn" "$WORK" "$THREADS")
  else
    WORKLOAD=(/usr/bin/python3 "$TMP/py_burn.py" "$THREADS" "$PYWORK")
  fi
  BASE=$(best_time "${WORKLOAD[@]}")
  echo "| $name | none | $BASE | - | - | - | - |"
  for cg in bpf dwarf; do
    t=$(best_time "$STACKSYM" record --call-graph "$cg" -F "$HZ" -o "$TMP/out.pb.gz" -- "${WORKLOAD[@]}")
    echo "| $name | stacksym record --call-graph $cg | $t | $(slowdown "$t") | $(best_stacksym_figures) |"
  done
  if command -v perf >/dev/null; then
    for mode in "-g" "--call-graph dwarf"; do
      # shellcheck disable=SC2086
      t=$(best_time perf record -q $mode -F "$HZ" -o "$TMP/perf.data" -- "${WORKLOAD[@]}")
      stats=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null || true)
      samples=$(awk '/SAMPLE events:/ {print $3; exit}' <<<"$stats")
      lost=$(awk '/LOST events:/ {print $3; exit}' <<<"$stats")
      echo "| $name | perf record $mode | $t | $(slowdown "$t") | ${samples:-?} | ${lost:-0} | - |"
    done
  fi
done
