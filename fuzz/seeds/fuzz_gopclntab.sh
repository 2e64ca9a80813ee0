#!/bin/sh
# Seeds for fuzz_gopclntab: the .gopclntab of the Go test program (tests/elf/fixtures/go_prog)
# built with Debian's golang-go, stripped and not (Go 1.18's layout), where go is installed.
# And, where python3 is, 1.2-magic tables with an inline tree in each layout of Go 1.9–1.15
# (no such Go is installed), each padded to the length that names its release (length % 17).
# $1 is the build directory; seeds are written to $1/fuzz/seeds-gopclntab/.
out="$1/fuzz/seeds-gopclntab"
src="$(dirname "$0")/../../tests/elf/fixtures/go_prog"
mkdir -p "$out" || exit 0
command -v python3 > /dev/null 2>&1 && python3 - "$out" <<'PY'
import struct, sys
BASE = 0x10000  # where fuzz_gopclntab maps its input (kTableVaddr)
def table(minor):
    t = bytearray(struct.pack("<IBBBBQ", 0xfffffffb, 0, 0, 1, 8, 1))
    functab = len(t); t += bytes(8 * 3 + 4)  # (entry, func), end pc, filetab offset
    def put(b):
        at = len(t); t.extend(b); return at
    names = [put(n + b"\0") for n in (b"main.a", b"main.inl", b"main.deep")]
    path = put(b"/src/a.go\0")
    filetab = put(struct.pack("<II", 2, path))
    pcfile = put(bytes([4, 0x80, 0x02, 0]))
    lines = put(bytes([22, 0x10, 4, 0x18, 4, 0x08, 38, 0x08, 41, 0xc8, 0x01, 0]))
    index = put(bytes([0, 0x20, 2, 0x10, 2, 0x08, 3, 0xc8, 0x01, 0]))
    while len(t) % 8: t.append(0)
    tree = len(t)
    for parent, name, line, parent_pc in ((-1, names[1], 10, 8), (0, names[2], 14, 0x28)):
        if minor <= 11:
            t += struct.pack("<iiii", parent, 1, line, name)
        else:
            t += struct.pack("<hBBiiii", parent, 0, 0, 1, line, name, parent_pc)
    pcdata, funcdata = (2, 4) if minor >= 13 else (1, 2)
    func = len(t)
    t += struct.pack("<QiiiiiiI", 0x1000, names[0], 0, 0, 0, pcfile, lines, pcdata + 1)
    t += bytes([funcdata + 1, 0, 0, 0]) if minor <= 11 else bytes([0, 0, 0, funcdata + 1])
    t += struct.pack("<" + "I" * (pcdata + 1), *([0] * pcdata + [index]))
    while len(t) % 8: t.append(0)
    t += struct.pack("<" + "Q" * (funcdata + 1), *([0] * funcdata + [BASE + tree]))
    struct.pack_into("<QQQI", t, functab, 0x1000, func, 0x1100, filetab)
    while len(t) % 17 != minor: t.append(0)
    return t
for minor in (9, 12, 13):
    name = "%s/go1.%d" % (sys.argv[1], minor)
    with open(name, "wb") as f: f.write(table(minor))
    print(name)
PY
command -v go > /dev/null 2>&1 || exit 0
dir=$(mktemp -d) || exit 0
for variant in plain stripped; do
  flags=""
  [ "$variant" = stripped ] && flags="-s -w"
  (cd "$src" && GOCACHE="$dir/cache" GOPATH="$dir/gopath" GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -ldflags="$flags" -o "$dir/$variant" . > /dev/null 2>&1) || continue
  objcopy -O binary --only-section=.gopclntab "$dir/$variant" "$out/$variant" &&
    echo "$out/$variant"
done
rm -rf "$dir"
exit 0
