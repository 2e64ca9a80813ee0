#!/usr/bin/env bash
# The demo: build the bundled workload, profile it with `stacksym record`, and write the flame
# graph page, a static SVG, pprof and folded stacks; print their paths and the top functions.
#
#   demo/run-demo.sh [BUILD_DIR] [SECONDS] [OUT_DIR]
#
# BUILD_DIR holds the `stacksym` binary (default: build); OUT_DIR defaults to out/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
seconds=${2:-3}
out=${3:-out}
stacksym="$build/stacksym"
[[ -x "$stacksym" ]] || { echo "demo: $stacksym not found (build first)" >&2; exit 1; }
mkdir -p "$out"

# clang keeps frame pointers in leaf functions (see workload.c); gcc is the fallback.
cc=${CC:-}
if [[ -z "$cc" ]]; then
  if command -v clang >/dev/null; then cc=clang; else cc=gcc; fi
fi
workload="$out/workload"
"$cc" -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
  -o "$workload" "$here/workload.c"

echo "== stacksym record -F 499 -d $((seconds + 2)) -o $out/demo.pb.gz -- $workload $seconds"
"$stacksym" record -F 499 -d "$((seconds + 2))" -o "$out/demo.pb.gz" -- "$workload" "$seconds"

title="stacksym demo: $(basename "$workload") (${seconds} s, 499 Hz)"
"$stacksym" convert "$out/demo.pb.gz" --to html --title "$title" -o "$out/demo.html"
"$stacksym" convert "$out/demo.pb.gz" --to svg --title "$title" -o "$out/demo.svg"
"$stacksym" convert "$out/demo.pb.gz" --to folded -o "$out/demo.folded"

echo
echo "== outputs"
echo "  flame graph page: $out/demo.html   (open in a browser; works offline)"
echo "  static SVG:       $out/demo.svg"
echo "  pprof:            $out/demo.pb.gz  (go tool pprof -http=: $out/demo.pb.gz)"
echo "  folded stacks:    $out/demo.folded"
echo
# libc has no frame pointers: only the unwind tables (--call-graph dwarf, the default) carry
# the sorter's stacks from compare_values through qsort's merge sort back to its thread.
echo "== the sorter thread's hottest stacks (outermost first), through libc's qsort"
grep '^sorter;' "$out/demo.folded" | grep 'compare_values' | sort -t' ' -k2,2nr | head -3 |
  sed 's/_\[i\]//g; s/;/ → /g; s/^/  /'
echo
echo "== stacksym report $out/demo.pb.gz"
"$stacksym" report -n 10 "$out/demo.pb.gz"
