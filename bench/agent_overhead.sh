#!/usr/bin/env bash
# The agent's own cost beside `record -a` of the same length, in one run (issue 38's table):
# CPU of the recorder process (user + system, % of one core) and its peak RSS, on an idle host
# and while ~20 short processes start each second; bytes sent per window.
#   bench/agent_overhead.sh BUILD_DIR [SECONDS]      (root; default 60 s per case)
set -euo pipefail
build=${1:?build dir}
secs=${2:-60}
stacksym="$build/stacksym"
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

churn() {  # about 20 short processes a second until killed
  while true; do
    for _ in 1 2 3 4; do /bin/true; done
    sleep 0.2
  done
}

measure() {  # NAME COMMAND...: CPU % of a core and peak RSS (MB) of the command, from /usr/bin/time
  local name=$1; shift
  /usr/bin/time -f "%U %S %M" -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1 || true
  read -r user sys rss <"$out/$name.time"
  awk -v n="$name" -v u="$user" -v s="$sys" -v r="$rss" -v t="$secs" \
    'BEGIN { printf "%-28s CPU %6.2f %% of a core  peak RSS %6.1f MB\n", n, 100*(u+s)/t, r/1024 }'
}

# The agent for $secs seconds, stopped by SIGTERM: its own final metrics say what it cost
# (/usr/bin/time would measure `timeout`, not the agent).
measure_agent() {
  local name=$1
  timeout -s TERM "$secs" "$stacksym" agent -F 19 --interval 10 --output-dir "$out/windows" \
    --no-debuginfod >/dev/null 2>"$out/agent.log" || true
  awk -v n="$name" -v t="$secs" '
    /^process_cpu_seconds_total/ { cpu = $2 } /^process_resident_memory_bytes/ { rss = $2 }
    END { printf "%-28s CPU %6.2f %% of a core  RSS at exit %6.1f MB\n", n, 100*cpu/t, rss/1048576 }' \
    "$out/agent.log"
}

echo "stacksym agent vs record -a, $secs s each, 19 Hz, on $(nproc) CPUs"
measure "record -a, idle" "$stacksym" record -a -F 19 -d "$secs" -q -o "$out/r.pb.gz" --no-debuginfod
measure_agent "agent, idle"
ls -l "$out/windows" 2>/dev/null | awk 'NR>1 { n++; b += $5 } END { if (n) printf "%-28s %d windows, %.0f bytes each (gzipped pprof)\n", "agent windows", n, b/n }'
rm -rf "$out/windows"
churn & churner=$!
measure "record -a, churn" "$stacksym" record -a -F 19 -d "$secs" -q -o "$out/r2.pb.gz" --no-debuginfod
measure_agent "agent, churn"
kill $churner
