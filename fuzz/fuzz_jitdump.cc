// libFuzzer target for the jitdump reader: any bytes must be read or refused without crashing,
// every load kept must lie inside the input (its name too), and the table built from the loads
// must answer only addresses a load covers.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  stacksym::Result<stacksym::symbolize::JitDump> dump = stacksym::symbolize::ReadJitDump(bytes);
  if (!dump) return 0;
  const char* begin = reinterpret_cast<const char*>(data);
  for (const stacksym::symbolize::JitCodeLoad& load : dump->loads) {
    if (load.name.empty() || load.code_size == 0 || load.name.data() < begin ||
        load.name.data() + load.name.size() > begin + size) {
      __builtin_trap();
    }
  }
  stacksym::symbolize::PerfMap map = stacksym::symbolize::PerfMap::Parse({}, dump->loads);
  for (const stacksym::symbolize::JitCodeLoad& load : dump->loads) {
    for (uint64_t probe : {load.code_addr, load.code_addr + load.code_size - 1}) {
      std::optional<stacksym::symbolize::PerfMapSymbol> s = map.Find(probe);
      if (!s || probe < s->start || probe - s->start >= s->size) __builtin_trap();
    }
  }
  return 0;
}
