#!/bin/sh
# Seeds for fuzz_pyroscope_push: PushRequests whose raw_profile is a pprof (gzipped, and
# plain) with a build-ID mapping at a process address, a kernel mapping and a named location,
# written with the Python modules of the build's .proto files (tests/export/py) when they and
# python3-protobuf are there. $1 is the build directory.
out="$1/fuzz/seeds-pyroscope-push"
mkdir -p "$out" || exit 0
/usr/bin/python3 - "$1/tests/export/py" "$out" <<'PY' 2>/dev/null || exit 0
import gzip
import sys
sys.path.insert(0, sys.argv[1])
import profile_pb2
import pyroscope_push_pb2 as push
p = profile_pb2.Profile()
p.string_table.extend(["", "cpu", "nanoseconds", "/usr/bin/app", "5d0a1f2e3c4b5a69788796a5b4c3d2e1f0011223",
                       "[kernel.kallsyms]", "f"])
st = p.sample_type.add()
st.type, st.unit = 1, 2
m = p.mapping.add()
m.id, m.memory_start, m.memory_limit, m.file_offset, m.filename, m.build_id = \
    1, 0x555555554000, 0x555555560000, 0, 3, 4
k = p.mapping.add()
k.id, k.filename = 2, 5
fn = p.function.add()
fn.id, fn.name = 1, 6
for i, (mapping, address) in enumerate(((1, 0x555555555130), (1, 0x555555555150),
                                         (2, 0xffffffff81000000), (1, 0x555555555160))):
    loc = p.location.add()
    loc.id, loc.mapping_id, loc.address = i + 1, mapping, address
p.location[3].line.add().function_id = 1
s = p.sample.add()
s.location_id.extend([1, 2, 3, 4])
s.value.append(10000000)
for name, raw in (("gzipped", gzip.compress(p.SerializeToString())), ("plain", p.SerializeToString())):
    r = push.PushRequest()
    series = r.series.add()
    label = series.labels.add()
    label.name, label.value = "__name__", "process_cpu"
    series.samples.add().raw_profile = raw
    open(sys.argv[2] + "/" + name, "wb").write(r.SerializeToString())
    print(sys.argv[2] + "/" + name)
PY
exit 0
