// Small helpers for DWARF error messages: every error names its section and offset.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "stacksym/result.h"

namespace stacksym::dwarf {

inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline Error Malformed(const char* section, uint64_t offset, std::string message) {
  return MakeError(ErrorCode::kMalformed, std::move(message))
      .WithSection(section)
      .WithOffset(offset);
}

}  // namespace stacksym::dwarf
