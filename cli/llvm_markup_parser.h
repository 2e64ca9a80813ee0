// LLVM's symbolizer markup (llvm/docs/SymbolizerMarkupFormat.rst) as llvm-symbolizer 16's
// --filter-markup reads it: one line of a log split into nodes (plain text, the ANSI SGR
// sequences the filter understands, and {{{tag:field:field}}} elements), and the field types
// the elements carry. Untrusted text: every result points into the line; nothing is assumed
// about it. The filter that acts on the nodes is llvm_markup_filter.h.
//
//   MarkupParser parser;
//   for (const MarkupNode& node : parser.Parse("a{{{pc:0x10:ra}}}b\n")) ...
//     // "a" (text), "{{{pc:0x10:ra}}}" (tag "pc", fields "0x10" "ra"), "b\n" (text)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym::cli {

struct MarkupNode {
  std::string_view text;                     // the node as written (an element with its braces)
  std::string_view tag;                      // an element's tag; empty for text and SGR sequences
  std::span<const std::string_view> fields;  // an element's fields, empty ones kept

  bool is_element() const { return !tag.empty(); }
};

class MarkupParser {
 public:
  // The nodes of `line`, in order, as LLVM 16 finds them: an element runs from "{{{" to the
  // next "}}}" and must have a tag (text before its first ':'; "{{{:x}}}" and "{{{}}}" are
  // text); its fields are the rest split at every ':' ("{{{tag:}}}" has one empty field).
  // Text outside elements is split around SGR sequences (IsMarkupSgr). Valid until the next
  // call; they point into `line`.
  std::span<const MarkupNode> Parse(std::string_view line);

 private:
  void AddText(std::string_view text);
  void Push(std::string_view text, std::string_view tag = {}, size_t first_field = 0,
            size_t field_count = 0);

  std::vector<MarkupNode> nodes_;
  std::vector<std::string_view> fields_;
  std::vector<std::pair<size_t, size_t>> field_ranges_;  // per node: first field, count
};

// The SGR sequences the filter interprets: ESC [ 0 m (reset), ESC [ 1 m (bold),
// ESC [ 30 m ... ESC [ 37 m (colours). Where the first one in `text` starts, or npos.
size_t FindMarkupSgr(std::string_view text, size_t* length);
bool IsMarkupSgr(std::string_view text);

// Field types (the spec's %p, %i, %x), each nullopt when the field is not one:
// an address: "0x" and hex digits of either case, or only '0's (written "0", "000").
std::optional<uint64_t> ParseMarkupAddress(std::string_view field);
// a module ID or size: 0x hex, 0b binary, 0o or 0 octal, else decimal (LLVM's auto radix).
std::optional<uint64_t> ParseMarkupInteger(std::string_view field);
// a frame number: decimal.
std::optional<uint64_t> ParseMarkupFrameNumber(std::string_view field);
// a build ID: a non-empty, even number of hex digits of either case.
std::optional<std::vector<uint8_t>> ParseMarkupBuildId(std::string_view field);
// an mmap's mode: 'r', 'w', 'x' in that order, each optional, of either case, at least one;
// lower-cased.
std::optional<std::string> ParseMarkupMode(std::string_view field);

}  // namespace stacksym::cli
