#!/usr/bin/env bash
# The agent's memory over a long run: `stacksym agent -a` at 19 Hz with 10-s windows written to
# a bounded --output-dir, while ~20 short processes start each second (new pids, new
# mappings, exits), its RSS read every STEP seconds. Prints the RSS series' first minute, its
# maximum and the growth from the second half's start to its end (a leak grows steadily; a
# cache that fills stops), then the agent's final metrics line of CPU.
#   bench/agent_soak.sh BUILD_DIR [SECONDS] [STEP]      (root; default 600 s, every 10 s)
# AGENT_ARGS: more agent flags (e.g. "--symbolize none": the recorder's share without the
# symbolizer's).
set -euo pipefail
build=${1:?build dir}
secs=${2:-600}
step=${3:-10}
stacksym="$build/stacksym"
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

churn() {
  while true; do
    for _ in 1 2 3 4; do /bin/true; done
    sleep 0.2
  done
}

churn &
"$stacksym" agent -F 19 --interval 10 --output-dir "$out/windows" --output-max-bytes 64M \
  --no-debuginfod ${AGENT_ARGS:-} >/dev/null 2>"$out/agent.log" &
agent=$!
: >"$out/rss"
for ((t = step; t <= secs; t += step)); do
  sleep "$step"
  kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$agent/status" 2>/dev/null || echo 0)
  echo "$t $kb" >>"$out/rss"
done
# Where the resident memory is at the end: anonymous (heap), file pages (mapped binaries and
# debug files), shared memory (the BPF maps user space maps: the unwind rows).
rollup=$(grep -E '^(Rss|Anonymous|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty):' \
  "/proc/$agent/smaps_rollup" 2>/dev/null | awk '{ printf "%s %.1f MB; ", $1, $2 / 1024 }')
shmem=$(awk '/^RssShmem:/ { printf "%.1f", $2 / 1024 }' "/proc/$agent/status" 2>/dev/null)
file=$(awk '/^RssFile:/ { printf "%.1f", $2 / 1024 }' "/proc/$agent/status" 2>/dev/null)
anon=$(awk '/^RssAnon:/ { printf "%.1f", $2 / 1024 }' "/proc/$agent/status" 2>/dev/null)
kill -TERM "$agent"
wait "$agent" || true

awk -v secs="$secs" '
  { t[NR] = $1; r[NR] = $2; if ($2 > max) max = $2 }
  END {
    half = int(NR / 2) + 1
    first_minute = 0
    for (i = 1; i <= NR && t[i] <= 60; i++) first_minute = r[i]
    printf "agent soak: %d s, RSS sampled %d times\n", secs, NR
    printf "  RSS after 1 min %.1f MB, max %.1f MB, at the end %.1f MB\n",
      first_minute / 1024, max / 1024, r[NR] / 1024
    printf "  second half: %.1f MB -> %.1f MB (%+.2f MB per 10 min)\n", r[half] / 1024,
      r[NR] / 1024, (r[NR] - r[half]) / 1024 * 600 / (t[NR] - t[half] + 0.001)
  }' "$out/rss"
awk '/^process_cpu_seconds_total/ { printf "  CPU %.2f %% of a core\n", 100 * $2 / '"$secs"' }' \
  "$out/agent.log"
echo "  at the end: anonymous ${anon} MB, file ${file} MB, shared memory ${shmem} MB"
echo "  ${rollup}"
grep -E '^stacksym_agent_(bpf_unwind_rows_bytes|bpf_map_bytes|symbolizer_cache_bytes|processes_tracked) ' \
  "$out/agent.log" | sed 's/^/  /'
