#!/bin/sh
# Seeds for fuzz_dwarf_line: .debug_line sections (versions 2–5, 32- and 64-bit DWARF) of the
# tests/dwarf fixtures in build directory $1.
out="$1/fuzz/seeds-dwarf-line"
mkdir -p "$out" || exit 0
command -v objcopy >/dev/null 2>&1 || exit 0
for name in dwarf_gcc_c_o1_d2 dwarf_gcc_c_o2_d3 dwarf_gcc_c_o2_d4 dwarf_clang_c_o0_d5 \
            dwarf_gcc_cxx_o2_d5 dwarf_clang_cxx_o2_d5_64 dwarf_gcc_cxx_o2_d5_64; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  objcopy --dump-section ".debug_line=$out/$name" "$f" /dev/null 2>/dev/null && echo "$out/$name"
done
exit 0
