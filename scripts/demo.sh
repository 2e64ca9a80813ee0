#!/usr/bin/env bash
# The main job (`make demo`): profile the bundled demo workload with `stacksym record`, write
# its flame graph page, SVG, pprof and folded stacks and print the top functions; then
# symbolize a handful of real libc addresses with symbol tables and DWARF (libc6-dbg).
set -euo pipefail
build=${1:-build}
stacksym="$build/stacksym"
libc=/usr/lib/x86_64-linux-gnu/libc.so.6

"$(dirname "$0")/../demo/run-demo.sh" "$build" 3 out
echo

echo "== stacksym buildid $libc"
"$stacksym" buildid "$libc"

# A few exported libc functions, each 4 bytes into it.
symbols=$(nm -D --defined-only "$libc")
addresses=()
for fn in malloc printf qsort getaddrinfo pthread_create; do
  line=$(awk -v f="$fn" '($3 == f || index($3, f "@@") == 1) && !found {print $1; found = 1}' <<<"$symbols")
  [[ -n "$line" ]] && addresses+=("0x$(printf '%x' $((16#$line + 4)))")
done

echo
echo "== stacksym symbolize elf --file $libc ${addresses[*]}"
"$stacksym" symbolize elf --file "$libc" "${addresses[@]}"

echo
echo "== the same with --output-style=llvm (diffable with llvm-symbolizer --inlines)"
"$stacksym" symbolize elf --output-style=llvm --file "$libc" "${addresses[@]:0:2}"
