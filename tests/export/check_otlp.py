#!/usr/bin/python3
"""Decodes an OTLP profiles request (ExportProfilesServiceRequest, opentelemetry-proto v1.11.0)
with python3-protobuf -- a second protobuf implementation, compiling the project's own .proto --
and checks the rules docs/wire-formats.md documents.

Importable (the agent's loopback receiver uses it):
    import check_otlp
    check_otlp.load_protos(PROTO_PY_DIR)       # where protoc --python_out put otlp_profiles_pb2
    errors, summary = check_otlp.check_body(gzipped_body)

CLI: check_otlp.py --proto-dir DIR [--elf PATH:OFFSET,OFFSET...]... BODY_FILE...
Prints a JSON summary per body; exits 1 listing every broken rule.
--elf: the file offsets of frames in ELF file PATH; their addresses must be the ELF virtual
addresses readelf -lW gives (PT_LOAD), their Lines what llvm-symbolizer answers, and the
mapping's build IDs the file's (readelf -n, and the htlhash computed here).
"""

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys

pb = None  # otlp_profiles_pb2, once load_protos ran

FRAME_TYPES = {"native", "kernel", "cpython"}


def load_protos(proto_dir):
    global pb
    if proto_dir not in sys.path:
        sys.path.insert(0, proto_dir)
    import otlp_profiles_pb2  # noqa: E402 (generated at build time)

    pb = otlp_profiles_pb2


def _any_value(v):
    kind = v.WhichOneof("value")
    return None if kind is None else getattr(v, kind)


class _Checker:
    def __init__(self, request):
        self.r = request
        self.d = request.dictionary
        self.errors = []

    def error(self, text):
        self.errors.append(text)

    def index(self, table, i, what):
        if i < 0 or i >= len(getattr(self.d, table)):
            self.error(f"{what}: index {i} outside {table} (size {len(getattr(self.d, table))})")
            return False
        return True

    def string(self, i, what):
        return self.d.string_table[i] if self.index("string_table", i, what) else ""

    def check_dictionary(self):
        d = self.d
        for table in ("mapping_table", "location_table", "function_table", "link_table",
                      "string_table", "attribute_table", "stack_table"):
            if len(getattr(d, table)) == 0:
                self.error(f"{table}: entry 0 missing")
        if not self.errors:
            zero = {"mapping_table": pb.Mapping(), "location_table": pb.Location(),
                    "function_table": pb.Function(), "attribute_table": pb.KeyValueAndUnit(),
                    "stack_table": pb.Stack()}
            for table, empty in zero.items():
                if getattr(d, table)[0] != empty:
                    self.error(f"{table}[0] is not the zero value")
            if d.string_table[0] != "":
                self.error("string_table[0] is not empty")
            link = d.link_table[0]
            if link.trace_id.strip(b"\0") or link.span_id.strip(b"\0"):
                self.error("link_table[0] is not zero")
        if self.errors:
            return
        for i, m in enumerate(d.mapping_table):
            self.string(m.filename_strindex, f"mapping {i} filename")
            self.attributes(m.attribute_indices, f"mapping {i}")
            if i and m.memory_limit < m.memory_start:
                self.error(f"mapping {i}: memory_limit below memory_start")
        for i, f in enumerate(d.function_table):
            for field in ("name_strindex", "system_name_strindex", "filename_strindex"):
                self.string(getattr(f, field), f"function {i} {field}")
        for i, loc in enumerate(d.location_table):
            self.index("mapping_table", loc.mapping_index, f"location {i} mapping")
            for line in loc.lines:
                self.index("function_table", line.function_index, f"location {i} line function")
            keys = self.attributes(loc.attribute_indices, f"location {i}")
            if i and keys.get("profile.frame.type") not in FRAME_TYPES:
                self.error(f"location {i}: profile.frame.type {keys.get('profile.frame.type')!r}")
        for i, s in enumerate(d.stack_table):
            for l in s.location_indices:
                self.index("location_table", l, f"stack {i}")
            if i and 0 in s.location_indices:
                self.error(f"stack {i}: location index 0 (unset) in a stack")
        for i, a in enumerate(d.attribute_table):
            if i:
                self.string(a.key_strindex, f"attribute {i} key")
                self.string(a.unit_strindex, f"attribute {i} unit")

    def attributes(self, indices, what):
        """The attributes at `indices` as {key: value}; keys must be unique."""
        out = {}
        for i in indices:
            if not self.index("attribute_table", i, what) or i == 0:
                if i == 0:
                    self.error(f"{what}: attribute index 0 (unset) in a list")
                continue
            a = self.d.attribute_table[i]
            key = self.string(a.key_strindex, f"{what} attribute key")
            if key in out:
                self.error(f"{what}: attribute {key} twice")
            out[key] = _any_value(a.value)
        return out

    def check_profile(self, p, where, summary):
        st = p.sample_type
        sample_type = (self.string(st.type_strindex, where), self.string(st.unit_strindex, where))
        if not sample_type[0] or not sample_type[1]:
            self.error(f"{where}: sample_type not set")
        start, end = p.time_unix_nano, p.time_unix_nano + p.duration_nano
        total = 0
        timestamps = 0
        samples = []
        for j, s in enumerate(p.samples):
            w = f"{where} sample {j}"
            self.index("stack_table", s.stack_index, w)
            self.index("link_table", s.link_index, w)
            attrs = self.attributes(s.attribute_indices, w)
            if "thread.name" not in attrs or "thread.id" not in attrs:
                self.error(f"{w}: thread.name/thread.id missing")
            if not s.values and not s.timestamps_unix_nano:
                self.error(f"{w}: neither values nor timestamps")
            if s.values and s.timestamps_unix_nano and len(s.values) != len(s.timestamps_unix_nano):
                self.error(f"{w}: {len(s.values)} values, {len(s.timestamps_unix_nano)} timestamps")
            for t in s.timestamps_unix_nano:
                if not start <= t < end:
                    self.error(f"{w}: timestamp {t} outside [{start}, {end})")
            value = sum(s.values) if s.values else len(s.timestamps_unix_nano)
            total += value
            timestamps += len(s.timestamps_unix_nano)
            samples.append({"stack": self.stack_frames(s.stack_index), "value": value,
                            "thread": attrs.get("thread.name"), "tid": attrs.get("thread.id"),
                            "timestamps": len(s.timestamps_unix_nano)})
        summary.append({"sample_type": "/".join(sample_type), "total": total,
                        "timestamps": timestamps, "period": p.period,
                        "time": p.time_unix_nano, "duration": p.duration_nano,
                        "samples": samples})

    def stack_frames(self, stack_index):
        """A stack as the innermost function name of each location ('?' when unnamed)."""
        if not 0 <= stack_index < len(self.d.stack_table):
            return []
        names = []
        for l in self.d.stack_table[stack_index].location_indices:
            loc = self.d.location_table[l] if 0 <= l < len(self.d.location_table) else None
            name = "?"
            if loc is not None and loc.lines:
                fi = loc.lines[0].function_index
                if 0 <= fi < len(self.d.function_table):
                    ni = self.d.function_table[fi].name_strindex
                    if 0 <= ni < len(self.d.string_table):
                        name = self.d.string_table[ni]
            names.append(name)
        return names

    def check(self):
        self.check_dictionary()
        if self.errors:
            return []
        out = []
        for i, rp in enumerate(self.r.resource_profiles):
            attrs = {kv.key: _any_value(kv.value) for kv in rp.resource.attributes}
            if not attrs.get("service.name"):
                self.error(f"resource {i}: service.name empty or missing")
            if not isinstance(attrs.get("process.pid"), int):
                self.error(f"resource {i}: process.pid missing")
            profiles = []
            for sp in rp.scope_profiles:
                for k, p in enumerate(sp.profiles):
                    self.check_profile(p, f"resource {i} profile {k}", profiles)
            types = [p["sample_type"] for p in profiles]
            if len(set(types)) != len(types):
                self.error(f"resource {i}: a sample type in two profiles: {types}")
            out.append({"attributes": attrs, "profiles": profiles})
        return out


def check_request(request):
    """(errors, summary) of a decoded ExportProfilesServiceRequest."""
    c = _Checker(request)
    summary = c.check()
    return c.errors, summary


def decode_body(body):
    """An HTTP body (gzipped or not) as an ExportProfilesServiceRequest."""
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    request = pb.ExportProfilesServiceRequest()
    request.ParseFromString(body)
    return request


def check_body(body):
    return check_request(decode_body(body))


# ---- against the ELF file: readelf, llvm-symbolizer, the htlhash ----

def pt_loads(path):
    """(offset, vaddr, filesz) of each PT_LOAD, from readelf -lW."""
    text = subprocess.run(["readelf", "-lW", path], check=True, capture_output=True,
                          text=True).stdout
    loads = []
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return loads


def offset_to_vaddr(loads, offset):
    for off, vaddr, filesz in loads:
        if off <= offset < off + filesz:
            return offset - off + vaddr
    return None


def gnu_build_id(path):
    text = subprocess.run(["readelf", "-n", path], check=True, capture_output=True,
                          text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", text)
    return m.group(1) if m else None


def htlhash(path):
    """The OTel eBPF profiler's FileID: SHA-256 of the first and last 4 KiB and the length."""
    with open(path, "rb") as f:
        data = f.read()
    h = hashlib.sha256()
    h.update(data[:4096])
    h.update(data[-4096:] if len(data) >= 4096 else data)
    h.update(len(data).to_bytes(8, "big"))
    return h.hexdigest()[:32]


def symbolizer_chains(path, vaddrs, symbolizer="llvm-symbolizer"):
    """llvm-symbolizer's inline chain at each vaddr: {vaddr: [(function, line)]}, innermost
    first (one run for all addresses; its answers are blocks ended by an empty line)."""
    vaddrs = sorted(set(vaddrs))
    if not vaddrs:
        return {}
    out = subprocess.run([symbolizer, "--obj=" + path, "--inlining"] + [hex(v) for v in vaddrs],
                         check=True, capture_output=True, text=True).stdout
    blocks = out.split("\n\n")
    chains = {}
    for vaddr, block in zip(vaddrs, blocks):
        lines = [l for l in block.splitlines() if l.strip()]
        chain = []
        for fn, loc in zip(lines[0::2], lines[1::2]):
            parts = loc.rsplit(":", 2)
            chain.append((fn, int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0))
        chains[vaddr] = chain
    return chains


def check_elf_frames(request, path, offsets, symbolizer="llvm-symbolizer"):
    """Errors: the locations of `path`'s mapping must sit at the ELF vaddrs of `offsets`, named
    as llvm-symbolizer names them; the mapping must carry the file's build IDs."""
    errors = []
    d = request.dictionary
    mappings = [i for i, m in enumerate(d.mapping_table)
                if i and d.string_table[m.filename_strindex] == path]
    if len(mappings) != 1:
        return [f"{path}: {len(mappings)} mappings"]
    mapping = d.mapping_table[mappings[0]]
    attrs = {}
    for i in mapping.attribute_indices:
        a = d.attribute_table[i]
        attrs[d.string_table[a.key_strindex]] = _any_value(a.value)
    if attrs.get("process.executable.build_id.gnu") != gnu_build_id(path):
        errors.append(f"{path}: build_id.gnu {attrs.get('process.executable.build_id.gnu')} "
                      f"is not readelf's {gnu_build_id(path)}")
    if attrs.get("process.executable.build_id.htlhash") != htlhash(path):
        errors.append(f"{path}: htlhash {attrs.get('process.executable.build_id.htlhash')} "
                      f"is not {htlhash(path)}")
    loads = pt_loads(path)
    located = {loc.address: loc for loc in d.location_table
               if loc.mapping_index == mappings[0]}
    chains = symbolizer_chains(path, [offset_to_vaddr(loads, o) or 0 for o in offsets],
                               symbolizer)
    for offset in offsets:
        vaddr = offset_to_vaddr(loads, offset)
        if vaddr not in located:
            errors.append(f"{path}: no location at vaddr {vaddr:#x} (file offset {offset:#x}); "
                          f"have {sorted(hex(a) for a in located)}")
            continue
        loc = located[vaddr]
        if not (mapping.memory_start <= vaddr < mapping.memory_limit):
            errors.append(f"{path}: {vaddr:#x} outside its mapping")
        want = chains[vaddr]
        got = []
        for line in loc.lines:
            fn = d.function_table[line.function_index]
            got.append((d.string_table[fn.name_strindex], line.line))
        if got != want:
            errors.append(f"{path} {vaddr:#x}: Lines {got}, llvm-symbolizer {want}")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--elf", action="append", default=[], metavar="PATH:OFF,OFF")
    ap.add_argument("--symbolizer", default="llvm-symbolizer")
    ap.add_argument("bodies", nargs="+")
    args = ap.parse_args()
    load_protos(args.proto_dir)
    failed = False
    for path in args.bodies:
        with open(path, "rb") as f:
            request = decode_body(f.read())
        errors, summary = check_request(request)
        for spec in args.elf:
            elf, _, offs = spec.rpartition(":")
            errors += check_elf_frames(request, elf, [int(o, 0) for o in offs.split(",") if o],
                                       args.symbolizer)
        print(json.dumps({"body": path, "errors": errors, "resources": summary}))
        failed |= bool(errors)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
