// The source lines around an answer's line, as llvm-symbolizer's
// --print-source-context-lines=N prints them under each frame (and in JSON as "Source"):
//
//   LlvmSourceContext context(3);
//   std::string text = context.Around("/src/a.c", 37);  // "36  : ...\n37 >: ...\n38  : ...\n"
//
// N lines starting N/2 before the line (never before line 1), each numbered, right-aligned to
// the width LLVM computes (ceil(log10(last line)), so a last line of 10 or 100 still gets one
// or two columns), the answer's own line marked ">". Nothing when N is 0, the file cannot be
// read or holds fewer lines than the first one asked. Paths are opened as written (relative
// ones from the working directory, as llvm-symbolizer does); each file is read once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace stacksym::cli {

// The lines of `source` around `line` (1-based; 0 = unknown), `lines` of them, in
// llvm-symbolizer's layout; empty when there are none. Separate from the file reading so
// that it can be tested on any text.
std::string FormatSourceContext(std::string_view source, int64_t line, int lines);

class LlvmSourceContext {
 public:
  explicit LlvmSourceContext(int lines) : lines_(lines) {}
  int lines() const { return lines_; }
  std::string Around(const std::string& path, int64_t line);

 private:
  int lines_;
  std::map<std::string, std::optional<std::string>> files_;  // nullopt: could not be read
};

}  // namespace stacksym::cli
