// libFuzzer target for the pprof reader: any bytes (gzip'ed or not) must decode to a Profile
// or an Error, never crash; a decoded profile must be consistent enough for every writer, and
// re-encoding it must decode again to the same folded stacks.
#include <cstddef>
#include <cstdint>
#include <span>

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
  for (const stacksym::ProfileStack& s : p.stacks) {
    for (uint32_t f : s.frames) {
      if (f >= p.frames.size()) __builtin_trap();
    }
  }
  for (const stacksym::ProfileFrame& f : p.frames) {
    if (f.kind != stacksym::FrameKind::kUserRaw && f.module >= p.modules.size()) __builtin_trap();
  }
  std::string folded = stacksym::FormatFolded(p);
  (void)stacksym::TopFunctions(p);
  (void)stacksym::RenderFlameGraphSvg(p);
  (void)stacksym::RenderFlameGraphHtml(p);
  stacksym::Result<std::string> encoded = stacksym::EncodePprof(p, /*gzip=*/false);
  if (!encoded) return 0;  // e.g. a file offset too large for the module layout
  stacksym::Result<stacksym::Profile> again =
      stacksym::DecodePprof({reinterpret_cast<const uint8_t*>(encoded->data()), encoded->size()});
  if (!again || stacksym::FormatFolded(*again) != folded) __builtin_trap();
  return 0;
}
