#!/usr/bin/env bash
# Share of frames named in recordings of JIT programs and stripped Go (issue 39), beside `perf
# report`'s on the same programs: Node with --perf-basic-prof, Java with its perf map written at
# exit (-XX:+DumpPerfMapAtExit), and the Go test program built as services ship
# (-ldflags='-s -w': only .gopclntab names it; perf reads no pclntab), each running tests/capture/scripts' hot function for SECONDS, recorded
# by `stacksym record` and by `perf record -g` at -F HZ. perf reads the same /tmp/perf-PID.map
# files. Measures (bench/jit_names.py) over the main thread's samples ("node"; Java's "java"):
# the share naming a JIT function (JS:..., double Hot.leafHot(int)), of leaf frames named, of frames named.
# Needs root, node, javac/java, go and perf (a program that is missing is left out).
#
#   bench/record_jit.sh [BUILD_DIR]
# Environment: HZ (default 199), SECONDS_PER_RUN (default 5), CALL_GRAPH (record's, default
# the recorder's own choice).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
HZ=${HZ:-199}
SECS=${SECONDS_PER_RUN:-5}
STACKSYM="$BUILD/stacksym"
[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }
TMP=$(mktemp -d /tmp/stacksym-jit.XXXXXX)
# The programs leave their perf maps in /tmp: remove those that appear while this runs.
ls /tmp/perf-*.map > "$TMP/maps.before" 2> /dev/null || true
trap 'ls /tmp/perf-*.map 2> /dev/null | grep -vxFf "$TMP/maps.before" | xargs -r rm -f; rm -rf "$TMP"' EXIT
CG=()
[[ -n "${CALL_GRAPH:-}" ]] && CG=(--call-graph "$CALL_GRAPH")
if command -v javac > /dev/null; then javac -d "$TMP" tests/capture/scripts/Hot.java; fi

measure() {  # name comm prefix command...
  local name=$1 comm=$2 prefix=$3
  shift 3
  "$STACKSYM" record -F "$HZ" "${CG[@]}" -o "$TMP/$name.folded" -- "$@" > /dev/null 2> "$TMP/$name.summary"
  printf '%-6s stacksym record: %s\n' "$name" \
    "$(python3 bench/jit_names.py folded "$TMP/$name.folded" "$comm" "$prefix")"
  grep -o '[0-9]* of [0-9]* JIT frames named[^;]*' "$TMP/$name.summary" | sed 's/^/       /' || true
  if command -v perf > /dev/null; then
    perf record -q -F "$HZ" -g -o "$TMP/$name.perf.data" -- "$@" > /dev/null 2>&1
    perf script -i "$TMP/$name.perf.data" -F comm,tid,ip,sym,dso 2> /dev/null > "$TMP/$name.perf.txt"
    printf '%-6s perf record -g:  %s\n' "$name" \
      "$(python3 bench/jit_names.py perf "$TMP/$name.perf.txt" "$comm" "$prefix")"
  fi
}

echo "HZ=$HZ, $SECS s per run, $(nproc) CPUs, $(node --version 2>/dev/null), $(java -version 2>&1 | head -1)"
command -v node > /dev/null &&
  measure node node "JS:" node --perf-basic-prof tests/capture/scripts/jit_hot.js "$SECS"
command -v java > /dev/null &&
  measure java java " Hot." java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
    -XX:+PreserveFramePointer -cp "$TMP" Hot "$SECS"
if command -v go > /dev/null; then
  cp -r tests/elf/fixtures/go_prog "$TMP/go_prog"
  (cd "$TMP/go_prog" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -ldflags='-s -w' -o go_stripped .)
  # Samples of the Go program naming one of its own main.* functions.
  measure go go_stripped "main." "$TMP/go_prog/go_stripped" "$SECS"
fi
