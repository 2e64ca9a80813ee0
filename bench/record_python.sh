#!/usr/bin/env bash
# What Python frames cost in the BPF program (issue 32): python3.11 running
# tests/capture/scripts/known_stacks.py (two threads: a generator under a recursion, and
# zlib.compress) recorded at -F HZ with and without --no-python, interleaved, N runs each.
# Per run: the program's own time per sample (kernel.bpf_stats_enabled: on_sample's run time
# over its run count, read while the recording runs), the ring buffer's bytes per sample, and
# from the summary the Python frames per sample and the share of the samples in the
# interpreter with a named Python chain. The table gives medians. Needs root and bpftool.
#
#   bench/record_python.sh [BUILD_DIR] [N]
# Environment: HZ (default 999), SECONDS_PER_PART (each part's CPU time, default 1.0),
# CALL_GRAPH (default bpf).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${2:-5}
HZ=${HZ:-999}
PART=${SECONDS_PER_PART:-1.0}
CG=${CALL_GRAPH:-bpf}
STACKSYM="$BUILD/stacksym"
PY=/usr/bin/python3.11
SCRIPT=tests/capture/scripts/known_stacks.py
[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }
[[ -x "$PY" ]] || { echo "needs $PY" >&2; exit 1; }
command -v bpftool >/dev/null || [[ -x /usr/sbin/bpftool ]] || { echo "needs bpftool" >&2; exit 1; }
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
TMP=$(mktemp -d /tmp/stacksym-python.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old_stats; rm -rf "$TMP"' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

# One recording; prints "ns_per_sample bytes_per_sample frames_per_sample named_share".
run() {
  local mode=$1 flag=""
  [[ $mode == native ]] && flag=--no-python
  "$STACKSYM" record -F "$HZ" --call-graph "$CG" $flag -o "$TMP/out.pb.gz" -- \
    "$PY" "$SCRIPT" "$TMP/spent.json" "$PART" 2> "$TMP/summary" &
  local pid=$! best=""
  while kill -0 "$pid" 2>/dev/null; do
    # on_sample's counters while it is loaded (the last reading is the fullest).
    local line
    # This recording's program (other recordings may run on the machine): by the ids of the
    # programs its process holds.
    line=""
    for id in $(grep -hs '^prog_id:' /proc/"$pid"/fdinfo/* | awk '{print $2}' | sort -u); do
      line=$("$BPFTOOL" prog show id "$id" 2>/dev/null | grep ' name on_sample ' -A2 |
             grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' || true)
      [[ -n $line ]] && break
    done
    [[ -n $line ]] && best=$line
    sleep 0.1
  done
  wait "$pid"
  local ns cnt
  read -r _ ns _ cnt <<< "$best"
  local bytes frames named
  bytes=$(grep -o 'ring buffer: [0-9]* bytes per sample' "$TMP/summary" | grep -o '[0-9]*' | head -1)
  frames=$(grep -o '[0-9.]* Python frames per sample' "$TMP/summary" | grep -o '^[0-9.]*' || echo 0)
  named=$(grep -o '[0-9.]* % with a named Python chain' "$TMP/summary" | grep -o '^[0-9.]*' || echo -)
  awk -v ns="$ns" -v c="$cnt" -v b="$bytes" -v f="${frames:-0}" -v n="${named:--}" \
    'BEGIN {printf "%.2f %s %s %s\n", c ? ns / c / 1000 : 0, b, f, n}'
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for ((i = 0; i < N; i++)); do
  for mode in native python; do run "$mode" >> "$TMP/$mode"; done
done
echo "runs (µs per sample, bytes per sample, Python frames per sample, named %):"
paste -d'|' "$TMP/native" "$TMP/python" | sed 's/^/  native: /; s/|/   python: /'
col() { awk -v k="$2" '{print $k}' "$TMP/$1" | median; }
echo "python3.11 $SCRIPT, two parts of ${PART} s CPU, -F $HZ, --call-graph $CG, median of $N"
echo
echo "| frames | BPF µs per sample | ring bytes per sample | Python frames per sample | interpreter samples with a named chain |"
echo "|---|---|---|---|---|"
echo "| native only (--no-python) | $(col native 1) | $(col native 2) | – | – |"
echo "| with Python frames | $(col python 1) | $(col python 2) | $(col python 3) | $(col python 4) % |"
awk -v a="$(col python 1)" -v b="$(col native 1)" 'BEGIN {printf "\nBPF time per sample: %.2f× the native-only cost\n", b ? a / b : 0}'
