#!/bin/sh
# Seeds for fuzz_jitdump: handcrafted jitdumps (loads, a move, a debug record, a file cut in
# the middle of a record) and, where node runs, the jitdump V8 writes with --perf-prof.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-jitdump/.
out="$1/fuzz/seeds-jitdump"
mkdir -p "$out" || exit 0
python3 - "$out" <<'PY' || exit 0
import struct, sys
out = sys.argv[1]
def header(): return struct.pack('<IIIIIIQQ', 0x4A695444, 1, 40, 62, 0, 1234, 0, 0)
def rec(kind, body): return struct.pack('<IIQ', kind, 16 + len(body), 7) + body
def load(addr, size, index, name):
    return rec(0, struct.pack('<IIQQQQ', 1234, 1234, addr, addr, size, index) + name + b'\0' + b'\x90' * size)
def move(old, new, size, index):
    return rec(1, struct.pack('<IIQQQQQ', 1234, 1234, new, old, new, size, index))
base = header() + load(0x1000, 16, 1, b'JS:*hot /app/x.js:3') + load(0x1010, 8, 2, b'Builtin:Add')
open(out + '/loads', 'wb').write(base)
open(out + '/move', 'wb').write(base + move(0x1000, 0x2000, 16, 1) + rec(2, struct.pack('<QQ', 0x1000, 0)) + rec(3, b''))
open(out + '/cut', 'wb').write(base[:-5])
print(out + '/loads'); print(out + '/move'); print(out + '/cut')
PY
if command -v node > /dev/null 2>&1; then
  dir=$(mktemp -d) && (cd "$dir" && timeout 20 node --perf-prof --interpreted-frames-native-stack \
    -e 'let s=0; for (let i=0;i<2e6;i++) s+=Math.sqrt(i); console.log(s>0)' > /dev/null 2>&1)
  for f in "$dir"/jit-*.dump; do
    [ -f "$f" ] && head -c 65536 "$f" > "$out/node" && echo "$out/node"
  done
  rm -rf "$dir"
fi
exit 0
