#!/bin/sh
# Seeds for fuzz_otlp_proxy: ExportProfilesServiceRequests laid out as the OpenTelemetry eBPF
# profiler lays them out (a mapping with process.executable.build_id.gnu, native locations
# without lines, a kernel and an interpreter frame, one with lines), written with the Python
# modules of the build's .proto files (tests/export/py, target export_test_protos) when they
# and python3-protobuf are there. $1 is the build directory.
out="$1/fuzz/seeds-otlp-proxy"
mkdir -p "$out" || exit 0
/usr/bin/python3 - "$1/tests/export/py" "$out" <<'PY' 2>/dev/null || exit 0
import sys
sys.path.insert(0, sys.argv[1])
import otlp_profiles_pb2 as pb
r = pb.ExportProfilesServiceRequest()
d = r.dictionary
d.string_table.extend(["", "process.executable.build_id.gnu", "5d0a1f2e3c4b5a69788796a5b4c3d2e1f0011223",
                       "profile.frame.type", "native", "kernel", "cpython", "/usr/bin/app", "f"])
for t in (d.mapping_table, d.location_table, d.function_table, d.link_table, d.attribute_table,
          d.stack_table):
    t.add()
for key, value in ((1, 2), (3, 4), (3, 5), (3, 6)):
    a = d.attribute_table.add()
    a.key_strindex = key
    a.value.string_value = d.string_table[value]
m = d.mapping_table.add()
m.filename_strindex, m.memory_start, m.memory_limit = 7, 0x1000, 0x9000
m.attribute_indices.append(1)
f = d.function_table.add()
f.name_strindex = 8
for address, attr in ((0x1130, 2), (0x1150, 2), (0x1150, 3), (0x1160, 4), (0x1170, 2)):
    loc = d.location_table.add()
    loc.mapping_index, loc.address = 1, address
    loc.attribute_indices.append(attr)
d.location_table[5].lines.add().function_index = 1
s = d.stack_table.add()
s.location_indices.extend([1, 2, 3, 4, 5])
p = r.resource_profiles.add().scope_profiles.add().profiles.add()
sample = p.samples.add()
sample.stack_index = 1
sample.values.append(3)
open(sys.argv[2] + "/ebpf_layout", "wb").write(r.SerializeToString())
print(sys.argv[2] + "/ebpf_layout")
PY
exit 0
