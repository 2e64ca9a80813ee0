// libFuzzer target for the pprof reader: any bytes (gzip'ed or not) must decode to a Profile
// or an Error, never crash; a decoded profile must be consistent enough for every writer (and
// every sample type it has, and the state filter), and re-encoding it must decode again to the
// same folded stacks of every type.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "output/gzip.h"
#include "stacksym/output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  // The reader's own limit (1 GiB inflated) is above the fuzzer's RSS budget: skip inputs that
  // inflate to more than 64 MiB (the limit itself is tested in tests/output).
  if (stacksym::output::IsGzip(bytes) &&
      !stacksym::output::GzipDecompress(bytes, size_t{64} << 20)) {
    return 0;
  }
  stacksym::Result<stacksym::Profile> profile = stacksym::DecodePprof(bytes);
  if (!profile) {
    if (profile.error().message.empty()) __builtin_trap();
    return 0;
  }
  const stacksym::Profile& p = *profile;
  if (p.symbols.size() != p.frames.size() || p.counts.size() != p.stacks.size()) __builtin_trap();
  if (!p.off_cpu_ns.empty() && p.off_cpu_ns.size() != p.stacks.size()) __builtin_trap();
  for (const stacksym::ProfileStack& s : p.stacks) {
    for (uint32_t f : s.frames) {
      if (f >= p.frames.size()) __builtin_trap();
    }
  }
  for (const stacksym::ProfileFrame& f : p.frames) {
    if (f.kind != stacksym::FrameKind::kUserRaw && f.module >= p.modules.size()) __builtin_trap();
  }
  using stacksym::SampleType;
  const std::vector<SampleType> types =
      p.has_off_cpu() ? std::vector<SampleType>{SampleType::kSamples, SampleType::kCpu,
                                                SampleType::kOffCpu, SampleType::kWall}
                      : std::vector<SampleType>{SampleType::kSamples, SampleType::kCpu};
  std::vector<std::string> folded;
  for (SampleType type : types) {
    stacksym::FoldedOptions options;
    options.sample_type = type;
    folded.push_back(stacksym::FormatFolded(p, options));
  }
  (void)stacksym::TopFunctions(p);
  (void)stacksym::FormatReport(p);
  (void)stacksym::RenderFlameGraphSvg(p);
  (void)stacksym::RenderFlameGraphHtml(p);
  stacksym::ProfileFilter waiting;
  waiting.states = {stacksym::ThreadState::kSleeping, stacksym::ThreadState::kOther};
  (void)stacksym::FormatFolded(stacksym::FilterProfile(p, waiting));
  stacksym::Result<std::string> encoded = stacksym::EncodePprof(p, /*gzip=*/false);
  if (!encoded) return 0;  // e.g. a file offset too large for the module layout
  stacksym::Result<stacksym::Profile> again =
      stacksym::DecodePprof({reinterpret_cast<const uint8_t*>(encoded->data()), encoded->size()});
  if (!again || again->has_off_cpu() != p.has_off_cpu()) __builtin_trap();
  for (size_t i = 0; i < types.size(); ++i) {
    stacksym::FoldedOptions options;
    options.sample_type = types[i];
    if (stacksym::FormatFolded(*again, options) != folded[i]) __builtin_trap();
  }
  return 0;
}
