// libFuzzer target for the kallsyms parsers: any bytes must parse without crashing, and the
// table must keep its invariants (sorted; Find answers only covering symbols). The off-CPU
// recorder's SwitchFrames reads the same text: a stack it trims stays a suffix of itself.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "capture/switch_frames.h"
#include "stacksym/kernel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stacksym::KallsymsTable table = stacksym::KallsymsTable::Parse(text);
  for (size_t i = 1; i < table.size(); ++i) {
    if (table.at(i - 1).address > table.at(i).address) __builtin_trap();
  }
  // Probe at the table's own symbols, around them, and at addresses taken from the input.
  for (size_t i = 0; i < table.size() && i < 64; ++i) {
    stacksym::KernelSymbol s = table.at(i);
    for (uint64_t probe : {s.address, s.address + 1, s.address - 1}) {
      std::optional<stacksym::KernelSymbol> found = table.Find(probe);
      if (found &&
          (found->address > probe || (found->size != 0 && probe - found->address >= found->size))) {
        __builtin_trap();
      }
    }
    (void)stacksym::ParseBpfProgramSymbol(s.name);
    if (i < 4) (void)table.FindByName(s.name);
  }
  for (size_t off = 0; off + 8 <= size && off < 256; off += 8) {
    uint64_t probe;
    std::memcpy(&probe, data + off, 8);
    (void)table.Find(probe);
  }
  stacksym::capture::SwitchFrames frames = stacksym::capture::SwitchFrames::FromText(text);
  if (size >= 32) {
    uint64_t ips[4];
    std::memcpy(ips, data, sizeof(ips));
    std::span<const uint64_t> cut = frames.Trim(ips);
    if (cut.size() > 4 || (!cut.empty() && cut.data() + cut.size() != ips + 4)) __builtin_trap();
  }
  auto symbolizer = stacksym::KernelSymbolizer::FromTable(std::move(table), {});
  if (symbolizer && size >= 8) {
    uint64_t probe;
    std::memcpy(&probe, data, 8);
    (void)(*symbolizer)->Symbolize(probe);
  }
  return 0;
}
