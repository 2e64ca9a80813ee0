// Small helpers for the line-oriented /proc and /tmp text formats (kallsyms, perf maps,
// /proc/PID/status): bounds-safe string_view scanning, no iostreams, no regex, no allocation.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/hex.h"

namespace stacksym::symbolize {

// Splits off the next line (without its '\n') from *rest. False when *rest is empty.
inline bool NextLine(std::string_view* rest, std::string_view* line) {
  if (rest->empty()) return false;
  const void* nl = std::memchr(rest->data(), '\n', rest->size());
  size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - rest->data()) : rest->size();
  *line = rest->substr(0, len);
  rest->remove_prefix(nl ? len + 1 : len);
  return true;
}

// Parses a hex number (optional 0x/0X prefix) at the start of *s and removes it. Fails on no
// digits or more than 64 bits.
inline bool ConsumeHex(std::string_view* s, uint64_t* out) {
  size_t i = 0;
  if (s->size() >= 2 && (*s)[0] == '0' && ((*s)[1] == 'x' || (*s)[1] == 'X') && s->size() > 2 &&
      HexDigit((*s)[2]) >= 0) {
    i = 2;
  }
  size_t start = i;
  uint64_t v = 0;
  for (; i < s->size(); ++i) {
    int d = HexDigit((*s)[i]);
    if (d < 0) break;
    if (v >> 60) return false;  // would overflow
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  if (i == start) return false;
  *out = v;
  s->remove_prefix(i);
  return true;
}

inline bool ConsumeDecimal(std::string_view* s, uint64_t* out) {
  size_t i = 0;
  uint64_t v = 0;
  for (; i < s->size() && (*s)[i] >= '0' && (*s)[i] <= '9'; ++i) {
    uint64_t d = static_cast<uint64_t>((*s)[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (i == 0) return false;
  *out = v;
  s->remove_prefix(i);
  return true;
}

// Removes leading spaces and tabs; returns how many.
inline size_t SkipBlanks(std::string_view* s) {
  size_t i = 0;
  while (i < s->size() && ((*s)[i] == ' ' || (*s)[i] == '\t')) ++i;
  s->remove_prefix(i);
  return i;
}

inline std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace stacksym::symbolize
