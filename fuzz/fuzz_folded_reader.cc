// libFuzzer target for the folded-stacks reader: any text parses to a Profile or an Error
// naming a line, never crashes; once parsed, write → read → write is stable, and the total
// sample count survives the trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stacksym/output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stacksym::Result<stacksym::Profile> profile = stacksym::ParseFolded(text);
  if (!profile) {
    if (profile.error().message.find("line ") == std::string::npos) __builtin_trap();
    return 0;
  }
  std::string first = stacksym::FormatFolded(*profile);
  stacksym::Result<stacksym::Profile> again = stacksym::ParseFolded(first);
  if (!again) __builtin_trap();
  if (stacksym::FormatFolded(*again) != first) __builtin_trap();
  if (again->total_samples() != profile->total_samples()) __builtin_trap();
  (void)stacksym::TopFunctions(*profile);
  (void)stacksym::RenderFlameGraphSvg(*profile);
  (void)stacksym::EncodePprof(*profile);
  return 0;
}
