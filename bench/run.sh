#!/usr/bin/env bash
# Runs every benchmark: the Google Benchmark binaries (in-process costs), then the scripts that
# compare whole commands with the established tools (symbolizers, profilers).
#
#   bench/run.sh [BUILD_DIR]
# Environment: ONLY="dwarf_bench symbolize_compare ..." to run a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }

for bin in "$build"/bench/*_bench; do
  name=$(basename "$bin")
  want "$name" || continue
  echo "== $name"
  "$bin" --benchmark_min_time=0.2
done
if want symbolize_compare; then
  echo "== symbolize_compare"
  ./scripts/setup.sh
  bench/symbolize_compare.sh "$build"
fi
if want llvm_symbolizer_protocol; then
  echo "== llvm_symbolizer_protocol"
  bench/llvm_symbolizer_protocol.py "$build"
fi
if want index_compare; then
  echo "== index_compare"
  bench/index_compare.sh "$build"
fi
if want record_overhead; then
  echo "== record_overhead"
  bench/record_overhead.sh "$build"
fi
if want unwind_throughput; then
  echo "== unwind_throughput"
  bench/unwind_throughput.sh "$build"
fi
if want off_cpu_overhead; then
  echo "== off_cpu_overhead"
  bench/off_cpu_overhead.py "$build"
  bench/off_cpu_overhead.py "$build" 5 --pin 0  # the ping-pong on one CPU: repeatable
fi
if want proxy_bench; then
  echo "== proxy_bench"
  bench/proxy_bench.py "$build"
fi
