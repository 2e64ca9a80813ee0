#!/usr/bin/env bash
# Two builds of stacksym side by side, in one run, on the figures a refactor must not make
# worse: the symbol index cold (built) and warm (read) on a big library, the recorder's CPU per
# 1000 samples, and `serve`'s requests per second. The builds alternate (A B A B ...) so that a
# host whose speed drifts treats both alike; each figure is the median of RUNS, with B/A.
#
#   bench/builds_compare.sh OLD_BUILD_DIR NEW_BUILD_DIR
# Environment: RUNS (5), ADDRESSES (5000), LIB (libceph-common.so.2 when installed, else libc).
# Needs root for `record`.
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1/stacksym
B=$2/stacksym
RUNS=${RUNS:-5}
ADDRESSES=${ADDRESSES:-5000}
LIB=${LIB:-/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2}
[[ -f $LIB ]] || LIB=/usr/lib/x86_64-linux-gnu/libc.so.6
for x in "$A" "$B"; do [[ -x $x ]] || { echo "no $x" >&2; exit 2; }; done
WORK=$(mktemp -d /tmp/stacksym-builds-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source bench/sample_addresses.sh
sample_addresses "$LIB" "$ADDRESSES" >"$WORK/addresses"
gcc -O2 -pthread bench/workloads/cpu_burn.c -o "$WORK/cpu_burn"

# seconds CMD...: wall seconds of one run (output discarded).
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

index_cold() {  # BUILD_BINARY: a fresh cache dir, the index built
  rm -rf "$WORK/cache"
  seconds "$1" symbolize elf --cache-dir "$WORK/cache" --file "$LIB" <"$WORK/addresses"
}
index_warm() {  # the index of the cold run read back
  seconds "$1" symbolize elf --cache-dir "$WORK/cache" --file "$LIB" <"$WORK/addresses"
}
record_cpu() {  # ms of stacksym CPU per 1000 samples, from its summary
  "$1" record -F 999 --no-cache -o "$WORK/r.folded" -- "$WORK/cpu_burn" 150 2 2>&1 |
    sed -n 's/.*(\([0-9.]*\) ms per 1000 samples).*/\1/p'
}
serve_rps() {  # requests/s of one client sending 1000 offsets a request, warm
  python3 - "$1" "$LIB" "$WORK/addresses" <<'PY'
import http.client, json, subprocess, sys, time
cli, lib, addrs = sys.argv[1:4]
bid = subprocess.run([cli, "buildid", lib], capture_output=True, text=True).stdout.split()[0]
# Virtual addresses to file offsets through the first executable LOAD segment.
seg = [l.split() for l in subprocess.run(["readelf", "-lW", lib], capture_output=True,
       text=True).stdout.splitlines() if l.split()[:1] == ["LOAD"] and "E" in l.split()[6:8]][0]
off, va = int(seg[1], 16), int(seg[2], 16)
offsets = [int(a, 16) - va + off for a in open(addrs).read().split()][:1000]
body = json.dumps({"modules": [{"build_id": bid, "offsets": offsets}]})
p = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--no-debuginfod", "--no-cache",
                      "--debug-dir", "/usr/lib/debug", "--exit-after", "120"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
port = int(p.stdout.readline().split()[-1].rsplit(":", 1)[1])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
def post():
    c.request("POST", "/v1/symbolize", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    return r.status
post(); post()  # the file found and parsed: warm from here
n, t = 0, time.perf_counter()
while time.perf_counter() - t < 3:
    if post() != 200: sys.exit("serve answered an error")
    n += 1
print(f"{n / (time.perf_counter() - t):.1f}")
p.terminate(); p.wait()
PY
}

declare -A values
for ((r = 0; r < RUNS; ++r)); do
  for side in A B; do
    bin=${!side}
    values[$side,cold]+="$(index_cold "$bin") "
    values[$side,warm]+="$(index_warm "$bin") "
    values[$side,record]+="$(record_cpu "$bin") "
    values[$side,serve]+="$(serve_rps "$bin") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "$(basename "$LIB"), $ADDRESSES addresses; median of $RUNS alternating runs; $(date -u +%F)"
echo "| figure | A: $1 | B: $2 | B/A |"
echo "|---|---:|---:|---:|"
for f in cold warm record serve; do
  a=$(echo "${values[A,$f]}" | median)
  b=$(echo "${values[B,$f]}" | median)
  case $f in
    cold) label="index cold (s)" ;; warm) label="index warm (s)" ;;
    record) label="record CPU per 1000 samples (ms)" ;; serve) label="serve requests/s" ;;
  esac
  printf '| %s | %.3f | %.3f | %.2f |\n' "$label" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
