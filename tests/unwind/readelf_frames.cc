#include "readelf_frames.h"

#include <cstdlib>

#include "../elf/tool_runner.h"

namespace stacksym::testing {
namespace {

// binutils' dwarf_regnames_x86_64 (the System V psABI numbering), up to xmm31.
const char* const kNames[] = {
    "rax",   "rdx",   "rcx",   "rbx",   "rsi",   "rdi",   "rbp",   "rsp",   "r8",      "r9",
    "r10",   "r11",   "r12",   "r13",   "r14",   "r15",   "rip",   "xmm0",  "xmm1",    "xmm2",
    "xmm3",  "xmm4",  "xmm5",  "xmm6",  "xmm7",  "xmm8",  "xmm9",  "xmm10", "xmm11",   "xmm12",
    "xmm13", "xmm14", "xmm15", "st0",   "st1",   "st2",   "st3",   "st4",   "st5",     "st6",
    "st7",   "mm0",   "mm1",   "mm2",   "mm3",   "mm4",   "mm5",   "mm6",   "mm7",     "rflags",
    "es",    "cs",    "ss",    "ds",    "fs",    "gs",    nullptr, nullptr, "fs.base", "gs.base",
    nullptr, nullptr, "tr",    "ldtr",  "mxcsr", "fcw",   "fsw",   "xmm16", "xmm17",   "xmm18",
    "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",   "xmm28",
    "xmm29", "xmm30", "xmm31"};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

// Splits on blanks, but keeps "r5 (rdi)" (DW_CFA_register) as one cell.
std::vector<std::string> Cells(std::string_view line) {
  std::vector<std::string> tokens = SplitWhitespace(line);
  std::vector<std::string> out;
  for (std::string& t : tokens) {
    if (!out.empty() && !t.empty() && t[0] == '(') {
      out.back() += " " + t;
    } else {
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

std::string ReadelfRegisterName(uint64_t reg) {
  if (reg < kNameCount && kNames[reg] != nullptr) return kNames[reg];
  return "r" + std::to_string(reg);
}

int ReadelfRegisterNumber(std::string_view name) {
  for (size_t i = 0; i < kNameCount; ++i) {
    if (kNames[i] != nullptr && name == kNames[i]) return static_cast<int>(i);
  }
  if (name.size() > 1 && name[0] == 'r') {
    int n = 0;
    for (char c : name.substr(1)) {
      if (c < '0' || c > '9') return -1;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return -1;
}

bool ParseReadelfFrames(const std::string& text, std::vector<ReadelfEntry>* out,
                        std::string* error) {
  std::string section;
  ReadelfEntry* entry = nullptr;
  size_t line_no = 0;
  for (const std::string& line : SplitLines(text)) {
    ++line_no;
    auto fail = [&](const std::string& why) {
      *error = "readelf line " + std::to_string(line_no) + ": " + why + ": " + line;
      return false;
    };
    if (line.empty()) continue;
    if (line.starts_with("Contents of the ")) {
      size_t start = 16, end = line.find(" section", start);
      if (end == std::string::npos) return fail("no section name");
      section = line.substr(start, end - start);
      entry = nullptr;
      continue;
    }
    std::vector<std::string> cells = Cells(line);
    if (cells.size() >= 2 && cells[1] == "ZERO") continue;  // "ZERO terminator"
    if (cells.size() >= 4 && (cells[3] == "CIE" || cells[3] == "FDE")) {
      out->emplace_back();
      entry = &out->back();
      entry->section = section;
      entry->is_cie = cells[3] == "CIE";
      if (!ParseHex(cells[0], &entry->offset)) return fail("bad entry offset");
      if (!entry->is_cie) {
        bool found = false;
        for (const std::string& c : cells) {
          if (!c.starts_with("pc=")) continue;
          size_t dots = c.find("..");
          if (dots == std::string::npos || !ParseHex(c.substr(3, dots - 3), &entry->pc_begin) ||
              !ParseHex(c.substr(dots + 2), &entry->pc_end)) {
            return fail("bad pc range");
          }
          found = true;
        }
        if (!found) return fail("FDE without pc range");
      }
      continue;
    }
    if (entry == nullptr) continue;  // section preamble
    if (cells.size() >= 2 && cells[0] == "LOC" && cells[1] == "CFA") {
      entry->columns.clear();
      for (size_t i = 2; i < cells.size(); ++i) {
        int reg = cells[i] == "ra" ? kReadelfRaColumn : ReadelfRegisterNumber(cells[i]);
        if (reg == -1 && cells[i] != "ra") return fail("unknown register " + cells[i]);
        entry->columns.push_back(reg);
      }
      continue;
    }
    ReadelfRow row;
    if (cells.size() < 2 || cells[0].size() != 16 || !ParseHex(cells[0], &row.loc)) {
      return fail("not a row");
    }
    row.cfa = cells[1];
    row.cells.assign(cells.begin() + 2, cells.end());
    if (row.cells.size() != entry->columns.size()) return fail("cells do not match the header");
    entry->rows.push_back(std::move(row));
  }
  return true;
}

}  // namespace stacksym::testing
