// llvm-symbolizer 16's --filter-markup: a log's lines with their symbolizer markup
// (llvm_markup_parser.h) replaced by what it means, as LLVM 16's MarkupFilter prints it.
//
// Contextual elements ({{{reset}}}, {{{module:...}}}, {{{mmap:...}}}) build the state: the
// modules by ID with their build IDs, and the address ranges mapped from them. They print as
// one summary line per module, `[[[ELF module #0x0 "name"; BuildID=hex [0x10-0x10f](r),...]]]`
// (mmaps that follow their module join its line; an mmap of another module starts a line
// `...; adds [..](..)]]]`), and the rest of the line they are on is dropped. Presentation
// elements are answered through the mmaps: {{{pc:ADDR[:ra|pc]}}} as `function[file:line]`,
// {{{bt:N:ADDR[:ra|pc]}}} as a backtrace frame per inlined function, {{{data:ADDR}}} as the
// symbol's name, {{{symbol:NAME}}} demangled. Return addresses (bt by default, pc:ra) are moved
// back one byte into the call. Invalid elements are reported on the error stream as LLVM does
// (`error: expected address; found 'x'`, then the line and a caret under the place) and
// dropped; one that cannot be symbolized is printed as `[[[pc:0x...]]]`. Unknown tags are kept
// as written. SGR colour sequences (ESC[0m, ESC[1m, ESC[30m..ESC[37m) are tracked and, with
// colour on, re-emitted; answers are highlighted in a colour other than the current one.
//
// The symbolization itself is the drop-in's (MarkupSymbolizer, implemented by its session).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llvm_markup_parser.h"

namespace stacksym::cli {

// One location as llvm-symbolizer's DILineInfo gives it; empty strings are unknown (printed
// as LLVM's "<invalid>").
struct MarkupFrame {
  std::string function;
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;

  bool known() const { return !function.empty() || !file.empty(); }
};

// What the filter asks of the symbolizer: a module by its build ID, an address in it (module
// relative). Each sets *error (printed as "error: <error>") when the module cannot be had; a
// module that failed before answers as unknown without an error, as LLVM's cache does.
class MarkupSymbolizer {
 public:
  virtual ~MarkupSymbolizer() = default;
  // llvm-symbolizer's symbolizeCode: the innermost location, the out-of-line function's name.
  virtual MarkupFrame Code(std::span<const uint8_t> build_id, uint64_t address,
                           std::string* error) = 0;
  // symbolizeInlinedCode: innermost first; none for a module that failed before.
  virtual std::vector<MarkupFrame> InlinedCode(std::span<const uint8_t> build_id, uint64_t address,
                                               std::string* error) = 0;
  // symbolizeData: the symbol's name, empty when unknown.
  virtual std::string DataName(std::span<const uint8_t> build_id, uint64_t address,
                               std::string* error) = 0;
};

// Whether `fd` is a terminal that takes ANSI colours ($TERM as LLVM checks it without
// terminfo: ansi, cygwin, linux, screen*, xterm*, vt100*, rxvt*, *color).
bool LlvmTerminalHasColors(int fd);

class MarkupFilter {
 public:
  // `color`: SGR sequences in the output (--color); `color_errors`: LLVM's coloured
  // "error: " and caret (when its error stream is a colour terminal).
  MarkupFilter(MarkupSymbolizer& symbolizer, bool color, bool color_errors);

  // Filters one line, given with its line ending (a last line without one is given "\n", as
  // llvm-symbolizer reads lines). Appends the output to *out, the messages to *err; some
  // output (a module's summary) waits for the next line or Finish.
  void Filter(std::string_view line, std::string* out, std::string* err);
  // The end of the input: what is still waiting, and the colours reset.
  void Finish(std::string* out);

 private:
  struct Module {
    uint64_t id;
    std::string name;
    std::vector<uint8_t> build_id;
  };
  struct MMap {
    uint64_t address;
    uint64_t size;
    const Module* module;
    std::string mode;  // lower case
    uint64_t module_address;

    bool Contains(uint64_t a) const { return address <= a && a < address + size; }
  };
  // A module's summary being written: the mmaps that join it are printed when it ends.
  struct ModuleLine {
    const Module* module;
    std::vector<const MMap*> mmaps;
  };
  enum class PcType { kReturnAddress, kPreciseCode };

  bool TryContextual(const MarkupNode& node, std::span<const MarkupNode> before);
  bool TryMMap(const MarkupNode& node, std::span<const MarkupNode> before);
  bool TryReset(const MarkupNode& node, std::span<const MarkupNode> before);
  bool TryModule(const MarkupNode& node, std::span<const MarkupNode> before);
  void BeginModuleLine(const Module* module);
  void EndModuleLine();

  void FilterNode(const MarkupNode& node);
  void Symbol(const MarkupNode& node);
  void Pc(const MarkupNode& node);
  void Backtrace(const MarkupNode& node);
  void Data(const MarkupNode& node);
  bool TrySgr(const MarkupNode& node);

  std::optional<Module> ParseModule(const MarkupNode& node);
  std::optional<MMap> ParseMMap(const MarkupNode& node);
  std::optional<uint64_t> Address(std::string_view field);
  std::optional<PcType> ParsePcType(std::string_view field);
  // The mmap the address (after moving a return address into its call) lies in; else the
  // error and the raw element.
  const MMap* Locate(const MarkupNode& node, std::string_view field, uint64_t* address);
  const MMap* Overlapping(const MMap& map) const;
  const MMap* Containing(uint64_t address) const;

  bool CheckFields(const MarkupNode& node, size_t exactly);
  bool CheckFieldsAtLeast(const MarkupNode& node, size_t least);
  bool CheckFieldsAtMost(const MarkupNode& node, size_t most);
  // "error: <message>", then (when `at` points into the line) the line and a caret under it.
  void Error(std::string_view message, const char* at = nullptr);
  void TypeError(std::string_view field, std::string_view type);

  // Colours as LLVM's raw_ostream writes them (nothing without --color).
  void ChangeColor(int color, bool bold);
  void Highlight();
  void HighlightValue();
  void RestoreColor();
  void ResetColor();
  void Value(std::string_view text);
  void RawElement(const MarkupNode& node);
  std::string_view LineEnding() const { return crlf_ ? "\r\n" : "\n"; }

  MarkupSymbolizer& symbolizer_;
  const bool color_;
  const bool color_errors_;
  MarkupParser parser_;
  std::string_view line_;  // the line being filtered
  bool crlf_ = false;      // it ends in "\r\n" (also after it, for what Finish prints)
  std::string* out_ = nullptr;
  std::string* err_ = nullptr;
  std::optional<ModuleLine> module_line_;
  std::optional<int> sgr_color_;  // the log's SGR state: colour 0-7, bold
  bool sgr_bold_ = false;
  std::map<uint64_t, std::unique_ptr<Module>> modules_;  // by ID
  std::map<uint64_t, MMap> mmaps_;                       // by start address
};

}  // namespace stacksym::cli
