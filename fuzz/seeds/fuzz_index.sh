#!/bin/sh
# Seeds for fuzz_index: symbol indexes of a few test fixtures (tests/dwarf, built in build
# directory $1), written by that build's `stacksym cache build`.
out="$1/fuzz/seeds-index"
stacksym="$1/stacksym"
[ -x "$stacksym" ] || exit 0
rm -rf "$out" && mkdir -p "$out" || exit 0
for name in dwarf_gcc_c_o2_d4 dwarf_clang_c_o0_d5 dwarf_gcc_cxx_o2_d5 dwarf_clang_cxx_o3_d5 \
            dwarf_gcc_cxx_dwz real_dbg.stripped; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  "$stacksym" cache build --threads 1 --cache-dir "$out" "$f" >/dev/null 2>&1 || true
done
for f in "$out"/*.symidx; do
  [ -f "$f" ] && echo "$f"
done
exit 0
