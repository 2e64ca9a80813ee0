#!/usr/bin/env bash
# A big stripped Go binary (Debian's own `compile` from golang-go: no .symtab, no DWARF, only
# .gopclntab), symbolized by stacksym and by `go tool addr2line` on the same addresses (N spread
# over .text, every function's code alike). Prints each tool's wall time, CPU and peak RSS, and
# the share of addresses each names (a function other than ??).
#
#   bench/go_compare.sh [BUILD_DIR] [BINARY]   (ADDRESSES, default 20000; THREADS, default all)
#
# stacksym runs three ways: directly (--no-cache: the mmapped .gopclntab answers), and with a
# persisted index directory: the first run builds the index (since format 16 it holds the
# pclntab's answers too) and answers from it, the second only reads it. Any Go binary will do,
# e.g. the test program stripped as services ship (tests/elf/fixtures/go_prog:
# CGO_ENABLED=0 go build -ldflags='-s -w').
set -euo pipefail
BUILD=${1:-build}
BINARY=${2:-/usr/lib/go-1.19/pkg/tool/linux_amd64/compile}
ADDRESSES=${ADDRESSES:-20000}
THREADS=${THREADS:-0}  # 0: one per CPU
STACKSYM=$BUILD/stacksym
[[ -x $STACKSYM ]] || { echo "no $STACKSYM: build first (make build)" >&2; exit 2; }
[[ -f $BINARY ]] || { echo "no $BINARY: apt-get install golang-go" >&2; exit 2; }
command -v go >/dev/null || { echo "no go: apt-get install golang-go" >&2; exit 2; }

WORK=$(mktemp -d /tmp/stacksym-go-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

read -r text_addr text_size < <(readelf -SW "$BINARY" |
  awk '{ for (i = 1; i < NF; i++) if ($i == ".text") print $(i + 2), $(i + 4) }')
text_addr=$((16#$text_addr)) text_size=$((16#$text_size))
awk -v a="$text_addr" -v s="$text_size" -v n="$ADDRESSES" \
  'BEGIN { for (i = 0; i < n; i++) printf "0x%x\n", a + int(i * s / n) }' >"$WORK/addrs"

# run NAME COMMAND...: one timed run, stdin the addresses; "wall cpu rss_mb" in $WORK/NAME.time
run() {
  local name=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/$name.time" "$@" <"$WORK/addrs" >"$WORK/$name.out" 2>/dev/null
}
named_stacksym() {  # llvm style: function line, location line, blank line
  awk 'BEGIN { RS = "" } { split($0, l, "\n"); total++; if (l[1] != "??") named++ }
       END { printf "%.1f", 100 * named / total }' "$WORK/$1.out"
}
named_go() {  # two lines per address: function, file:line
  awk 'NR % 2 == 1 { total++; if ($0 != "?") named++ } END { printf "%.1f", 100 * named / total }' \
    "$WORK/$1.out"
}
row() {  # NAME LABEL NAMED
  read -r wall user sys rss <"$WORK/$1.time"
  awk -v l="$2" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v n="$3" -v base="$4" \
    'BEGIN { printf "| %s | %.2f s | %.2f s | %.0f MB | %s %% | %.1fx |\n", l, w, u + s, r / 1024, n, base / w }'
}

cat "$BINARY" >/dev/null  # page cache warm for every tool
run go_addr2line go tool addr2line "$BINARY"
opts=(symbolize elf --threads "$THREADS" --no-inlines --output-style=llvm --file "$BINARY")
run direct "$STACKSYM" "${opts[@]}" --no-cache
run index_cold "$STACKSYM" "${opts[@]}" --cache-dir "$WORK/cache"
run index_warm "$STACKSYM" "${opts[@]}" --cache-dir "$WORK/cache"
read -r base _ <"$WORK/go_addr2line.time"

echo "$(basename "$BINARY"): $(stat -c %s "$BINARY") bytes, $ADDRESSES addresses over .text," \
  "threads ${THREADS/#0/one per CPU}; index $(stat -c %s "$WORK"/cache/*.symidx) bytes"
echo
echo "| tool | wall | CPU | peak RSS | named | speed-up vs go tool addr2line |"
echo "|---|---:|---:|---:|---:|---:|"
row go_addr2line "go tool addr2line" "$(named_go go_addr2line)" "$base"
row direct "stacksym (direct)" "$(named_stacksym direct)" "$base"
row index_cold "stacksym (index dir, first run)" "$(named_stacksym index_cold)" "$base"
row index_warm "stacksym (index dir, second run)" "$(named_stacksym index_warm)" "$base"
