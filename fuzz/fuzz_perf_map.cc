// libFuzzer target for the perf map parser: any bytes must parse without crashing or
// quadratic blow-up, and every answer must cover the address asked about.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "symbolize/perf_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stacksym::symbolize::PerfMap map = stacksym::symbolize::PerfMap::Parse(text);
  auto check = [&](uint64_t probe) {
    std::optional<stacksym::symbolize::PerfMapSymbol> s = map.Find(probe);
    if (s && (probe < s->start || probe - s->start >= s->size || s->name.empty())) {
      __builtin_trap();
    }
  };
  for (size_t off = 0; off + 8 <= size && off < 512; off += 4) {
    uint64_t probe;
    std::memcpy(&probe, data + off, 8);
    check(probe);
  }
  // Probe at the hex numbers the input itself contains (line starts).
  std::string_view rest = text;
  for (int lines = 0; !rest.empty() && lines < 64; ++lines) {
    uint64_t v = 0;
    size_t i = 0;
    while (i < rest.size() && i < 16) {
      char c = rest[i];
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) break;
      v = (v << 4) | static_cast<uint64_t>(d);
      ++i;
    }
    check(v);
    check(v + 1);
    check(v - 1);
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return 0;
}
