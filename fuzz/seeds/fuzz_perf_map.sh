#!/bin/sh
# Seeds for fuzz_perf_map: handcrafted perf maps in the shapes JITs write (V8 names with
# spaces, 0x prefixes, overlapping re-JITted entries, a size reaching the top of memory).
# $1 is the build directory; seeds are written to $1/fuzz/seeds-perf-map/.
out="$1/fuzz/seeds-perf-map"
mkdir -p "$out" || exit 0
printf '7f0000001000 40 LazyCompile:~foo /app/index.js:12\n0x7f0000002000 0x10 Builtin: ArgumentsAdaptorTrampoline\n' > "$out/v8" && echo "$out/v8"
printf '1000 100 old_big\n1040 10 new_inner\n10f0 20 new_straddling\n1000 100 old_big_again\n' > "$out/overlap" && echo "$out/overlap"
printf 'fffffffffffffff0 100 top\n0 1 bottom\n' > "$out/edges" && echo "$out/edges"
printf '55d0c0a01000 2f py::<module>:/tmp/x.py\r\n55d0c0a01030 11 py::f:/tmp/x.py\n' > "$out/python" && echo "$out/python"
exit 0
