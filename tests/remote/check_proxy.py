#!/usr/bin/python3
"""Decodes a request serve's proxies sent on (or answered with) with python3-protobuf -- a
second protobuf implementation, compiling the project's own .proto files -- and compares the
names it added with llvm-symbolizer's on the unstripped ELF file.

CLI: check_proxy.py --proto-dir DIR --kind otlp|push --build-id HEX --elf PATH
                    [--preset FUNCTION] BODY_FILE
The locations of the mapping(s) with build ID HEX and no frame type other than native (OTLP),
or of the file mappings with that build ID (pprof), must have the Lines (function, line),
innermost first, that `llvm-symbolizer --inlining` gives at their ELF virtual address, and none
where it names nothing or the address lies in no PT_LOAD segment (where llvm-symbolizer still
names the last symbol, e.g. _end). Locations whose innermost function is FUNCTION had their
lines before the proxy saw them and are left out. Prints {"errors": [...], "named": N, "unnamed": N, "locations": N}; exits 1 on
errors. Reuses tests/export's decoders (check_otlp.py, check_push.py).
"""

import argparse
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))
import check_otlp  # noqa: E402
import check_push  # noqa: E402


def attrs_of(d, indices):
    out = {}
    for i in indices:
        a = d.attribute_table[i]
        out[d.string_table[a.key_strindex]] = check_otlp._any_value(a.value)
    return out


def otlp_locations(body, build_id):
    """[(vaddr, [(function, line)...])] of the build ID's native locations."""
    request = check_otlp.decode_body(body)
    d = request.dictionary
    out = []
    for i, loc in enumerate(d.location_table):
        if not i:
            continue
        mapping = d.mapping_table[loc.mapping_index]
        if attrs_of(d, mapping.attribute_indices).get("process.executable.build_id.gnu") != build_id:
            continue
        if attrs_of(d, loc.attribute_indices).get("profile.frame.type", "native") != "native":
            continue
        chain = [(d.string_table[d.function_table[l.function_index].name_strindex], l.line)
                 for l in loc.lines]
        out.append((loc.address, chain))
    return out


def push_locations(body, build_id, loads):
    """The same for every raw_profile of a PushRequest (pprof: address → file offset → vaddr)."""
    request = check_push.decode_body(body)
    out = []
    for series in request.series:
        for sample in series.samples:
            raw = sample.raw_profile
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            p = check_push.pprof_pb.Profile()
            p.ParseFromString(raw)
            s = p.string_table
            mappings = {m.id: m for m in p.mapping
                        if s[m.build_id] == build_id and not s[m.filename].startswith("[")}
            functions = {f.id: f for f in p.function}
            for loc in p.location:
                m = mappings.get(loc.mapping_id)
                if m is None:
                    continue
                offset = loc.address - m.memory_start + m.file_offset
                vaddr = check_otlp.offset_to_vaddr(loads, offset)
                chain = [(s[functions[l.function_id].name], l.line) for l in loc.line]
                out.append((vaddr if vaddr is not None else -offset - 1, chain))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--kind", choices=["otlp", "push"], required=True)
    ap.add_argument("--build-id", required=True)
    ap.add_argument("--elf", required=True)
    ap.add_argument("--symbolizer", default="llvm-symbolizer")
    ap.add_argument("--preset", default=None)
    ap.add_argument("body")
    args = ap.parse_args()
    check_otlp.load_protos(args.proto_dir)
    check_push.load_protos(args.proto_dir)
    with open(args.body, "rb") as f:
        body = f.read()
    if args.kind == "otlp":
        located = otlp_locations(body, args.build_id)
    else:
        located = push_locations(body, args.build_id, check_otlp.pt_loads(args.elf))
    located = [(v, chain) for v, chain in located
                 if not (args.preset and chain and chain[0][0] == args.preset)]
    loads = check_otlp.pt_loads(args.elf)
    in_segments = [v for v, _ in located
                   if v >= 0 and any(va <= v < va + size for _, va, size in loads)]
    chains = check_otlp.symbolizer_chains(args.elf, in_segments, args.symbolizer)
    errors = []
    named = 0
    for vaddr, got in located:
        want = chains.get(vaddr, [])
        if all(fn == "??" for fn, _ in want):
            want = []  # llvm-symbolizer names nothing there: the location stays unnamed
        if got != want:
            errors.append(f"{vaddr:#x}: Lines {got}, llvm-symbolizer {want}")
        named += bool(got)
    print(json.dumps({"errors": errors, "named": named, "unnamed": len(located) - named,
                      "locations": len(located)}))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
