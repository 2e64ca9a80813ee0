#!/usr/bin/env python3
"""Off-CPU recording, side by side in one run: throughput of two FP-less workloads (gcc -O2,
Debian's libraries) bare and under each recorder, the recorder's own CPU time, and the share of
the recorded off-CPU time whose user stack is complete (reaches _start, or clone3/clone for a
thread: the stack says which code waited, under all of its callers).

  bench/off_cpu_overhead.py [BUILD_DIR] [REPS] [--pin CPU]

--pin CPU runs the workloads on that one CPU (taskset): both ping-pong threads then share it,
every switch is theirs, and runs repeat within a few percent (the issue's setting). The
recorders take turns within each round of REPS, so that drift of the machine reaches all alike;
the table gives each recorder's best run and its median.

Workloads (bench/workloads): pingpong (two threads bounce a byte through pipes, about 10^5
switches a second: the worst case of a recorder's per-switch cost) and blocking (4 threads:
work in nested calls, a contended mutex, a 50 us nanosleep). Each waits DELAY s, runs SECONDS s
and prints its throughput, then stays LINGER s (offcputime names the user stacks from the live
process when it ends). Recorders, each attached by pid for the whole life of the process:
  stacksym record --off-cpu -p PID (this build; sched_switch as tp_btf, and again as the raw
    tracepoint of its fallback, --off-cpu-raw-tp)
  offcputime -p PID (Debian's libbpf-tools: bpf_get_stackid, frame pointers, 1024 stacks)
  perf record -e sched:sched_switch --call-graph dwarf -p PID (8 KiB of stack per switch-out,
    unwound later by perf script; perf records only the switch-outs of the process, not when
    it runs again, so its share is of switch-outs, not of time)
The best of REPS runs is kept (the machine does other work); the shares and losses come from
that run: stacksym's dropped intervals (its summary), perf's LOST events; offcputime counts
none (a stack lost to its stack map shows as [Missed User Stack], incomplete here). The BPF
recorders' work runs in the switching tasks, so it shows as lost throughput rather than as the
recorder's CPU; "BPF per switch" is its mean run time (kernel.bpf_stats_enabled, set for the
run and restored; read with bpftool just before the measured part ends; the program runs at
every switch on the machine, of targets or not). Needs root. Prints a Markdown table; details on stderr.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SECONDS, DELAY, LINGER = 3.0, 1.0, 1.5
SWITCH_PROGRAMS = {"on_switch_btf", "on_switch_raw", "sched_switch"}  # stacksym's two, offcputime's
RECORD_S = DELAY + SECONDS + LINGER - 0.5  # ends in the linger, after the measured part
ROOTS = {"_start", "clone3", "clone", "__clone", "__clone3"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build_workloads(tmp):
    here = os.path.dirname(os.path.abspath(__file__))
    for w in ("pingpong", "blocking"):
        subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-pthread",
                        os.path.join(here, "workloads", w + ".c"), "-o", os.path.join(tmp, w)],
                       check=True)


def cpu_of(time_file):
    """user + system seconds from GNU time's '%U %S'."""
    try:
        with open(time_file) as f:
            u, s = f.read().split()[-2:]
        return float(u) + float(s)
    except (OSError, ValueError):
        return float("nan")


def bpf_programs():
    """{id: program} of the loaded BPF programs (bpftool), with run_time_ns and run_cnt while
    kernel.bpf_stats_enabled is 1."""
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                             check=True).stdout
        return {p["id"]: p for p in json.loads(out)}
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}


def switch_cost(before, into):
    """The mean run time of the sched_switch programs loaded since `before`, as they are."""
    runs = ns = 0
    for pid, p in bpf_programs().items():
        if pid not in before and p.get("name") in SWITCH_PROGRAMS:
            runs += p.get("run_cnt", 0)
            ns += p.get("run_time_ns", 0)
    into.append((ns, runs))


PIN = []  # ["taskset", "-c", CPU] with --pin


def run_once(workload, recorder, tmp):
    """Runs the workload, attaches the recorder (a function of pid giving argv, or None) and
    returns (ops_per_s, recorder CPU s, (BPF ns, runs) of its sched_switch program by the end
    of the measured part)."""
    before = bpf_programs() if recorder is not None else {}
    argv = PIN + [workload, str(SECONDS), str(DELAY), str(LINGER)]
    w = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    cost = []
    timer = None
    if recorder is not None:
        timer = threading.Timer(DELAY + SECONDS - 0.1, switch_cost, (before, cost))
        timer.start()
    rec = None
    out = os.path.join(tmp, "rec.out")
    tfile = os.path.join(tmp, "rec.time")
    if recorder is not None:
        cmd = ["/usr/bin/time", "-f", "%U %S", "-o", tfile] + recorder(w.pid, tmp)
        with open(out, "w") as o, open(os.path.join(tmp, "rec.err"), "w") as e:
            rec = subprocess.Popen(cmd, stdout=o, stderr=e)
    text, _ = w.communicate()
    cpu = float("nan")
    if rec is not None:
        rec.wait()
        timer.join()
        cpu = cpu_of(tfile)
    m = re.search(r"ops_per_s (\d+)", text)
    return (float(m.group(1)) if m else float("nan")), cpu, (cost[0] if cost else (0, 0))


def stacksym_share(stacksym, tmp):
    folded = subprocess.run([stacksym, "convert", os.path.join(tmp, "rec.pb.gz"), "--to", "folded",
                             "--sample-type", "off_cpu"], capture_output=True, text=True,
                            check=True).stdout
    total = complete = 0
    for line in folded.splitlines():
        path, _, value = line.rpartition(" ")
        frames = path.split(";")
        v = int(value)
        if v == 0:
            continue
        total += v
        if len(frames) > 1 and frames[1] in ROOTS:
            complete += v
    err = open(os.path.join(tmp, "rec.err")).read()
    m = re.search(r"(\d+) dropped \(ring buffer full", err)
    lost = m.group(1) + " intervals" if m else "?"
    return complete / 1e9, total / 1e9, "s off CPU", lost


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def agent_share(stacksym, tmp):
    """stacksym_share over every window the agent wrote."""
    complete = total = 0.0
    windows = sorted(os.listdir(os.path.join(tmp, "agent")))
    for name in windows:
        shutil.copy(os.path.join(tmp, "agent", name), os.path.join(tmp, "rec.pb.gz"))
        c, t, _, _ = stacksym_share(stacksym, tmp)
        complete += c
        total += t
    err = open(os.path.join(tmp, "rec.err")).read()
    m = re.search(r"stacksym_agent_off_cpu_intervals_dropped_total (\d+)", err)
    lost = (m.group(1) + " intervals" if m else "?") + f" ({len(windows)} windows)"
    return complete, total, "s off CPU", lost


def offcputime_share(tmp):
    """offcputime prints each stack leaf first: kernel frames, user frames (or
    '[Missed User Stack]'), '-  COMM (PID)', then the microseconds."""
    total = complete = 0
    frames = []
    with open(os.path.join(tmp, "rec.out")) as f:
        lines = [l.rstrip("\n") for l in f]
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if s.startswith("-") and i + 1 < len(lines) and lines[i + 1].strip().isdigit():
            v = int(lines[i + 1].strip())
            total += v
            if frames and frames[-1] in ROOTS:
                complete += v
            frames = []
            i += 2
            continue
        if s:
            frames.append(s.split("+")[0])
        i += 1
    # Stacks lost to the stack map show as [Missed User Stack] (incomplete); nothing counts them.
    return complete / 1e6, total / 1e6, "s off CPU", "not counted"


def perf_share(tmp):
    """Switch-outs whose unwound user stack reaches a root (perf script: frames leaf first)."""
    data = os.path.join(tmp, "perf.data")
    t0 = time.time()
    p = subprocess.run(["perf", "script", "-i", data, "-F", "tid,event,ip,sym"],
                       capture_output=True, text=True)
    log(f"  perf script: {time.time() - t0:.1f} s")
    total = complete = 0
    last = None
    for line in p.stdout.splitlines() + [""]:
        if not line.strip():
            if last is not None:
                total += 1
                if last in ROOTS:
                    complete += 1
            last = None
            continue
        if line.startswith("\t"):
            parts = line.split()
            if len(parts) >= 2:
                last = parts[1].split("+")[0]
        else:
            last = ""
    stats = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True,
                           text=True).stdout
    m = re.search(r"LOST events:\s*(\d+)", stats)
    lost = (m.group(1) if m else "0") + " lost events"
    return complete, total, "switch-outs", lost


def main():
    args = sys.argv[1:]
    if "--pin" in args:
        at = args.index("--pin")
        PIN.extend(["taskset", "-c", args[at + 1]])
        del args[at:at + 2]
    build = args[0] if len(args) > 0 else "build"
    reps = int(args[1]) if len(args) > 1 else 3
    stacksym = os.path.abspath(os.path.join(build, "stacksym"))
    if not os.access(stacksym, os.X_OK):
        sys.exit(f"build stacksym first: {stacksym} missing")
    tmp = tempfile.mkdtemp(prefix="stacksym-offcpu.")
    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(stats_path) as f:
        stats_were = f.read().strip()
    # run_time_ns and run_cnt of each program (a clock read per run). Turned on here only when
    # off, and off again after: it also reads 1 while another process holds BPF_ENABLE_STATS,
    # and writing that 1 back would leave it on after that process ends.
    if stats_were == "0":
        with open(stats_path, "w") as f:
            f.write("1")
    try:
        build_workloads(tmp)
        recorders = [("bare", None, None)]
        recorders.append(("stacksym record --off-cpu",
                          lambda pid, t: [stacksym, "record", "--off-cpu", "-p", str(pid),
                                          "-d", str(RECORD_S), "-o", os.path.join(t, "rec.pb.gz")],
                          lambda t: stacksym_share(stacksym, t)))
        # The same with sched_switch as a raw tracepoint (the fallback where the kernel's BTF
        # does not describe it; the default attaches it as tp_btf).
        recorders.append(("stacksym record --off-cpu (raw_tp)",
                          lambda pid, t: [stacksym, "record", "--off-cpu", "--off-cpu-raw-tp",
                                          "-p", str(pid), "-d", str(RECORD_S),
                                          "-o", os.path.join(t, "rec.pb.gz")],
                          lambda t: stacksym_share(stacksym, t)))
        # The agent: the same program for its whole life, windows of 1 s written as pprof files
        # (GNU timeout's SIGTERM flushes the last one).
        recorders.append(("stacksym agent --off-cpu",
                          lambda pid, t: ["timeout", str(RECORD_S), stacksym, "agent",
                                          "--off-cpu", "-p", str(pid), "--interval", "1",
                                          "--no-debuginfod", "--output-dir",
                                          fresh_dir(os.path.join(t, "agent"))],
                          lambda t: agent_share(stacksym, t)))
        if shutil.which("offcputime"):
            recorders.append(("offcputime (libbpf-tools)",
                              lambda pid, t: ["offcputime", "-p", str(pid), str(int(RECORD_S))],
                              offcputime_share))
        else:
            log("offcputime not installed (Debian libbpf-tools; scripts/setup.sh): left out")
        if shutil.which("perf"):
            recorders.append(("perf record -e sched:sched_switch --call-graph dwarf",
                              lambda pid, t: ["perf", "record", "-q", "-e", "sched:sched_switch",
                                              "--call-graph", "dwarf", "-p", str(pid), "-o",
                                              os.path.join(t, "perf.data"), "--", "sleep",
                                              str(RECORD_S)],
                              perf_share))
        pinned = f", pinned to CPU {PIN[2]}" if PIN else ""
        print(f"Workloads: {SECONDS:g} s each, best of {reps} (recorders taking turns){pinned}, "
              f"on {os.cpu_count()} CPUs ({os.uname().release}).\n")
        print("| workload | recorder | throughput (ops/s) | median | loss | recorder CPU (s) | "
              "BPF per switch (µs) | off-CPU with complete user stack | lost |")
        print("|---|---|---|---|---|---|---|---|---|")
        for workload in ("pingpong", "blocking"):
            best = {name: None for name, _, _ in recorders}
            results = {name: None for name, _, _ in recorders}
            runs = {name: [] for name, _, _ in recorders}
            for _ in range(reps):
                for name, recorder, share in recorders:
                    ops, cpu, (bpf_ns, bpf_runs) = run_once(os.path.join(tmp, workload),
                                                            recorder, tmp)
                    per_switch = bpf_ns / bpf_runs / 1000 if bpf_runs else float("nan")
                    log(f"{workload} / {name}: {ops:.0f} ops/s, recorder CPU {cpu:.2f} s, "
                        f"BPF {per_switch:.2f} us per switch ({bpf_runs} runs)")
                    runs[name].append(ops)
                    if best[name] is None or ops > best[name][0]:
                        best[name] = (ops, cpu, per_switch)
                        if share is not None:
                            results[name] = share(tmp)
            base = None
            for name, recorder, share in recorders:
                ops, cpu, per_switch = best[name]
                result = results[name]
                median = sorted(runs[name])[len(runs[name]) // 2]
                bpf_text = f"{per_switch:.2f}" if per_switch == per_switch else "-"
                if base is None:
                    base = ops
                loss = "-" if recorder is None else f"{(ops / base - 1) * 100:+.1f}%"
                cpu_text = "-" if recorder is None else f"{cpu:.2f}"
                share_text = lost = "-"
                if share is not None:
                    c, t, unit, lost = result
                    share_text = (f"{c / t * 100:.1f}% (of {t:.4g} {unit})" if t else
                                  "nothing recorded")
                print(f"| {workload} | {name} | {ops:.0f} | {median:.0f} | {loss} | {cpu_text} "
                      f"| {bpf_text} | {share_text} | {lost} |", flush=True)
    finally:
        if stats_were == "0":
            with open(stats_path, "w") as f:
                f.write("0")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
