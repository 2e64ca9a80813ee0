#!/usr/bin/env bash
# Complete user stacks on code without frame pointers: stacksym record (--call-graph dwarf,
# the default, bpf and fp) against `perf record -g` and `perf record --call-graph dwarf`, on
#   python3  — Debian's interpreter (no frame pointers) running a pure-Python loop,
#   unwind   — the test fixture tests/capture/fixtures/unwind_app.cc (-O2 -fomit-frame-pointer),
#   qsort    — the demo workload's threads, whose sorter calls back from libc's qsort,
# at 99 and 999 Hz. Per run: samples, lost samples, user frames per sample, the share of
# samples whose stack reaches the entry function (Py_BytesMain / main / start_thread or
# main), the profiler's own CPU time (stacksym: record + unwind + symbolize; perf: record +
# script) per 1000 samples, and bytes per sample (stacksym: stack bytes copied, or with bpf
# the ring-buffer bytes per sample; perf: size of perf.data). Needs root. Prints a Markdown table.
#
#   bench/unwind_compare.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-4}
STACKSYM="$BUILD/stacksym"
TMP=$(mktemp -d /tmp/stacksym-unwind.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }

flags="-O2 -g -fomit-frame-pointer"
gcc $flags -shared -fPIC -o "$TMP/libunwind_lib.so" tests/capture/fixtures/unwind_lib.c
g++ $flags -pthread -Wl,--no-as-needed "$TMP/libunwind_lib.so" -Wl,-rpath,"$TMP" \
  -o "$TMP/unwind_app" tests/capture/fixtures/unwind_app.cc
gcc $flags -pthread -o "$TMP/workload" demo/workload.c
cat > "$TMP/loop.py" <<'PY'
import sys, time
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def mid(n):
    return leaf(n) + 1
def top(end):
    while time.time() < end:
        mid(2000)
top(time.time() + float(sys.argv[1]))
PY

declare -A CMD ENTRY
CMD[python3]="/usr/bin/python3 $TMP/loop.py $SECONDS_PER_RUN"
ENTRY[python3]="Py_BytesMain"
CMD[unwind]="$TMP/unwind_app $SECONDS_PER_RUN"
ENTRY[unwind]="main|start_thread"
CMD[qsort]="$TMP/workload $SECONDS_PER_RUN"
ENTRY[qsort]="main|start_thread"

# frames per sample and share reaching the entry, from folded stacks (comm;outer;...;leaf N)
folded_figures() {  # FILE ENTRY_REGEX
  python3 - "$1" "$2" <<'PY'
import re, sys
entry = re.compile(r'^(' + sys.argv[2] + r')$')
samples = frames = reached = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip('\n').rpartition(' ')
    if not count.isdigit():
        continue
    n = int(count)
    names = [f for f in stack.split(';')[1:] if not f.endswith('_[k]') and not f.endswith('_[i]')]
    samples += n
    frames += n * len(names)
    if any(entry.match(f) for f in names):
        reached += n
print(f"{samples} {frames / max(samples, 1):.1f} {100.0 * reached / max(samples, 1):.1f}")
PY
}

# The same from `perf script -F comm,ip,sym` (inlined entries and kernel frames not counted)
perf_figures() {  # FILE ENTRY_REGEX
  python3 - "$1" "$2" <<'PY'
import re, sys
entry = re.compile(r'^(' + sys.argv[2] + r')$')
samples = frames = reached = 0
cur = None
def flush():
    global samples, frames, reached, cur
    if cur is not None:
        samples += 1
        frames += len(cur)
        if any(entry.match(f) for f in cur):
            reached += 1
    cur = None
for line in open(sys.argv[1], errors='replace'):
    if not line.strip():
        flush(); continue
    if not line[0].isspace():
        flush(); cur = []; continue
    if cur is None or '[kernel.kallsyms]' in line or '(inlined)' in line:
        continue
    parts = line.split()
    sym = parts[1] if len(parts) > 1 else ''
    cur.append(sym.split('+0x')[0])
flush()
print(f"{samples} {frames / max(samples, 1):.1f} {100.0 * reached / max(samples, 1):.1f}")
PY
}


echo "| workload | Hz | tool | samples | lost | user frames / sample | reach entry | profiler CPU / 1000 samples | bytes / sample |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
for wl in python3 unwind qsort; do
  for hz in 99 999; do
    for mode in dwarf bpf fp; do
      "$STACKSYM" record --call-graph "$mode" -F "$hz" \
        -o "$TMP/s.folded" -- ${CMD[$wl]} >/dev/null 2>"$TMP/summary" || true
      read -r n fps reach <<<"$(folded_figures "$TMP/s.folded" "${ENTRY[$wl]}")"
      samples=$(sed -n 's/^stacksym record: \([0-9]*\) samples.*/\1/p' "$TMP/summary")
      lost=$(sed -n 's/.*), \([0-9]*\) lost,.*/\1/p' "$TMP/summary")
      bps=$(sed -n 's/.* \([0-9.]*\) stack bytes per sample.*/\1/p' "$TMP/summary")
      if [[ $mode == bpf ]]; then  # everything the program sent: frames, and early copies
        bps=$(sed -n 's/.*ring buffer: \([0-9.]*\) bytes per sample.*/\1/p' "$TMP/summary")
      fi
      # stacksym's own CPU time (its summary: getrusage of itself, not of the workload)
      cpu=$(sed -n 's/.* \([0-9.]*\) s in all.*/\1/p' "$TMP/summary")
      per1k=$(awk -v c="${cpu:-0}" -v n="${samples:-0}" 'BEGIN{printf "%.1f ms", n ? c * 1e6 / n : 0}')
      echo "| $wl | $hz | stacksym --call-graph $mode | ${samples:-?} | ${lost:-?} | $fps | $reach% | $per1k | ${bps:-0} |"
    done
    if command -v perf >/dev/null; then
      for mode in fp dwarf; do
        # perf's CPU: perf record and its child less the workload's own, plus perf script
        /usr/bin/time -f "%U %S" -o "$TMP/time_rec" perf record -q -e cpu-clock --call-graph "$mode" \
          -F "$hz" -o "$TMP/perf.data" -- /usr/bin/time -f "%U %S" -o "$TMP/time_wl" \
          ${CMD[$wl]} >/dev/null 2>&1 || true
        /usr/bin/time -f "%U %S" -o "$TMP/time_script" perf script -i "$TMP/perf.data" \
          -F comm,ip,sym >"$TMP/perf.txt" 2>/dev/null || true
        read -r n fps reach <<<"$(perf_figures "$TMP/perf.txt" "${ENTRY[$wl]}")"
        lost=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null | awk '/LOST events:/ {print $3; exit}')
        cpu=$(awk 'FILENAME ~ /time_wl/ {s -= $1 + $2; next} {s += $1 + $2} END {print s}' \
          "$TMP/time_rec" "$TMP/time_script" "$TMP/time_wl")
        per1k=$(awk -v c="$cpu" -v n="$n" 'BEGIN{printf "%.1f ms", n ? c * 1e6 / n : 0}')
        bytes=$(stat -c %s "$TMP/perf.data")
        bps=$(awk -v b="$bytes" -v n="$n" 'BEGIN{printf "%.0f", n ? b / n : 0}')
        label="perf record -g"
        [[ $mode == dwarf ]] && label="perf record --call-graph dwarf"
        echo "| $wl | $hz | $label | $n | ${lost:-0} | $fps | $reach% | $per1k | $bps |"
      done
    fi
  done
done
