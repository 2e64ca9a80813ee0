#!/usr/bin/python3
"""serve's OTLP symbolizing proxy as deployed (its own process, loopback): requests/s and
latency for one 10-s window of an eBPF-profiler-like fleet host -- 100 processes, about 2000
distinct native locations across 30 build IDs -- cold (a fresh serve, first sight of the build
IDs) and warm, beside `symbolize-profile --server` naming the same frames from a pprof.

The 30 build IDs are one generated C program linked 30 times with --build-id=0x..., stripped,
their debug files apart: serve has them by build ID, the request carries only build IDs and ELF
virtual addresses (as the OpenTelemetry eBPF profiler sends them). No forwarding: serve answers
with the symbolized request (what a forward adds is the downstream's time).

    bench/proxy_bench.py [BUILD_DIR]     (needs python3-protobuf; builds export_test_protos)
"""

import gzip
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "stacksym")
PY = os.path.join(BUILD, "tests", "export", "py")
PROCESSES = 100
BINARIES = 30
DISTINCT = 2000
BINARIES_PER_PROCESS = 8
STACKS_PER_PROCESS = 20
DEPTH = 10

subprocess.run(["cmake", "--build", BUILD, "--target", "export_test_protos", "stacksym_cli"],
               check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, PY)
import otlp_profiles_pb2 as pb  # noqa: E402
import profile_pb2  # noqa: E402
import pyroscope_push_pb2  # noqa: E402


def program(functions=300):
    """C source: `functions` functions, each with an inlined helper: inline chains."""
    out = ["#include <stdio.h>",
           "static inline __attribute__((always_inline)) long mixin(long x, long k) "
           "{ for (long i = 0; i < k; ++i) x = x * 31 + i; return x; }"]
    for f in range(functions):
        out.append(f"__attribute__((noinline)) long f{f}(long a) {{ long r = a; "
                   f"for (long i = 0; i < a % {f + 3}; ++i) r += mixin(r, i) ^ {f}; "
                   f"return r + (a > 1 ? f{f - 1 if f else 0}(a / 2) : 0); }}")
    out.append("int main(int c, char** v) { long s = 0;")
    out += [f"  s += f{f}(c);" for f in range(0, functions, 7)]
    out.append('  printf("%ld\\n", s); return 0; }')
    return "\n".join(out)


def build_binaries(work):
    src = os.path.join(work, "prog.c")
    with open(src, "w") as f:
        f.write(program())
    obj = os.path.join(work, "prog.o")
    subprocess.run(["gcc", "-g", "-O2", "-c", src, "-o", obj], check=True)
    debug = os.path.join(work, "debug")
    binaries = []
    for b in range(BINARIES):
        build_id = "%040x" % (0x5eed0000000000000000000000000000000000 + b * 0x1000193)
        exe = os.path.join(work, f"prog{b}")
        subprocess.run(["gcc", obj, "-o", exe, f"-Wl,--build-id=0x{build_id}"], check=True)
        where = os.path.join(debug, ".build-id", build_id[:2])
        os.makedirs(where, exist_ok=True)
        subprocess.run(["objcopy", "--only-keep-debug", exe, os.path.join(where, build_id[2:] + ".debug")],
                       check=True)
        subprocess.run(["strip", "--strip-all", "-o", os.path.join(where, build_id[2:]), exe], check=True)
        binaries.append((build_id, exe))
    return debug, binaries


BASE = 0x555555554000


def pt_loads(exe):
    """(offset, vaddr, filesz) of each PT_LOAD."""
    text = subprocess.run(["readelf", "-lW", exe], check=True, capture_output=True, text=True).stdout
    return [(int(f[1], 16), int(f[2], 16), int(f[4], 16)) for f in map(str.split, text.splitlines())
            if f and f[0] == "LOAD"]


def to_offset(loads, vaddr):
    for off, va, size in loads:
        if va <= vaddr < va + size:
            return vaddr - va + off
    raise ValueError(hex(vaddr))


def code_vaddrs(exe, count, rng):
    """`count` distinct addresses inside the functions f*, as ELF virtual addresses."""
    nm = subprocess.run(["nm", "-S", "--defined-only", exe], check=True, capture_output=True,
                        text=True).stdout
    addresses = []
    for line in nm.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "Tt" and p[3].startswith("f"):
            start, size = int(p[0], 16), int(p[1], 16)
            addresses += range(start, start + size)
    return rng.sample(addresses, count)


def requests(binaries, rng):
    """The OTLP request (serialized) and the same frames as a pprof (gzipped)."""
    per_binary = DISTINCT // BINARIES + 1
    pools = [code_vaddrs(exe, per_binary, rng) for _, exe in binaries]
    r = pb.ExportProfilesServiceRequest()
    d = r.dictionary
    d.string_table.append("")
    for table in (d.mapping_table, d.location_table, d.function_table, d.link_table,
                  d.attribute_table, d.stack_table):
        table.add()
    strings = {"": 0}

    def s(text):
        if text not in strings:
            strings[text] = len(d.string_table)
            d.string_table.append(text)
        return strings[text]

    def attribute(key, value):
        a = d.attribute_table.add()
        a.key_strindex = s(key)
        a.value.string_value = value
        return len(d.attribute_table) - 1

    native = attribute("profile.frame.type", "native")
    kernel_type = attribute("profile.frame.type", "kernel")
    build_attr = [attribute("process.executable.build_id.gnu", b) for b, _ in binaries]
    kernel_mapping = d.mapping_table.add()
    kernel_mapping.filename_strindex = s("[kernel.kallsyms]")
    kernel_loc = d.location_table.add()
    kernel_loc.mapping_index = 1
    kernel_loc.address = 0xffffffff81000000
    kernel_loc.attribute_indices.append(kernel_type)
    used = set()
    pprof_stacks = []
    mine_of = [[(proc * 7 + k * 3) % BINARIES for k in range(BINARIES_PER_PROCESS)]
               for proc in range(PROCESSES)]
    # Every distinct pair is in some process's stacks: each goes to one of the processes that
    # map its binary, in turn.
    pairs = [(b, a) for b in range(BINARIES) for a in pools[b]][:DISTINCT]
    assigned = [[] for _ in range(PROCESSES)]
    turn = [0] * BINARIES
    for b, a in pairs:
        having = [p for p in range(PROCESSES) if b in mine_of[p]]
        assigned[having[turn[b] % len(having)]].append((b, a))
        turn[b] += 1
    chosen = set(pairs)
    for proc in range(PROCESSES):
        mine = mine_of[proc]
        mappings, locations = {}, {}
        for b in mine:
            m = d.mapping_table.add()
            m.memory_start, m.memory_limit = 0x400000, 0x800000
            m.filename_strindex = s(f"/opt/app/prog{b}")
            m.attribute_indices.append(build_attr[b])
            mappings[b] = len(d.mapping_table) - 1
        rp = r.resource_profiles.add()
        kv = rp.resource.attributes.add()
        kv.key = "process.pid"
        kv.value.int_value = 1000 + proc
        prof = rp.scope_profiles.add().profiles.add()
        prof.sample_type.type_strindex = s("samples")
        prof.sample_type.unit_strindex = s("count")
        todo = list(assigned[proc])
        local = [pair for pair in pairs if pair[0] in mine]
        for _ in range(STACKS_PER_PROCESS):
            frames = []
            for _ in range(DEPTH):
                key = todo.pop() if todo else local[rng.randrange(len(local))]
                assert key in chosen
                used.add(key)
                b, addr = key
                if key not in locations:
                    loc = d.location_table.add()
                    loc.mapping_index = mappings[b]
                    loc.address = addr
                    loc.attribute_indices.append(native)
                    locations[key] = len(d.location_table) - 1
                frames.append(key)
            st = d.stack_table.add()
            st.location_indices.extend([locations[f] for f in frames] + [1])
            sample = prof.samples.add()
            sample.stack_index = len(d.stack_table) - 1
            sample.values.append(rng.randrange(1, 20))
            pprof_stacks.append(frames)
    # The same frames as a pprof: one mapping per build ID, mapped at 0x555555554000 with file
    # offset 0 (address = 0x555555554000 + the vaddr's file offset, through its PT_LOAD).
    loads = [pt_loads(exe) for _, exe in binaries]
    p = profile_pb2.Profile()
    p.string_table.append("")
    ps = {"": 0}

    def ps_(text):
        if text not in ps:
            ps[text] = len(p.string_table)
            p.string_table.append(text)
        return ps[text]

    st = p.sample_type.add()
    st.type, st.unit = ps_("samples"), ps_("count")
    for b, (build_id, _) in enumerate(binaries):
        m = p.mapping.add()
        m.id, m.memory_start, m.memory_limit, m.file_offset = b + 1, BASE, BASE + (1 << 30), 0
        m.filename, m.build_id = ps_(f"/opt/app/prog{b}"), ps_(build_id)
    loc_ids = {}
    for frames in pprof_stacks:
        sample = p.sample.add()
        for b, addr in frames:
            if (b, addr) not in loc_ids:
                loc = p.location.add()
                loc.id = len(loc_ids) + 1
                loc.mapping_id, loc.address = b + 1, BASE + to_offset(loads[b], addr)
                loc_ids[(b, addr)] = loc.id
            sample.location_id.append(loc_ids[(b, addr)])
        sample.value.append(1)
    return r.SerializeToString(), gzip.compress(p.SerializeToString()), len(used), \
        len(d.location_table) - 2


def start_serve(debug, cache):
    args = [CLI, "serve", "--listen", "127.0.0.1:0", "--no-default-debug-dir", "--debug-dir", debug,
            "--no-debuginfod", "--threads", "8", "--exit-after", "600"]
    args += ["--cache-dir", cache] if cache else ["--no-cache"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    port = int(line.strip().rsplit(":", 1)[1])
    return proc, port


def post(port, body, conn=None, path="/v1development/profiles"):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t = time.perf_counter()
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
    if path != "/v1development/profiles":
        headers = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1"}
    c.request("POST", path, body, headers)
    res = c.getresponse()
    data = res.read()
    elapsed = time.perf_counter() - t
    assert res.status == 200, (res.status, data[:200])
    return elapsed, data


def named_locations(data):
    r = pb.ExportProfilesServiceRequest()
    r.ParseFromString(data)
    return sum(1 for loc in r.dictionary.location_table if loc.lines)


def metrics(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    return [l for l in c.getresponse().read().decode().splitlines() if l.startswith(name)]


def main():
    rng = random.Random(7)
    work = tempfile.mkdtemp(prefix="stacksym-proxy-bench.")
    try:
        debug, binaries = build_binaries(work)
        body, pprof_gz, distinct, locations = requests(binaries, rng)
        wire = gzip.compress(body)
        print(f"request: {PROCESSES} processes, {locations} native locations, {distinct} distinct "
              f"(build ID, address) across {BINARIES} build IDs; {len(body)} bytes, "
              f"{len(wire)} gzipped")
        for label, cache in (("cold, no index (--no-cache)", None),
                             ("cold, fresh --cache-dir (index written)", "fresh"),
                             ("cold restart, index in --cache-dir", "kept")):
            times = []
            for _ in range(3):
                cache_dir = None
                if cache == "fresh" or (cache == "kept" and not os.path.isdir(work + "/cache")):
                    shutil.rmtree(work + "/cache", ignore_errors=True)
                    os.makedirs(work + "/cache")
                if cache:
                    cache_dir = work + "/cache"
                if cache == "kept" and not os.listdir(cache_dir):
                    proc, port = start_serve(debug, cache_dir)  # write the indexes once
                    post(port, wire)
                    proc.terminate()
                    proc.wait()
                proc, port = start_serve(debug, cache_dir)
                elapsed, data = post(port, wire)
                times.append(elapsed)
                named = named_locations(data)
                proc.terminate()
                proc.wait()
            print(f"{label}: first request {statistics.median(times) * 1000:.0f} ms "
                  f"(median of 3: {', '.join(f'{t * 1000:.0f}' for t in times)}); "
                  f"{named} of {locations} locations named")
        proc, port = start_serve(debug, None)
        post(port, wire)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        lat = sorted(post(port, wire, conn)[0] for _ in range(40))
        print(f"warm, 1 client: {len(lat) / sum(lat):.1f} requests/s, p50 {lat[len(lat) // 2] * 1000:.1f} ms, "
              f"p99 {lat[-1] * 1000:.1f} ms (40 requests)")
        for clients in (4,):
            results = []

            def client():
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                for _ in range(10):
                    results.append(post(port, wire, c)[0])

            t = time.perf_counter()
            threads = [threading.Thread(target=client) for _ in range(clients)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t
            results.sort()
            print(f"warm, {clients} clients: {len(results) / wall:.1f} requests/s, "
                  f"p50 {results[len(results) // 2] * 1000:.1f} ms, p99 {results[-1] * 1000:.1f} ms")
        # The same frames as a Pyroscope Push of the pprof (one series, raw_profile gzipped).
        push = pyroscope_push_pb2.PushRequest()
        series = push.series.add()
        label = series.labels.add()
        label.name, label.value = "__name__", "process_cpu"
        series.samples.add().raw_profile = pprof_gz
        push_body = push.SerializeToString()
        post(port, push_body, path="/push.v1.PusherService/Push")
        lat = sorted(post(port, push_body, conn, "/push.v1.PusherService/Push")[0] for _ in range(20))
        print(f"warm, 1 client, the same frames as one Push (pprof, {len(push_body)} bytes): "
              f"{len(lat) / sum(lat):.1f} requests/s, p50 {lat[len(lat) // 2] * 1000:.1f} ms")
        print("  " + "; ".join(metrics(port, "stacksym_proxy_frames_total")))
        # symbolize-profile --server on the same frames (pprof), against the warm server and a
        # fresh one.
        pin, pout = work + "/in.pb.gz", work + "/out.pb.gz"
        with open(pin, "wb") as f:
            f.write(pprof_gz)
        cmd = [CLI, "symbolize-profile", "-q", "--no-debuginfod", "--no-default-debug-dir",
               "--server", f"http://127.0.0.1:{port}", pin, pout]
        warm = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            warm.append(time.perf_counter() - t)
        proc.terminate()
        proc.wait()
        cold = []
        for _ in range(3):
            proc, port = start_serve(debug, None)
            cmd[cmd.index("--server") + 1] = f"http://127.0.0.1:{port}"
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            cold.append(time.perf_counter() - t)
            proc.terminate()
            proc.wait()
        print(f"symbolize-profile --server, same {distinct} frames as pprof (whole command): "
              f"warm server {statistics.median(warm) * 1000:.0f} ms, "
              f"fresh server (no index) {statistics.median(cold) * 1000:.0f} ms (medians)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
