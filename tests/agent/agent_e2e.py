#!/usr/bin/python3
"""`stacksym agent` end to end against loopback stores (receiver.py), what it sends decoded by
python3-protobuf (tests/export/check_otlp.py, check_push.py). Needs root (BPF); exits 77 (skip)
with a message where the agent cannot sample.

  agent_e2e.py CASE STACKSYM PY_PROTO_DIR EXPORT_SCRIPTS_DIR WORKLOAD

Cases:
  windows  OTLP and Pyroscope at once: every request follows the wire rules, windows tile time,
           the workload's samples x period equal its own CPU time within 10 %, its hot function
           is named, SIGTERM flushes the last window and exits 0.
  faults   the OTLP store answers 429 + Retry-After, 503, 400, resets the connection, stalls:
           every window but the refused one arrives, the 400 is dropped and counted.
  outage   the store is down for the first seconds: the agent samples on, and every window
           arrives once the store is up; a queue too small for the outage drops (and counts)
           its oldest windows instead.
  store    --symbolize none on a stripped workload: the agent sends build IDs and ELF virtual
           addresses only; the store fetches the debug file from `stacksym serve`'s debuginfod
           API with elfutils' debuginfod-find (byte-identical) and names every address with it
           as llvm-symbolizer names them on the unstripped binary.
  tls      https receivers with a certificate made here: with --ca-file every window arrives,
           with the URL's credentials as Basic authorization and the --otlp-header /
           --pyroscope-header headers; without the CA nothing is sent (verification fails, the
           attempts are counted as connection retries).
  signals  a doubled SIGTERM is one request (flush, exit 0); a second one a second later exits.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from receiver import Receiver  # noqa: E402

case, stacksym, proto_dir, scripts_dir, workload = sys.argv[1:6]
sys.path.insert(0, scripts_dir)
import check_otlp  # noqa: E402
import check_push  # noqa: E402

check_otlp.load_protos(proto_dir)
check_push.load_protos(proto_dir)

failures = []


def fail(text):
    failures.append(text)
    print("FAIL: " + text, file=sys.stderr)


def start_agent(args):
    """The agent, once it says it samples (or None after a skip)."""
    p = subprocess.Popen([stacksym, "agent", "--no-debuginfod"] + args,
                         stderr=subprocess.PIPE, text=True)
    # Ready once the metrics port listens (after the BPF load); the final metrics come on stderr.
    return p


def wait_ready(port, agent, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        if agent.poll() is not None:
            err = agent.stderr.read()
            if "refused" in err or "Operation not permitted" in err or "permission" in err.lower():
                print("SKIP: the kernel refused BPF/perf events: " + err, file=sys.stderr)
                sys.exit(77)
            fail("agent exited at start: " + err)
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    fail("agent never listened for metrics")
    return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def stop_agent(agent, timeout=40):
    agent.send_signal(signal.SIGTERM)
    try:
        _, err = agent.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        agent.kill()
        fail("agent did not exit after SIGTERM")
        return ""
    if agent.returncode != 0:
        fail("agent exited %d after SIGTERM: %s" % (agent.returncode, err[-2000:]))
    return err


def metric(text, name, labels=""):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and labels in line and not line.startswith("#"):
            rest = line[len(name):]
            if rest[:1] in ("{", " "):
                total += float(line.rsplit(" ", 1)[1])
    return total


def run_workload(seconds):
    """The workload for `seconds`; (pid, CPU seconds it used, by its own rusage)."""
    child = subprocess.Popen([workload, str(seconds)], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    return child.pid, usage.ru_utime + usage.ru_stime


def otlp_windows(requests):
    """{(time, duration)} of every CPU profile in the requests, and per pid: samples, period."""
    windows, per_pid, names = set(), {}, {}
    for r in requests:
        errors, summary = check_otlp.check_body(r.body)
        for e in errors[:10]:
            fail("OTLP: " + e)
        for resource in summary:
            pid = resource["attributes"].get("process.pid")
            for p in resource["profiles"]:
                if p["sample_type"] != "samples/count":
                    continue
                windows.add((p["time"], p["duration"]))
                count, period = per_pid.get(pid, (0, p["period"]))
                per_pid[pid] = (count + p["total"], p["period"])
                for s in p["samples"]:
                    for name in s["stack"]:
                        names[(pid, name)] = names.get((pid, name), 0) + s["value"]
    return windows, per_pid, names


def check_tiling(windows, what):
    ordered = sorted(windows)
    for (t0, d0), (t1, _) in zip(ordered, ordered[1:]):
        if t0 + d0 != t1:
            fail("%s: window [%d, +%d) is not followed by one at its end (next at %d)" %
                 (what, t0, d0, t1))
    return ordered


def case_windows():
    otlp = Receiver(max_seconds=120).start()
    push = Receiver(max_seconds=120).start()
    mport = free_port()
    agent = start_agent(["-F", "99", "--interval", "1", "--otlp", otlp.url, "--pyroscope",
                         push.url, "--metrics-listen", "127.0.0.1:%d" % mport])
    if not wait_ready(mport, agent):
        return
    pid, cpu = run_workload(3)
    time.sleep(1.5)
    stopped = time.time()
    err = stop_agent(agent)
    otlp.stop()
    push.stop()
    sent = otlp.accepted("otlp")
    if len(sent) < 4:
        fail("only %d OTLP requests" % len(sent))
    windows, per_pid, names = otlp_windows(sent)
    ordered = check_tiling(windows, "OTLP")
    if ordered and abs(ordered[-1][0] + ordered[-1][1] - stopped * 1e9) > 1.5e9:
        fail("the last window does not end where the agent stopped: SIGTERM did not flush it")
    count, period = per_pid.get(pid, (0, 0))
    sampled = count * period / 1e9
    print("workload pid %d: CPU %.3f s by rusage, %d samples x %d ns = %.3f s" %
          (pid, cpu, count, period, sampled))
    if cpu < 0.5 or abs(sampled - cpu) > 0.10 * cpu:
        fail("samples x period %.3f s differ from the workload's CPU time %.3f s by more "
             "than 10 %%" % (sampled, cpu))
    if names.get((pid, "cap_hot_leaf"), 0) < count / 10:
        fail("the workload's hot function cap_hot_leaf is not named in its samples")
    pushes = push.accepted("push")
    if not pushes:
        fail("no Pyroscope push arrived")
    for i, r in enumerate(pushes):
        errors = check_push.check_body(r.body, dump=None)
        if isinstance(errors, tuple):
            errors = errors[0]
        for e in list(errors)[:10]:
            fail("push %d: %s" % (i, e))


def case_faults():
    otlp = Receiver({"otlp": ["status:429:after=1", "status:503", "status:400", "reset",
                              "stall:4"]}, max_seconds=120).start()
    mport = free_port()
    agent = start_agent(["-F", "49", "--interval", "1", "--otlp", otlp.url, "--send-timeout", "1",
                         "--shutdown-timeout", "30", "--metrics-listen", "127.0.0.1:%d" % mport])
    if not wait_ready(mport, agent):
        return
    run_workload(4)
    time.sleep(1)
    err = stop_agent(agent)
    otlp.stop()
    got = otlp.all()
    refused = [r for r in got if r.status == 400]
    if len(refused) != 1:
        fail("the receiver refused %d requests with 400, expected 1" % len(refused))
    accepted, _, _ = otlp_windows(otlp.accepted("otlp"))
    refused_windows, _, _ = otlp_windows(refused)
    every = accepted | refused_windows
    check_tiling(every, "faults")
    if accepted & refused_windows:
        fail("the refused window was sent again")
    dropped = metric(err, "stacksym_agent_requests_dropped_total", 'reason="status_400"')
    if dropped != 1:
        fail("requests dropped for status 400: %g, expected 1" % dropped)
    for reason in ("status_429", "status_503", "connection"):
        if metric(err, "stacksym_agent_requests_retried_total", 'reason="%s"' % reason) < 1:
            fail("no retry counted for " + reason)
    exported = metric(err, "stacksym_agent_windows_exported_total")
    if len(every) < exported - 1:
        fail("%d windows reached the receiver, %g were exported" % (len(every), exported))


def case_outage():
    # The second run's bound holds one of the first run's largest requests and a little more:
    # the outage's six windows cannot fit whatever the host runs (a fixed 20K held all of them
    # on a quiet host).
    runs = [("64M", False), (None, True)]
    for at, (queue, expect_loss) in enumerate(runs):
        if queue is None:
            queue = str(small_bound)
        port = free_port()
        mport = free_port()
        agent = start_agent(["-F", "99", "--interval", "0.5", "--otlp",
                             "http://127.0.0.1:%d" % port, "--queue-bytes", queue,
                             "--shutdown-timeout", "20", "--metrics-listen",
                             "127.0.0.1:%d" % mport])
        if not wait_ready(mport, agent):
            return
        # Busy throughout, so that no window is empty (an empty window is not sent).
        busy = subprocess.Popen([workload, "9"], stdout=subprocess.DEVNULL)
        time.sleep(3)  # the store is down meanwhile
        otlp = Receiver(max_seconds=120, port=port).start()
        time.sleep(3)
        err = stop_agent(agent)
        busy.kill()
        busy.wait()
        otlp.stop()
        accepted = otlp.accepted("otlp")
        windows, _, _ = otlp_windows(accepted)
        if at == 0:
            # The queue counts a request's body, its path and 64 bytes.
            small_bound = (max([len(r.body) for r in accepted] or [10000]) + 200) * 5 // 4
        dropped = metric(err, "stacksym_agent_queue_dropped_total", 'reason="full"')
        exported = metric(err, "stacksym_agent_windows_exported_total")
        print("queue %s: %d windows arrived, %g exported, %g dropped (full)" %
              (queue, len(windows), exported, dropped))
        if not expect_loss:
            check_tiling(windows, "outage")
            if dropped != 0 or len(windows) != exported:
                fail("queue %s: windows lost across an outage it holds" % queue)
        else:
            if dropped < 1:
                fail("queue %s: nothing dropped though the outage does not fit" % queue)
            if metric(err, "stacksym_agent_queue_max_bytes") != small_bound:
                fail("the queue bound is not the one given")


def start_serve(debug_dir):
    """`stacksym serve` on a free loopback port (stops by itself); (process, URL)."""
    serve = subprocess.Popen([stacksym, "serve", "--listen", "127.0.0.1:0", "--debug-dir",
                              debug_dir, "--no-default-debug-dir", "--no-debuginfod",
                              "--no-cache", "--exit-after", "120"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)", serve.stdout.readline())
    if not m:
        serve.kill()
        fail("stacksym serve did not print its address")
        return serve, None
    return serve, "http://127.0.0.1:" + m.group(1)


def unsymbolized_vaddrs(requests, path, build_id):
    """The ELF vaddrs of `path`'s locations in the requests; fails where one carries Lines or
    its mapping another build ID."""
    vaddrs = set()
    for r in requests:
        request = check_otlp.decode_body(r.body)
        errors, _ = check_otlp.check_request(request)
        for e in errors[:10]:
            fail("OTLP: " + e)
        d = request.dictionary
        mappings = set()
        for i, m in enumerate(d.mapping_table):
            if not i or d.string_table[m.filename_strindex] != path:
                continue
            mappings.add(i)
            for a in m.attribute_indices:
                attr = d.attribute_table[a]
                if (d.string_table[attr.key_strindex] == "process.executable.build_id.gnu"
                        and attr.value.string_value != build_id):
                    fail("mapping build ID %s, readelf says %s" % (attr.value.string_value,
                                                                   build_id))
        for loc in d.location_table:
            if loc.mapping_index in mappings:
                if loc.lines:
                    fail("a location at %#x has Lines under --symbolize none" % loc.address)
                vaddrs.add(loc.address)
    return vaddrs


def skip_without(tool, why):
    """Exits 77 (ctest's skip) with a message when `tool` is not on PATH."""
    if shutil.which(tool) is None:
        print("SKIP: " + why, file=sys.stderr)
        sys.exit(77)


def case_store():
    skip_without("debuginfod-find", "debuginfod-find (Debian's debuginfod package) is not installed")
    tmp = tempfile.mkdtemp(prefix="stacksym-agent-store-")
    try:
        store_case(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def store_case(tmp):
    app, debug = os.path.join(tmp, "capture_app"), os.path.join(tmp, "capture_app.debug")
    subprocess.run(["objcopy", "--only-keep-debug", workload, debug], check=True)
    subprocess.run(["objcopy", "--strip-all", workload, app], check=True)
    build_id = check_otlp.gnu_build_id(app)
    tree = os.path.join(tmp, "debug", ".build-id", build_id[:2])
    os.makedirs(tree)
    shutil.copy(debug, os.path.join(tree, build_id[2:] + ".debug"))
    serve, serve_url = start_serve(os.path.join(tmp, "debug"))
    try:
        otlp = Receiver(max_seconds=120).start()
        mport = free_port()
        agent = start_agent(["-F", "99", "--interval", "1", "--symbolize", "none", "--otlp",
                             otlp.url, "--metrics-listen", "127.0.0.1:%d" % mport])
        if not wait_ready(mport, agent):
            return
        child = subprocess.Popen([app, "3"], stdout=subprocess.DEVNULL)
        child.wait()
        time.sleep(1.5)
        stop_agent(agent)
        otlp.stop()
        vaddrs = unsymbolized_vaddrs(otlp.accepted("otlp"), app, build_id)
        if len(vaddrs) < 3:
            fail("only %d addresses of the workload arrived" % len(vaddrs))
            return
        if serve_url is None:
            return
        # The store's side: the debug file by build ID, as Pyroscope or Parca would fetch it.
        env = dict(os.environ, DEBUGINFOD_URLS=serve_url,
                   DEBUGINFOD_CACHE_PATH=os.path.join(tmp, "client-cache"))
        found = subprocess.run(["debuginfod-find", "debuginfo", build_id], env=env,
                               capture_output=True, text=True)
        if found.returncode != 0:
            fail("debuginfod-find could not fetch %s from serve: %s" % (build_id, found.stderr))
            return
        fetched = found.stdout.strip()
        with open(fetched, "rb") as a, open(debug, "rb") as b:
            if a.read() != b.read():
                fail("the debug file serve sent differs from the one it was given")
        got = check_otlp.symbolizer_chains(fetched, vaddrs)
        want = check_otlp.symbolizer_chains(workload, vaddrs)
        differ = [v for v in sorted(vaddrs) if got[v] != want[v]]
        for v in differ[:10]:
            fail("%#x: the fetched debug file names %s, the unstripped binary %s" %
                 (v, got[v], want[v]))
        named = {chain[0][0] for chain in got.values() if chain}
        print("%d addresses of the stripped workload, named through serve: %s" %
              (len(vaddrs), ", ".join(sorted(named))))
        if "cap_hot_leaf" not in named:
            fail("the workload's hot function cap_hot_leaf is not among the names")
    finally:
        serve.kill()
        serve.wait()


def case_signals():
    """SIGTERM delivered twice at once (GNU timeout signals the child, then its process group)
    still flushes and exits 0 with the final metrics; a second signal a second later, while the
    agent waits on a store that is down, exits at once."""
    mport = free_port()
    out = tempfile.mkdtemp(prefix="stacksym-signals-")
    agent = start_agent(["-F", "99", "--interval", "1", "--output-dir", out,
                         "--metrics-listen", "127.0.0.1:%d" % mport])
    if not wait_ready(mport, agent):
        return
    agent.send_signal(signal.SIGTERM)
    agent.send_signal(signal.SIGTERM)
    try:
        _, err = agent.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        agent.kill()
        return fail("agent did not exit after a doubled SIGTERM")
    if agent.returncode != 0 or "process_cpu_seconds_total" not in err:
        fail("a doubled SIGTERM: exit %d, final metrics %s" %
             (agent.returncode, "present" if "process_cpu_seconds_total" in err else "missing"))
    shutil.rmtree(out, ignore_errors=True)

    mport = free_port()
    agent = start_agent(["-F", "99", "--interval", "0.5", "--otlp",
                         "http://127.0.0.1:%d" % free_port(), "--shutdown-timeout", "30",
                         "--metrics-listen", "127.0.0.1:%d" % mport])
    if not wait_ready(mport, agent):
        return
    busy = subprocess.Popen([workload, "3"], stdout=subprocess.DEVNULL)
    time.sleep(1.5)  # windows queue for a store that is down
    agent.send_signal(signal.SIGTERM)
    time.sleep(1.5)
    if agent.poll() is not None:
        fail("the agent exited before its shutdown timeout with the store down")
    start = time.time()
    agent.send_signal(signal.SIGTERM)
    try:
        agent.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        agent.kill()
        fail("a second SIGTERM a second later did not end the agent")
    busy.kill()
    busy.wait()
    if agent.returncode != 1:
        fail("a second SIGTERM: exit %d, not 1" % agent.returncode)
    print("doubled SIGTERM: flushed, exit 0; second SIGTERM 1.5 s later: exit %d after %.2f s" %
          (agent.returncode, time.time() - start))


def make_certificate(tmp):
    """A self-signed certificate for 127.0.0.1 (an IP subjectAltName, as clients check)."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def case_tls():
    skip_without("openssl", "needs the openssl command (Debian's openssl) to make a certificate")
    tmp = tempfile.mkdtemp(prefix="stacksym-agent-tls-")
    try:
        cert, key = make_certificate(tmp)
        tls_run(cert, key, trusted=True)
        tls_run(cert, key, trusted=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tls_run(cert, key, trusted):
    store = Receiver(max_seconds=60, tls=(cert, key)).start()
    mport = free_port()
    otlp_url = store.url.replace("https://", "https://collector:s3cr%40t@")
    args = ["-F", "49", "--interval", "1", "--otlp", otlp_url, "--otlp-header",
            "X-Scope-OrgID: tenant-7", "--pyroscope", store.url, "--pyroscope-header",
            "Authorization: Bearer tok.en", "--send-timeout", "2", "--shutdown-timeout", "3",
            "--metrics-listen", "127.0.0.1:%d" % mport]
    if trusted:
        args += ["--ca-file", cert]
    agent = start_agent(args)
    if not wait_ready(mport, agent):
        store.stop()
        return
    run_workload(2)
    time.sleep(1)
    err = stop_agent(agent)
    store.stop()
    otlp, push = store.accepted("otlp"), store.accepted("push")
    print("https, %s CA: %d OTLP requests and %d pushes arrived" %
          ("with the" if trusted else "without the", len(otlp), len(push)))
    if "s3cr" in err:
        fail("the URL's password appears in the agent's output (metrics labels, messages)")
    if not trusted:
        if store.all():
            fail("requests were sent to an https receiver whose certificate is not trusted")
        if metric(err, "stacksym_agent_requests_retried_total", 'reason="connection"') < 1:
            fail("the failed verification was not counted as a connection retry")
        return
    if not otlp or not push:
        fail("over https: %d OTLP requests, %d pushes" % (len(otlp), len(push)))
    for r in otlp:
        # base64 of "collector:s3cr@t" (the URL's %40 decoded)
        if r.headers.get("Authorization") != "Basic Y29sbGVjdG9yOnMzY3JAdA==":
            fail("OTLP Authorization: %r" % r.headers.get("Authorization"))
        if r.headers.get("X-Scope-OrgID") != "tenant-7":
            fail("OTLP X-Scope-OrgID: %r" % r.headers.get("X-Scope-OrgID"))
    for r in push:
        if r.headers.get("Authorization") != "Bearer tok.en":
            fail("push Authorization: %r" % r.headers.get("Authorization"))
        if "X-Scope-OrgID" in r.headers:
            fail("the OTLP receiver's header went to Pyroscope")


{"windows": case_windows, "faults": case_faults, "outage": case_outage,
 "store": case_store, "signals": case_signals, "tls": case_tls}[case]()
if failures:
    print("%d failures" % len(failures), file=sys.stderr)
    sys.exit(1)
print("PASS: " + case)
