// Parser of the text of /proc/PID/maps, written for speed: hand-written scanning over a byte
// buffer (no iostreams, no regex, no allocation per line), bounds-checked everywhere so that
// arbitrary bytes are safe (fuzzed by fuzz/fuzz_maps_text.cc).
//
// One line:  START-END PERMS OFFSET MAJOR:MINOR INODE [PADDING NAME]
//   55d0c0a00000-55d0c0a22000 r-xp 00002000 fd:01 1234   /usr/bin/my prog (deleted)
// The name runs to the end of the line (paths may hold spaces); a " (deleted)" suffix on a
// file-backed mapping is stripped and reported; "\012" (the kernel's escape for a newline in a
// path) is unescaped in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace stacksym::normalize {

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  uint64_t dev = 0;  // makedev(major, minor)
  uint64_t inode = 0;
  uint32_t perms = 0;  // kVma* bits of normalize/vma_sources.h
  bool deleted = false;
  uint32_t name_offset = 0;  // name position in the parsed buffer
  uint32_t name_size = 0;
};

struct MapsParseOptions {
  bool executable_only = false;  // drop entries without 'x'
  bool skip_gate = true;         // drop [vsyscall] (not a real VMA; PROCMAP_QUERY omits it)
};

struct MapsParseStats {
  size_t lines = 0;
  size_t malformed = 0;  // lines skipped because they do not match the format
};

// Parses the complete lines of text[from, ...) and appends entries to `out`. With `final`
// false, a trailing line without '\n' is left unparsed; the return value is where parsing
// stopped (the start of that line), to be resumed once more bytes are appended. `text` is
// mutable only for unescaping names in place. Buffers larger than 4 GiB are not supported
// (name offsets are 32-bit); lines beyond that are counted as malformed.
size_t ParseMapsLines(std::span<char> text, size_t from, bool final,
                      const MapsParseOptions& options, std::vector<MapsEntry>* out,
                      MapsParseStats* stats);

inline std::string_view MapsNameOf(const MapsEntry& e, std::span<const char> text) {
  return std::string_view(text.data() + e.name_offset, e.name_size);
}

}  // namespace stacksym::normalize
