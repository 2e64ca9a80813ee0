// Small helpers for DWARF error messages: every error names its section and offset.
#pragma once

#include <cstdint>
#include <string>

#include "base/hex.h"  // HexU64, for the messages
#include "stacksym/result.h"

namespace stacksym::dwarf {

inline Error Malformed(const char* section, uint64_t offset, std::string message) {
  return MakeError(ErrorCode::kMalformed, std::move(message))
      .WithSection(section)
      .WithOffset(offset);
}

}  // namespace stacksym::dwarf
