#!/bin/sh
# Seeds for fuzz_llvm_request: request lines as the sanitizers and pprof send them.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-llvm-request/.
out="$1/fuzz/seeds-llvm-request"
mkdir -p "$out" || exit 0
i=0
for line in 'CODE "/usr/lib/libc.so.6" 0x27249' "DATA '/bin/true:x86_64' 0x4040" \
            'FRAME /bin/true 0x1150' '/bin/true 4477' '0x1150' '017' 'CODE "unterminated 0x1'; do
  i=$((i + 1))
  printf '%s' "$line" > "$out/seed-$i" && echo "$out/seed-$i"
done
exit 0
