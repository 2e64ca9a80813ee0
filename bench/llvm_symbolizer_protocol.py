#!/usr/bin/env python3
"""llvm-symbolizer protocol throughput: stacksym's drop-in against llvm-symbolizer.

  bench/llvm_symbolizer_protocol.py BUILD_DIR [--requests N] [--json]

For each library (libc, and libceph-common when librados2-dbg is installed) it sends N
`CODE "lib" 0xADDR` requests over a pipe one at a time, as the sanitizers do (write one,
read the answer up to its empty line, then the next), and reports requests per second after
the first answer (the first one, which loads the file and its debug info, is reported
separately); and, streamed, all N requests written at once (a batch client such as pprof).
Also the start-up time: spawn, answer one request for /bin/true, exit. --json: the same with
--output-style=JSON (one line per answer, frames with their discriminators and starts).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

STYLE = ["--output-style=JSON"] if "--json" in sys.argv else []

LIBS = [
    ("libc", "/lib/x86_64-linux-gnu/libc.so.6"),
    ("libceph-common", "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2"),
]


def function_addresses(path, count):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    starts = sorted({int(l.split()[0], 16) for l in out.splitlines()
                     if len(l.split()) >= 3 and l.split()[1] in "tTwWiI"})
    rng = random.Random(42)
    return [rng.choice(starts) + rng.randrange(0, 64) for _ in range(count)]


def ping_pong(tool, module, addrs):
    p = subprocess.Popen([tool, "--inlines", "--demangle", "--default-arch=x86_64"] + STYLE,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    rin, rout = p.stdin, p.stdout
    reader = os.fdopen(rout.fileno(), "rb", buffering=1 << 16, closefd=False)
    times = []
    for a in addrs:
        t = time.perf_counter()
        rin.write(b'CODE "%s" 0x%x\n' % (module.encode(), a))
        while True:  # an answer ends with an empty line (JSON: is one line)
            line = reader.readline()
            if not line:
                raise RuntimeError(f"{tool} closed its output")
            if line == b"\n" or STYLE:
                break
        times.append(time.perf_counter() - t)
    rin.close()
    p.wait()
    return times


def streamed(tool, module, addrs):
    requests = b"".join(b'CODE "%s" 0x%x\n' % (module.encode(), a) for a in addrs)
    t = time.perf_counter()
    subprocess.run([tool, "--inlines"] + STYLE, input=requests, capture_output=True, check=True)
    return len(addrs) / (time.perf_counter() - t)


def startup(tool, runs=20):
    best = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([tool], input=b'CODE "/bin/true" 0x1000\n', capture_output=True, check=True)
        best.append(time.perf_counter() - t)
    best.sort()
    return best[len(best) // 2]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    args = [a for a in sys.argv if a != "--json"]
    n = int(args[3]) if len(args) > 3 and args[2] == "--requests" else 5000
    llvm = shutil.which("llvm-symbolizer")
    tmp = tempfile.mkdtemp()
    dropin = os.path.join(tmp, "llvm-symbolizer")
    os.symlink(os.path.abspath(os.path.join(build, "stacksym")), dropin)
    tools = [("stacksym drop-in", dropin), ("llvm-symbolizer 14", llvm)]
    print(f"{'library':16} {'tool':20} {'first answer ms':>16} {'requests/s':>12} "
          f"{'streamed req/s':>15}")
    for name, path in LIBS:
        if not os.path.exists(path):
            print(f"{name:16} (not installed)")
            continue
        addrs = function_addresses(path, n)
        for tool_name, tool in tools:
            times = ping_pong(tool, path, addrs)
            rate = (len(times) - 1) / sum(times[1:])
            stream_rate = streamed(tool, path, addrs)
            print(f"{name:16} {tool_name:20} {times[0] * 1e3:16.1f} {rate:12.0f} "
                  f"{stream_rate:15.0f}")
    for tool_name, tool in tools:
        print(f"start-up + one /bin/true request, median of 20: {tool_name}: "
              f"{startup(tool) * 1e3:.1f} ms")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
