#!/usr/bin/env bash
# The fixed cost of a recording: CPU time (task-clock, user + system, the command's own
# included) of `stacksym record` with each call graph (bpf, dwarf, fp) and of `perf record -g`
# and `perf record --call-graph dwarf`, on `true` and on a short real command, all at the same
# -F. Runs are interleaved (one of each tool per round), so that a loaded machine slows them
# alike; the table gives the median of N and the ratio to `perf record -g`. On the real
# command, "profiler" is the median minus the bare command's. stacksym's runs include
# symbolizing and writing the profile (one row without symbolizing); perf's do not (that is
# `perf report`). Needs root.
#
#   bench/record_startup.sh [BUILD_DIR] [N]
# Environment: HZ (default 99); BASE_STACKSYM (another stacksym binary, e.g. main's, run
# with the default call graph as an extra row); CMD (the real command, run with sh -c;
# default: /usr/bin/python3 dumping JSON for about 0.2 s, or a shell loop without it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${2:-15}
HZ=${HZ:-99}
STACKSYM="$BUILD/stacksym"
TMP=$(mktemp -d /tmp/stacksym-startup.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
[[ -x "$STACKSYM" ]] || { echo "build stacksym first: $STACKSYM missing" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf is needed (task-clock, and the comparison)" >&2; exit 1; }
if [[ -z "${CMD:-}" ]]; then
  if [[ -x /usr/bin/python3 ]]; then  # not a version manager's shim on PATH
    CMD="/usr/bin/python3 -c 'import json; [json.dumps(list(range(300))) for _ in range(4000)]'"
  else
    CMD="i=0; while [ \$i -lt 200000 ]; do i=\$((i+1)); done"
  fi
fi

names=() tools=()
add() { names+=("$1"); tools+=("$2"); }
add "bare command" ""
add "stacksym record (bpf)" "$STACKSYM record -q -F $HZ --call-graph bpf -o $TMP/s.folded --"
add "stacksym record (dwarf)" "$STACKSYM record -q -F $HZ --call-graph dwarf -o $TMP/s.folded --"
add "stacksym record (fp)" "$STACKSYM record -q -F $HZ --call-graph fp -o $TMP/s.folded --"
# Like perf record, which leaves symbolizing to perf report.
add "stacksym record (bpf, --no-symbolize)" \
  "$STACKSYM record -q -F $HZ --call-graph bpf --no-symbolize -o $TMP/s.folded --"
if [[ -n "${BASE_STACKSYM:-}" ]]; then
  add "base stacksym record (bpf)" "$BASE_STACKSYM record -q -F $HZ -o $TMP/b.folded --"
fi
add "perf record -g" "perf record -q -F $HZ -g -o $TMP/p.data --"
add "perf record --call-graph dwarf" "perf record -q -F $HZ --call-graph dwarf -o $TMP/p.data --"

# CPU milliseconds of one run of tool $1 on command $2 (`true`, or the real command through
# sh -c); task-clock counts the children too.
cpu_ms() {
  local tool command
  read -ra tool <<<"$1"
  if [[ $2 == true ]]; then command=(true); else command=(sh -c "$CMD"); fi
  perf stat -x, -e task-clock -o "$TMP/stat" -- "${tool[@]}" "${command[@]}" >/dev/null \
    2>"$TMP/err" || { echo "failed: $1 ${command[*]}" >&2; cat "$TMP/err" >&2; exit 1; }
  awk -F, '/task-clock/ {print $1; exit}' "$TMP/stat"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for w in true real; do
  for ((r = 0; r < N; ++r)); do
    for i in "${!tools[@]}"; do
      [[ $w == true && -z "${tools[$i]}" ]] && continue
      cpu_ms "${tools[$i]}" "$w" >>"$TMP/$w.$i"
    done
  done
done

med() { [[ -s "$TMP/$1.$2" ]] && median <"$TMP/$1.$2" || echo ""; }
perf_g=0
for i in "${!names[@]}"; do [[ ${names[$i]} == "perf record -g" ]] && perf_g=$i; done
bare=$(med real 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b <= 0) print "-"; else printf "%.2f", a / b}'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a - b}'; }

echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); -F $HZ, median of $N interleaved runs"
echo "real command: sh -c \"$CMD\""
echo
echo "| tool | \`-- true\` CPU ms | vs perf -g | real command CPU ms | profiler ms (minus bare) | vs perf -g |"
echo "|---|---|---|---|---|---|"
pt=$(med true "$perf_g")
pr=$(minus "$(med real "$perf_g")" "$bare")
for i in "${!names[@]}"; do
  t=$(med true "$i")
  real=$(med real "$i")
  if [[ -z "${tools[$i]}" ]]; then
    printf '| %s | - | - | %.1f | - | - |\n' "${names[$i]}" "$real"
    continue
  fi
  p=$(minus "$real" "$bare")
  printf '| %s | %.1f | %s | %.1f | %s | %s |\n' "${names[$i]}" "$t" "$(ratio "$t" "$pt")" \
    "$real" "$p" "$(ratio "$p" "$pr")"
done
