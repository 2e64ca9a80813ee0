// .debug_aranges: address ranges → the .debug_info offset of the unit that covers them.
// Only an accelerator: the caller checks which units it names and finds the others' ranges
// from the units themselves.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::dwarf {

struct ArangeEntry {
  uint64_t low = 0;
  uint64_t high = 0;
  uint64_t unit_offset = 0;
};

// Appends every non-empty range to `out`. On a corrupt set, the sets before it are kept and
// an error is returned. `warnings` (when given) gets what is odd but read on, in LLVM's words
// ("address range table at offset 0x0 has a premature terminator entry at offset 0x10": the
// entries after such a terminator are read too).
Result<void> ParseAranges(std::span<const uint8_t> section, std::vector<ArangeEntry>* out,
                          std::vector<std::string>* warnings = nullptr);

}  // namespace stacksym::dwarf
