#!/bin/sh
# Seeds for fuzz_dwarf_info: the DWARF sections of a few test fixtures (tests/dwarf, built in
# build directory $1), packed as [u8 id][u32 length][bytes] records — the target's input format.
out="$1/fuzz/seeds-dwarf-info"
mkdir -p "$out" || exit 0
command -v objcopy >/dev/null 2>&1 || exit 0
for name in dwarf_gcc_c_o2_d4 dwarf_clang_c_o0_d5 dwarf_gcc_c_o1_d2 dwarf_gcc_cxx_o2_d5 \
            dwarf_clang_cxx_o2_d4 dwarf_gcc_cxx_o2_d5_64; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  tmp=$(mktemp -d) || continue
  id=0
  : > "$out/$name"
  for sec in .debug_info .debug_abbrev .debug_str .debug_line .debug_line_str \
             .debug_str_offsets .debug_addr .debug_ranges .debug_rnglists .debug_aranges \
             .debug_loc .debug_loclists; do
    if objcopy --dump-section "$sec=$tmp/s" "$f" /dev/null 2>/dev/null && [ -f "$tmp/s" ]; then
      python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(struct.pack("<BI", int(sys.argv[2]), len(d)) + d)' \
        "$tmp/s" "$id" >> "$out/$name"
      rm -f "$tmp/s"
    fi
    id=$((id + 1))
  done
  rm -rf "$tmp"
  [ -s "$out/$name" ] && echo "$out/$name"
done
exit 0
