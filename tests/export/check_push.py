#!/usr/bin/python3
"""Decodes a Pyroscope PushRequest (push.v1) and the gzipped pprof of each raw_profile with
python3-protobuf -- a second protobuf implementation, compiling the project's own .proto files --
and checks the rules docs/wire-formats.md documents (Pyroscope's default limits).

Importable (the agent's loopback receiver uses it):
    import check_push
    check_push.load_protos(PROTO_PY_DIR)   # pyroscope_push_pb2 and profile_pb2 (pprof)
    errors, summary = check_push.check_body(body)

CLI: check_push.py --proto-dir DIR [--dump-dir DIR] BODY_FILE...
Prints a JSON summary per body; exits 1 listing every broken rule. --dump-dir writes each
raw_profile, gunzipped, as DIR/<body>-<series>-<sample>.pb for `go tool pprof`.
"""

import argparse
import gzip
import json
import os
import re
import sys

push_pb = None
pprof_pb = None

MAX_LABELS = 30
MAX_LABEL_NAME = 1024
MAX_LABEL_VALUE = 2048
MAX_PROFILE_BYTES = 4 << 20
MAX_SAMPLES = 16000
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")  # legacy Prometheus names: no sanitizing
NAMES = {"process_cpu", "off_cpu"}


def load_protos(proto_dir):
    global push_pb, pprof_pb
    if proto_dir not in sys.path:
        sys.path.insert(0, proto_dir)
    import profile_pb2  # noqa: E402 (generated at build time)
    import pyroscope_push_pb2  # noqa: E402

    push_pb, pprof_pb = pyroscope_push_pb2, profile_pb2


def check_pprof(raw, where, labels, errors):
    """Summary of one raw_profile; its rule breaks appended to errors."""
    if raw[:2] != b"\x1f\x8b":
        errors.append(f"{where}: raw_profile is not gzipped")
        return None, raw
    data = gzip.decompress(raw)
    if len(data) > MAX_PROFILE_BYTES:
        errors.append(f"{where}: {len(data)} bytes of pprof, above {MAX_PROFILE_BYTES}")
    p = pprof_pb.Profile()
    p.ParseFromString(data)
    if len(p.sample) > MAX_SAMPLES:
        errors.append(f"{where}: {len(p.sample)} samples, above {MAX_SAMPLES}")
    strings = p.string_table
    sample_types = [f"{strings[t.type]}/{strings[t.unit]}" for t in p.sample_type]
    first = strings[p.mapping[0].filename] if p.mapping else None
    exe = labels.get("process_executable_path")
    files = {strings[m.filename] for m in p.mapping}
    if exe and exe in files and first != exe:
        errors.append(f"{where}: first mapping {first!r}, not the executable {exe!r}")
    if first is not None and not first.startswith("/") and any(f.startswith("/") for f in files):
        errors.append(f"{where}: first mapping is {first!r}, not one of the files {sorted(files)}")
    totals = [sum(s.value[i] for s in p.sample) for i in range(len(p.sample_type))]
    pids = {l.num for s in p.sample for l in s.label if strings[l.key] == "pid"}
    return {"sample_types": sample_types, "totals": totals, "samples": len(p.sample),
            "first_mapping": first, "pids": sorted(pids), "bytes": len(data),
            "time_nanos": p.time_nanos, "duration_nanos": p.duration_nanos}, data


def check_request(request, dump=None):
    """(errors, summary) of a decoded PushRequest; dump(series, sample, pprof_bytes) if given."""
    errors = []
    summary = []
    for i, series in enumerate(request.series):
        where = f"series {i}"
        names = [l.name for l in series.labels]
        labels = {l.name: l.value for l in series.labels}
        if len(names) > MAX_LABELS:
            errors.append(f"{where}: {len(names)} labels, above {MAX_LABELS}")
        if len(set(names)) != len(names):
            errors.append(f"{where}: a label name twice: {names}")
        for l in series.labels:
            if len(l.name) > MAX_LABEL_NAME or len(l.value.encode()) > MAX_LABEL_VALUE:
                errors.append(f"{where}: label {l.name} too long")
            if not LABEL_NAME.match(l.name):
                errors.append(f"{where}: label name {l.name!r} is not a valid name")
        if labels.get("__name__") not in NAMES:
            errors.append(f"{where}: __name__ {labels.get('__name__')!r}")
        if not labels.get("service_name"):
            errors.append(f"{where}: empty service_name")
        if labels.get("__delta__") != "false":
            errors.append(f"{where}: __delta__ {labels.get('__delta__')!r}")
        profiles = []
        for j, sample in enumerate(series.samples):
            info, data = check_pprof(sample.raw_profile, f"{where} sample {j}", labels, errors)
            if info is not None:
                want = "off_cpu/nanoseconds" if labels.get("__name__") == "off_cpu" else \
                    "cpu/nanoseconds"
                if want not in info["sample_types"]:
                    errors.append(f"{where} sample {j}: no {want} in {info['sample_types']}")
                if len(info["pids"]) > 1 or (info["pids"] and
                                             str(info["pids"][0]) != labels.get("process_pid")):
                    errors.append(f"{where} sample {j}: pids {info['pids']} in one series")
            if dump is not None:
                dump(i, j, data)
            profiles.append(info)
        summary.append({"labels": labels, "profiles": profiles})
    return errors, summary


def decode_body(body):
    request = push_pb.PushRequest()
    request.ParseFromString(body)
    return request


def check_body(body, dump=None):
    return check_request(decode_body(body), dump)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--dump-dir")
    ap.add_argument("bodies", nargs="+")
    args = ap.parse_args()
    load_protos(args.proto_dir)
    failed = False
    for path in args.bodies:
        base = os.path.basename(path)

        def dump(i, j, data):
            if args.dump_dir:
                with open(os.path.join(args.dump_dir, f"{base}-{i}-{j}.pb"), "wb") as f:
                    f.write(data)

        with open(path, "rb") as f:
            errors, summary = check_body(f.read(), dump)
        print(json.dumps({"body": path, "errors": errors, "series": summary}))
        failed |= bool(errors)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
