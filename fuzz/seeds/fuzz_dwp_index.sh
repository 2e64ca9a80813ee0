#!/bin/sh
# Seeds for fuzz_dwp_index: the .debug_cu_index of the .dwp fixtures of tests/dwarf (versions 2
# and 5) and the .debug_sup sections of the dwz --dwarf-5 fixtures, from build directory $1.
out="$1/fuzz/seeds-dwp-index"
mkdir -p "$out" || exit 0
command -v objcopy >/dev/null 2>&1 || exit 0
for pair in real_dwp_gnu4.dwp:.debug_cu_index real_dwp_llvm4.dwp:.debug_cu_index \
            real_dwp_clang5.dwp:.debug_cu_index real_dwz_d5_a.debug:.debug_sup \
            real_dwz_d5_common.debug:.debug_sup; do
  f="$1/fixtures/${pair%%:*}"
  sec="${pair#*:}"
  [ -f "$f" ] || continue
  objcopy --dump-section "$sec=$out/${pair%%:*}$sec" "$f" /dev/null 2>/dev/null &&
    echo "$out/${pair%%:*}$sec"
done
exit 0
