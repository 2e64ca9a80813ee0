#!/bin/sh
# Seeds for fuzz_kallsyms: slices of this machine's /proc/kallsyms (start, middle, end — the
# end holds module/BPF/ftrace lines), plus handcrafted module, BPF and kptr_restrict inputs.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-kallsyms/.
out="$1/fuzz/seeds-kallsyms"
mkdir -p "$out" || exit 0
if [ -r /proc/kallsyms ]; then
  head -n 300 /proc/kallsyms > "$out/head" && echo "$out/head"
  total=$(wc -l < /proc/kallsyms)
  sed -n "$((total / 2)),$((total / 2 + 300))p" /proc/kallsyms > "$out/middle" && echo "$out/middle"
  tail -n 300 /proc/kallsyms > "$out/tail" && echo "$out/tail"
fi
printf 'ffffffff81000000 T _stext\nffffffff81000100 t local_func\nffffffffc0a02000 t ext4_second\t[ext4]\nffffffffc0a01000 t ext4_first\t[ext4]\nffffffffc0b00000 t bpf_prog_6deef7357e7b4530_my_prog\t[bpf]\n' > "$out/modules" && echo "$out/modules"
printf '0000000000000000 T _stext\n0000000000000000 t ext4_fill_super\t[ext4]\n' > "$out/hidden" && echo "$out/hidden"
exit 0
