// readelf_frames.h — the reference side of the differential tests: the output of
// `readelf --debug-dump=frames-interp` split into entries (CIE/FDE), their column headers and
// their rows, cell by cell as readelf prints them. Also readelf's x86_64 register names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym::testing {

inline constexpr int kReadelfRaColumn = -1;  // the "ra" header: the CIE's return address column

struct ReadelfRow {
  uint64_t loc = 0;
  std::string cfa;                 // "rsp+8", "rbp+16", "exp"
  std::vector<std::string> cells;  // one per column: "u", "c-8", "r5 (rdi)", "exp", ...
};

struct ReadelfEntry {
  std::string section;  // ".eh_frame" or ".debug_frame"
  uint64_t offset = 0;
  bool is_cie = false;
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;
  std::vector<int> columns;  // DWARF register numbers; kReadelfRaColumn for "ra"
  std::vector<ReadelfRow> rows;
};

// False (with *error) on a line it cannot understand: the format has changed and the test
// would compare nothing.
bool ParseReadelfFrames(const std::string& text, std::vector<ReadelfEntry>* out,
                        std::string* error);

// readelf's spelling of an x86_64 DWARF register ("rsp", "xmm3"), "r<n>" when it has none.
std::string ReadelfRegisterName(uint64_t reg);
// The inverse; -1 when unknown.
int ReadelfRegisterNumber(std::string_view name);

}  // namespace stacksym::testing
