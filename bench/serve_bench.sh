#!/usr/bin/env bash
# `stacksym serve` as deployed (its own process, loopback): requests/s and p50/p99 latency
# for requests of 1000 file offsets sampled inside a library's functions, with its debug
# package giving the DWARF (libc.so.6 with libc6-dbg; libceph-common.so.2 with librados2-dbg
# when installed: scripts/setup.sh installs it when it can):
#   cold          a fresh server per round, no symbol index (--no-cache): the first requests
#                 find, open and parse the files (the page cache is warm);
#   cold, index   a fresh server per round whose --cache-dir already holds the build ID's
#                 persisted index (a restarted server);
#   warm          parsed files kept in memory across requests;
# with 1 and 16 concurrent keep-alive clients (Python threads). bench/serve_bench.cc measures
# the same in process, with the local symbolize-profile pass on the same 1000 frames.
#
#   bench/serve_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cli="$build/stacksym"
dir=$(mktemp -d /tmp/stacksym-serve-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# prepare LIBRARY: a debug dir holding it by build ID, and its functions as (file offset,
# size) pairs in $dir/functions; false when its debug file is not installed.
prepare() {
  local lib=$1
  id=$("$cli" buildid "$lib" | cut -d' ' -f1)
  [[ -f /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug ]] || return 1
  rm -rf "$dir/debug" "$dir/cache"
  mkdir -p "$dir/debug/.build-id/${id:0:2}" "$dir/cache"
  ln -s "$lib" "$dir/debug/.build-id/${id:0:2}/${id:2}"
  # Symbol values are virtual addresses; the request wants file offsets (through the
  # executable LOAD segment).
  local seg
  seg=$(readelf -lW "$lib" | awk '$1=="LOAD" && ($7 ~ /E/ || $8 ~ /E/) { print $2, $3; exit }')
  nm -D --defined-only -S "$lib" | python3 -c '
import sys
off, va = (int(x, 16) for x in sys.argv[1].split())
for line in sys.stdin:
    f = line.split()
    if len(f) == 4 and f[2] in "Tt":
        print("%x %s" % (int(f[0], 16) - va + off, f[1]))' "$seg" >"$dir/functions"
}

run() {  # run LABEL CLIENTS REQUESTS_PER_CLIENT COLD(0/1) INDEX(0/1)
  local label=$1 clients=$2 requests=$3 cold=$4 index=$5
  python3 - "$cli" "$dir" "$id" "$clients" "$requests" "$cold" "$label" "$index" <<'PY'
import http.client, json, random, subprocess, sys, threading, time
cli, d, bid, clients, requests, cold, label, index = sys.argv[1:9]
clients, requests, cold = int(clients), int(requests), cold == "1"
cache = ["--cache-dir", d + "/cache"] if index == "1" else ["--no-cache"]
rng = random.Random(42)
funcs = [tuple(int(x, 16) for x in l.split()) for l in open(d + "/functions")]
funcs = [f for f in funcs if f[1] > 0]
offsets = [a + rng.randrange(s) for a, s in (rng.choice(funcs) for _ in range(1000))]
body = json.dumps({"modules": [{"build_id": bid, "offsets": offsets}]})

def start():
    p = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--no-debuginfod",
                          "--debug-dir", d + "/debug", "--threads", "32", "--exit-after", "300"]
                         + cache,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().split()[-1]
    return p, int(url.rsplit(":", 1)[1])

lat, errors = [], []
def client(port, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    for _ in range(n):
        t = time.perf_counter()
        c.request("POST", "/v1/symbolize", body, {"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        lat.append(time.perf_counter() - t)
        if r.status != 200: errors.append(r.status)

rounds = 3 if cold else 1
wall = 0.0
for _ in range(rounds):
    p, port = start()
    if not cold:
        client(port, 2); lat.clear()  # warm-up
    ts = [threading.Thread(target=client, args=(port, requests)) for _ in range(clients)]
    t = time.perf_counter()
    for x in ts: x.start()
    for x in ts: x.join()
    wall += time.perf_counter() - t
    p.terminate(); p.wait()
lat.sort()
pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3
print(f"{label:<24} {len(lat)/wall:8.1f} req/s  p50 {pct(.5):7.1f} ms  p99 {pct(.99):7.1f} ms"
      f"  ({len(lat)} requests, {len(errors)} errors)")
PY
}

for lib in /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2; do
  if [[ ! -f $lib ]] || ! prepare "$lib"; then
    echo "serve_bench: $lib skipped (it or its debug package is not installed)"
    continue
  fi
  echo "serve_bench: 1000 offsets of $lib per request"
  run "cold, 1 client" 1 1 1 0
  run "cold, 16 clients" 16 1 1 0
  # The index the server will look for: same debug dirs, the binary where it finds it.
  "$cli" cache build --cache-dir "$dir/cache" --debug-dir "$dir/debug" --debug-dir /usr/lib/debug \
    "$dir/debug/.build-id/${id:0:2}/${id:2}" >/dev/null
  indexes=$(ls "$dir/cache" | wc -l)
  run "cold, index, 1 client" 1 1 1 1
  run "cold, index, 16 clients" 16 1 1 1
  (( $(ls "$dir/cache" | wc -l) == indexes )) ||
    echo "serve_bench: the server wrote another index (not the one built for it)" >&2
  run "warm, 1 client" 1 200 0 0
  run "warm, 16 clients" 16 50 0 0
done
# Local symbolization of the same 1000 frames: BM_LocalSymbolizeProfile in serve_bench.cc.
