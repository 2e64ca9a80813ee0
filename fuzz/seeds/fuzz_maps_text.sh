#!/bin/sh
# Seeds for fuzz_maps_text: copies of real /proc/PID/maps files (this shell's and PID 1's),
# plus a handcrafted one with the tricky names (spaces, " (deleted)", [anon:...], \012).
# The first byte of an input selects parser options, so each seed gets a leading byte.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-maps-text/.
out="$1/fuzz/seeds-maps-text"
mkdir -p "$out" || exit 0
i=0
for pid in self 1; do
  if [ -r "/proc/$pid/maps" ]; then
    { printf '\002'; cat "/proc/$pid/maps"; } > "$out/maps-$pid" 2>/dev/null && echo "$out/maps-$pid"
  fi
done
{
  printf '\003'
  printf '55d0c0a02000-55d0c0a22000 r-xp 00002000 fd:01 1234    /usr/bin/my prog (deleted)\n'
  printf '7f0000001000-7f0000002000 r-xp 00000000 00:00 0       [anon:jit code]\n'
  printf '7f0000003000-7f0000004000 r--p 00001000 103:0a 99     /tmp/new\\012line\n'
  printf '7ffc000fe000-7ffc00100000 r-xp 00000000 00:00 0       [vdso]\n'
  printf 'ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]'
} > "$out/maps-crafted" && echo "$out/maps-crafted"
exit 0
