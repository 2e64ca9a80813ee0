#!/bin/sh
# Seeds for fuzz_name_memo: the demangled-name memos a few C++ test fixtures (tests/dwarf,
# built in build directory $1) leave in a cache directory once their function symbols are
# symbolized with that build's `stacksym`.
out="$1/fuzz/seeds-name-memo"
stacksym="$1/stacksym"
[ -x "$stacksym" ] || exit 0
rm -rf "$out" && mkdir -p "$out" || exit 0
for name in dwarf_gcc_cxx_o2_d5 dwarf_clang_cxx_o0_d5 dwarf_gcc_cxx_o0_d4; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  nm --defined-only "$f" 2>/dev/null | awk '$2 ~ /^[Tt]$/ {print $1}' | head -200 |
    "$stacksym" symbolize elf --threads 1 --cache-dir "$out" --file "$f" >/dev/null 2>&1 || true
done
for f in "$out"/*.symnames; do
  [ -f "$f" ] && echo "$f"
done
exit 0
