#!/usr/bin/env bash
# The persisted symbol index: for each input, 5000 addresses sampled inside function symbols
# (same sampling as symbolize_compare.sh) symbolized by
#   direct  stacksym --no-cache (parses DWARF, today's cold path)
#   cold    stacksym with an empty cache directory (parses everything and writes the index)
#   warm    stacksym with the index in place (and the memo of the names it demangled)
#   other   warm, on 5000 other addresses (another seed): names the memo lacks are demangled;
#           each run starts from the memo the warm runs left
#   llvm    llvm-symbolizer --inlines
# Prints wall time and peak RSS (median of RUNS, bench/timed_run.py), whether the outputs are identical
# to the direct path's, and the index size against the debug file's. Direct and cold runs
# alternate (direct, cold, cold, direct, ...) and cold/direct is the median of each pair's
# ratio: the host's speed drifts over minutes, and the goal is that ratio.
#
#   bench/index_compare.sh [BUILD_DIR] [INPUT...]
# Defaults: libc.so.6 (libc6-dbg), /usr/bin/python3.11d (python3.11-dbg), libceph-common.so.2
# (librados2-dbg; skipped when missing). Environment: ADDRESSES (5000), RUNS (5), PAUSE (0: seconds
# of idle before each timed run; 2.5 measures a run after a pause, when a VM's host may have
# taken freed memory back, as a profiler's user meets it, instead of back-to-back runs).
set -euo pipefail

BUILD=${1:-build}
shift || true
STACKSYM=$BUILD/stacksym
ADDRESSES=${ADDRESSES:-5000}
RUNS=${RUNS:-5}
PAUSE=${PAUSE:-0}
if [[ $# -gt 0 ]]; then
  INPUTS=("$@")
else
  INPUTS=(/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11d
          /usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2)
fi
[[ -x $STACKSYM ]] || { echo "no $STACKSYM: build first (make build)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/stacksym-index-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

source "$(dirname "$0")/sample_addresses.sh"

# run MODE FILE ADDRS OUT → "wall_seconds peak_kb cpu_seconds"
run_once() {
  local mode=$1 file=$2 addrs=$3 out=$4 cmd
  case $mode in
    direct) cmd="$STACKSYM symbolize elf --no-cache --output-style=llvm --file $file" ;;
    cold) rm -rf "$WORK/cache"; cmd="$STACKSYM symbolize elf --cache-dir $WORK/cache --output-style=llvm --file $file" ;;
    warm) cmd="$STACKSYM symbolize elf --cache-dir $WORK/cache --output-style=llvm --file $file" ;;
    other) cp "$WORK"/memo.keep/*.symnames "$WORK/cache/" 2>/dev/null || true  # C: no memo
           cmd="$STACKSYM symbolize elf --cache-dir $WORK/cache --output-style=llvm --file $file" ;;
    llvm) cmd="llvm-symbolizer --inlines --obj=$file" ;;
  esac
  "$(dirname "$0")/timed_run.py" "$addrs" "$out" $cmd
}

measure() {
  local mode=$1 file=$2 addrs=$3 out=$4 results=()
  run_once "$mode" "$file" "$addrs" "$out" >/dev/null  # warm-up (page cache; warm: the index)
  for ((r = 0; r < RUNS; r++)); do
    sleep "$PAUSE"
    results+=("$(run_once "$mode" "$file" "$addrs" "$out")")
  done
  printf '%s\n' "${results[@]}" | sort -n | awk -v n="$RUNS" 'NR == int((n + 1) / 2) {print}'
}

# Direct and cold in alternating pairs: prints the direct median, the cold median (each
# "wall rss cpu") and the median of the pairs' cold/direct ratios.
measure_pairs() {
  local file=$1 addrs=$2 pairs=() direct cold r
  run_once direct "$file" "$addrs" "$WORK/direct.out" >/dev/null  # warm-up (page cache)
  run_once cold "$file" "$addrs" "$WORK/cold.out" >/dev/null
  for ((r = 0; r < RUNS; r++)); do
    if ((r % 2 == 0)); then
      sleep "$PAUSE"; direct=$(run_once direct "$file" "$addrs" "$WORK/direct.out")
      sleep "$PAUSE"; cold=$(run_once cold "$file" "$addrs" "$WORK/cold.out")
    else
      sleep "$PAUSE"; cold=$(run_once cold "$file" "$addrs" "$WORK/cold.out")
      sleep "$PAUSE"; direct=$(run_once direct "$file" "$addrs" "$WORK/direct.out")
    fi
    pairs+=("$direct $cold")
  done
  printf '%s\n' "${pairs[@]}" | awk -v n="$RUNS" '
    function median(a, k,   i, j, t) {
      for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return a[int((k + 1) / 2)]
    }
    { dw[NR] = $1; dm[NR] = $2; dc[NR] = $3; cw[NR] = $4; cm[NR] = $5; cc[NR] = $6; q[NR] = $4 / $1 }
    END {
      printf "%s %s %s %s %s %s %.2f\n", median(dw, n), median(dm, n), median(dc, n),
        median(cw, n), median(cm, n), median(cc, n), median(q, n)
    }'
}

echo "| input | debug file | index | index/debug | direct (--no-cache) | cold (build + answer) | cold/direct | warm (index) | warm, other addresses | llvm-symbolizer | warm vs llvm | identical |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for file in "${INPUTS[@]}"; do
  [[ -r $file ]] || { echo "skipped $file: not installed" >&2; continue; }
  hex=$(readelf -n "$file" 2>/dev/null | awk '/Build ID/ {print $3}')
  if ! readelf -S "$file" 2>/dev/null | grep -q '\.debug_info' &&
     [[ ! -r /usr/lib/debug/.build-id/${hex:0:2}/${hex:2}.debug ]]; then
    echo "skipped $file: no DWARF (debug package not installed)" >&2
    continue
  fi
  addrs=$WORK/addrs
  sample_addresses "$file" "$ADDRESSES" >"$addrs"
  read -r dw dm dc cw cm cc cold_ratio < <(measure_pairs "$file" "$addrs")
  read -r ww wm wc < <(measure warm "$file" "$addrs" "$WORK/warm.out")
  other=$WORK/other
  sample_addresses "$file" "$ADDRESSES" 1126 >"$other"
  rm -rf "$WORK/memo.keep" && mkdir "$WORK/memo.keep"
  cp "$WORK"/cache/*.symnames "$WORK/memo.keep/" 2>/dev/null || true
  read -r ow om oc < <(measure other "$file" "$other" "$WORK/other.out")
  $STACKSYM symbolize elf --no-cache --output-style=llvm --file "$file" <"$other" >"$WORK/other-direct.out"
  lw=- lm=0 lc=-
  if command -v llvm-symbolizer >/dev/null; then
    read -r lw lm lc < <(measure llvm "$file" "$addrs" "$WORK/llvm.out")
  fi
  same=no
  cmp -s "$WORK/direct.out" "$WORK/cold.out" && cmp -s "$WORK/direct.out" "$WORK/warm.out" &&
    cmp -s "$WORK/other-direct.out" "$WORK/other.out" && same=yes
  debug=$($STACKSYM cache list --cache-dir "$WORK/cache" 2>/dev/null | awk -F'\t' '{print $6}' | head -1)
  index_bytes=$(du -b "$WORK"/cache/*.symidx | awk '{s += $1} END {print s}')
  debug_bytes=$(stat -L -c %s "$debug" 2>/dev/null || echo 0)
  ratio=$(awk -v a="$index_bytes" -v b="$debug_bytes" 'BEGIN {printf (b > 0 ? "%.3f" : "-"), a / b}')
  speed=$(awk -v a="$lw" -v b="$ww" 'BEGIN {printf (b > 0 && a != "-" ? "%.1f×" : "-"), a / b}')
  printf '| %s | %.1f MB | %.1f MB | %s | %.3f s (CPU %.2f s), %d MB | %.3f s (CPU %.2f s), %d MB | %s× | %.3f s (CPU %.3f s), %d MB | %.3f s (CPU %.3f s), %d MB | %.3f s (CPU %.2f s), %d MB | %s | %s |\n' \
    "$(basename "$file")" "$(awk -v b="$debug_bytes" 'BEGIN {print b / 1e6}')" \
    "$(awk -v b="$index_bytes" 'BEGIN {print b / 1e6}')" "$ratio" \
    "$dw" "$dc" $((dm / 1024)) "$cw" "$cc" $((cm / 1024)) "$cold_ratio" "$ww" "$wc" $((wm / 1024)) \
    "$ow" "$oc" $((om / 1024)) "$lw" "$lc" $((lm / 1024)) "$speed" "$same"
done
