// libFuzzer target for the split-DWARF package index and the .debug_sup reader: arbitrary bytes
// as a .debug_cu_index (then lookups of ids taken from the input and of every listed id) and as
// a .debug_sup section. Must never crash, hang or allocate absurdly.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "dwarf/debug_file_finder.h"
#include "dwarf/dwp_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  stacksym::Result<stacksym::dwarf::DwpIndex> index = stacksym::dwarf::DwpIndex::Parse(bytes);
  if (index) {
    for (const auto& [id, unit] : index->Entries()) {
      std::optional<stacksym::dwarf::DwpUnitSections> found = index->Find(id);
      if (!found || found->info.offset != unit.info.offset) __builtin_trap();
    }
    for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
      uint64_t id;
      std::memcpy(&id, data + i, 8);
      (void)index->Find(id);
    }
  }
  (void)stacksym::dwarf::ParseDebugSup(bytes);
  return 0;
}
