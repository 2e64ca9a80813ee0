#!/bin/sh
# Seeds for fuzz_cfi: the .eh_frame and .debug_frame sections of the unwind test fixtures
# (tests/unwind, built in build directory $1), one raw section per file — the target's input.
out="$1/fuzz/seeds-cfi"
mkdir -p "$out" || exit 0
command -v objcopy >/dev/null 2>&1 || exit 0
for name in unwind_gcc_o2 unwind_gcc_o0 unwind_clang_o2 unwind_clang_o0 unwind_gxx_o2 \
            unwind_clangxx_o2 unwind_gcc_debug_frame unwind_gcc_split.debug; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  for sec in eh_frame debug_frame; do
    seed="$out/$name.$sec"
    rm -f "$seed"
    if objcopy --dump-section ".$sec=$seed" "$f" /dev/null 2>/dev/null && [ -s "$seed" ]; then
      echo "$seed"
      # Read as .eh_frame_hdr of the program-headers-only image: a version 1 header whose
      # pc-relative pointer (4, from its own field) leads just past it, to the .eh_frame.
      if [ "$sec" = eh_frame ]; then
        { printf '\001\033\377\377\004\000\000\000'; cat "$seed"; } >"$seed.behind-hdr"
        echo "$seed.behind-hdr"
      fi
    fi
  done
done
exit 0
