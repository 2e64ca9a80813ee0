#!/bin/sh
# Seeds for fuzz_gopclntab: the .gopclntab of the Go test program (tests/elf/fixtures/go_prog)
# built with Debian's golang-go, stripped and not (Go 1.18's layout), where go is installed.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-gopclntab/.
out="$1/fuzz/seeds-gopclntab"
src="$(dirname "$0")/../../tests/elf/fixtures/go_prog"
mkdir -p "$out" || exit 0
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
