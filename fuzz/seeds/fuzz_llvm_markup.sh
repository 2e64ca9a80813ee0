#!/bin/sh
# Seeds for fuzz_llvm_markup: logs with symbolizer markup as LLVM's documentation and tests
# write them. $1 is the build directory; seeds are written to $1/fuzz/seeds-llvm-markup/.
out="$1/fuzz/seeds-llvm-markup"
mkdir -p "$out" || exit 0
i=0
for log in '{{{reset}}}
{{{module:0:libc.so:elf:83238ab56ba10497}}}
{{{mmap:0x7f0000000000:0x1000:load:0:rx:0x0}}}
{{{mmap:0x7f0000001000:0x1000:load:0:RW:0x1000}}}
crash {{{pc:0x7f0000000123}}} {{{pc:0x7f0000000123:ra}}}
{{{bt:0:0x7f0000000123}}}
{{{bt:1:0x7f0000000456:pc}}}
{{{data:0x7f0000001010}}} {{{symbol:_ZN7Mangled4NameEv}}}' \
  "$(printf '\033[1mbold\033[0mreset\n\033[33mbefore{{{symbol:x}}}after\033[0m\r\n')" \
  '{{{mmap::1:unknown}}} {{{module:0x::elf:0}}} {{{Tag}}} {{{:x}}} {{{}}} {{{pc:0x9:}}}'; do
  i=$((i + 1))
  printf '%s' "$log" > "$out/seed-$i" && echo "$out/seed-$i"
done
exit 0
