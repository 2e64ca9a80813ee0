// Stand-in for bpf_source.cc when the build found no clang/bpftool/libbpf: the recorder then
// uses the perf_event_open backend.
#include "capture/sample_source.h"

namespace stacksym::capture {

bool BpfBackendCompiled() { return false; }

Result<std::unique_ptr<SampleSource>> OpenBpfSource(const SourceConfig&, bool,
                                                    std::vector<std::string>*) {
  return MakeError(ErrorCode::kUnsupported,
                   "this stacksym was built without the BPF backend (clang, bpftool or "
                   "libbpf-dev were missing at build time)");
}

}  // namespace stacksym::capture
