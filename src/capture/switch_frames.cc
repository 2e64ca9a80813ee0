#include "capture/switch_frames.h"

#include <cstdio>
#include <cstdlib>

#include "base/hex.h"

namespace stacksym::capture {
namespace {

constexpr std::string_view kTraceIter = "__traceiter_sched_switch";

// "ADDRESS TYPE NAME[\t[MODULE]]": the address and name, or false.
bool ParseLine(std::string_view line, uint64_t* address, std::string_view* name) {
  size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 16) return false;
  uint64_t value = 0;
  for (char c : line.substr(0, space)) {
    int digit = HexDigit(c);
    if (digit < 0) return false;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  std::string_view rest = line.substr(space + 1);
  if (rest.size() < 3 || rest[1] != ' ') return false;
  rest.remove_prefix(2);
  *name = rest.substr(0, rest.find_first_of("\t "));
  *address = value;
  return true;
}

}  // namespace

SwitchFrames SwitchFrames::FromText(std::string_view text) {
  SwitchFrames frames;
  bool found = false;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    uint64_t address = 0;
    std::string_view name;
    if (!ParseLine(line, &address, &name)) continue;
    if (found) {
      // kallsyms lists the kernel's own symbols by address: the next one ends it.
      if (address > frames.start_) frames.end_ = address;
      return frames.end_ > frames.start_ && frames.start_ != 0 ? frames : SwitchFrames{};
    }
    if (name == kTraceIter) {
      frames.start_ = address;
      found = true;
    }
  }
  return SwitchFrames{};
}

SwitchFrames SwitchFrames::FromKallsyms(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return {};
  // Line by line, stopping after the symbol that follows: the file is generated as it is
  // read, and the whole of it takes tens of milliseconds.
  std::string text;
  char line[512];
  bool found = false;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string_view l(line);
    if (found) {
      text += l;
      break;
    }
    uint64_t address = 0;
    std::string_view name;
    // (__pfx___traceiter_sched_switch, its padding, comes first.)
    if (ParseLine(l.substr(0, l.find('\n')), &address, &name) && name == kTraceIter) {
      text = l;
      found = true;
    }
  }
  std::fclose(f);
  return found ? FromText(text) : SwitchFrames{};
}

std::span<const uint64_t> SwitchFrames::Trim(std::span<const uint64_t> ips) const {
  if (!known()) return ips;
  for (size_t i = 0; i < ips.size() && i < kMaxLookahead; ++i) {
    if (ips[i] >= start_ && ips[i] < end_) return ips.subspan(i + 1);
  }
  return ips;
}

}  // namespace stacksym::capture
