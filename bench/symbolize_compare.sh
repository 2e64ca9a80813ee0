#!/usr/bin/env bash
# Whole-command comparison: stacksym vs llvm-symbolizer, addr2line and eu-addr2line on the same
# address lists (N addresses sampled inside function symbols, fixed seed), per input binary.
# Prints a Markdown table: each tool's wall time, CPU time (user + sys) and peak RSS (GNU time),
# stacksym's speed-up (tool time / stacksym time, wall and CPU) and memory ratio (stacksym RSS /
# tool RSS), and how many of
# stacksym's answers are byte-identical to llvm-symbolizer's (llvm output style).
#
#   bench/symbolize_compare.sh [BUILD_DIR] [INPUT...]
#
# Defaults: BUILD_DIR=build; inputs libc.so.6 (DWARF from libc6-dbg), /usr/bin/python3.11d
# (python3.11-dbg) and libceph-common.so.2 (librados2 + librados2-dbg; scripts/setup.sh installs
# them when it can). Missing inputs are skipped with a note.
# Environment: ADDRESSES (default 5000), RUNS (timed runs per tool, median kept; default 3;
# a tool whose first run exceeds SLOW_SECONDS=20 is timed once; TOOL_TIMEOUT=900 s kills it), TOOLS (default "stacksym llvm-symbolizer addr2line eu-addr2line").
set -euo pipefail

BUILD=${1:-build}
shift || true
STACKSYM=$BUILD/stacksym
ADDRESSES=${ADDRESSES:-5000}
RUNS=${RUNS:-3}
SLOW_SECONDS=${SLOW_SECONDS:-20}
TOOL_TIMEOUT=${TOOL_TIMEOUT:-900}
TOOLS=${TOOLS:-"stacksym llvm-symbolizer addr2line eu-addr2line"}
if [[ $# -gt 0 ]]; then
  INPUTS=("$@")
else
  INPUTS=(/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11d
          /usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2)
fi

[[ -x $STACKSYM ]] || { echo "no $STACKSYM: build first (make build)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time missing: apt-get install time" >&2; exit 2; }

WORK=$(mktemp -d /tmp/stacksym-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

source "$(dirname "$0")/sample_addresses.sh"

tool_command() {
  local tool=$1 file=$2
  case $tool in
    stacksym) echo "$STACKSYM symbolize elf --no-cache --output-style=llvm --file $file" ;;
    llvm-symbolizer) echo "llvm-symbolizer --inlines --obj=$file" ;;
    addr2line) echo "addr2line -f -i -C -e $file" ;;
    eu-addr2line) echo "eu-addr2line -f -i -C -e $file" ;;
  esac
}

# Times one warm-up run (it also fills the page cache); when it took more than SLOW_SECONDS
# that run is the measurement, otherwise RUNS more runs follow and the median is kept.
# A run longer than TOOL_TIMEOUT is killed and reported as "timeout".
# Prints "wall_seconds peak_kb user_seconds sys_seconds".
measure() {
  local tool=$1 file=$2 addrs=$3 out=$4
  local cmd
  cmd=$(tool_command "$tool" "$file")
  if ! /usr/bin/time -f '%e %M %U %S' -o "$WORK/time" timeout "$TOOL_TIMEOUT" $cmd <"$addrs" >"$out" 2>/dev/null; then
    if grep -q 'status 124' "$WORK/time"; then echo "timeout 0 0 0"; return; fi
  fi
  local first
  first=$(tail -1 "$WORK/time")
  if awk -v t="${first%% *}" -v s="$SLOW_SECONDS" 'BEGIN {exit !(t > s)}'; then
    echo "$first"
    return
  fi
  local results=()
  for ((r = 0; r < RUNS; r++)); do
    /usr/bin/time -f '%e %M %U %S' -o "$WORK/time" $cmd <"$addrs" >"$out" 2>/dev/null || true
    results+=("$(tail -1 "$WORK/time")")
  done
  printf '%s\n' "${results[@]}" | sort -n | awk -v n="$RUNS" 'NR == int((n + 1) / 2) {print}'
}

identical_blocks() {  # how many llvm-style answers of $1 equal those of $2
  python3 - "$1" "$2" <<'EOF'
import sys
a = open(sys.argv[1]).read().split("\n\n")
b = open(sys.argv[2]).read().split("\n\n")
n = min(len(a), len(b)) - 1
print(sum(1 for x, y in zip(a[:n], b[:n]) if x == y), n)
EOF
}

echo "| input | tool | wall (s) | CPU (s) | peak RSS (MB) | stacksym speed-up, wall | speed-up, CPU | stacksym memory ratio |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
notes=()
for file in "${INPUTS[@]}"; do
  if [[ ! -r $file ]]; then
    notes+=("skipped $file: not installed")
    continue
  fi
  addrs=$WORK/addrs
  sample_addresses "$file" "$ADDRESSES" >"$addrs"
  if [[ ! -s $addrs ]]; then
    notes+=("skipped $file: no sized function symbols")
    continue
  fi
  declare -A secs=() kb=() cpu=()
  for tool in $TOOLS; do
    if [[ $tool != stacksym ]] && ! command -v "$tool" >/dev/null; then
      notes+=("$tool not installed")
      continue
    fi
    read -r s k u y < <(measure "$tool" "$file" "$addrs" "$WORK/out.$tool")
    secs[$tool]=$s
    kb[$tool]=$k
    cpu[$tool]=$(awk -v u="$u" -v y="$y" 'BEGIN {printf "%.2f", u + y}')
  done
  for tool in $TOOLS; do
    [[ -n ${secs[$tool]:-} ]] || continue
    if [[ ${secs[$tool]} == timeout ]]; then
      printf '| %s | %s | > %s | ? | ? | | | |\n' "$(basename "$file")" "$tool" "$TOOL_TIMEOUT"
      continue
    fi
    speed="" cspeed="" mem=""
    if [[ $tool != stacksym && -n ${secs[stacksym]:-} && ${secs[stacksym]} != timeout ]]; then
      speed=$(awk -v t="${secs[$tool]}" -v s="${secs[stacksym]}" 'BEGIN {printf "%.1f×", t / (s > 0 ? s : 0.005)}')
      cspeed=$(awk -v t="${cpu[$tool]}" -v s="${cpu[stacksym]}" 'BEGIN {printf "%.1f×", t / (s > 0 ? s : 0.005)}')
      mem=$(awk -v t="${kb[$tool]}" -v s="${kb[stacksym]}" 'BEGIN {printf "%.2f", s / t}')
    fi
    printf '| %s | %s | %.2f | %.2f | %.0f | %s | %s | %s |\n' "$(basename "$file")" "$tool" \
      "${secs[$tool]}" "${cpu[$tool]}" "$(awk -v k="${kb[$tool]}" 'BEGIN {print k / 1024}')" \
      "$speed" "$cspeed" "$mem"
  done
  if [[ -s $WORK/out.stacksym && -s $WORK/out.llvm-symbolizer ]]; then
    read -r same total < <(identical_blocks "$WORK/out.stacksym" "$WORK/out.llvm-symbolizer")
    notes+=("$(basename "$file"): $(wc -l <"$addrs") addresses; stacksym output identical to llvm-symbolizer's for $same of $total")
  fi
  unset secs kb cpu
done
echo
for n in "${notes[@]}"; do echo "- $n"; done
echo "- load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- median of $RUNS runs after a warm-up run (tools slower than ${SLOW_SECONDS} s: the single first run); $(nproc) CPUs; $(uname -r)"
