#include "llvm_markup_parser.h"

#include <algorithm>

#include "llvm_symbolizer_request.h"
#include "stacksym/hex.h"

namespace stacksym::cli {

std::span<const MarkupNode> MarkupParser::Parse(std::string_view line) {
  nodes_.clear();
  fields_.clear();
  field_ranges_.clear();
  size_t text_start = 0;  // where the text not yet given to a node begins
  size_t search = 0;      // where the next element is looked for
  while (true) {
    size_t begin = line.find("{{{", search);
    if (begin == std::string_view::npos) break;
    size_t end = line.find("}}}", begin + 3);
    if (end == std::string_view::npos) break;
    std::string_view content = line.substr(begin + 3, end - begin - 3);
    search = end + 3;
    size_t colon = content.find(':');
    std::string_view tag = content.substr(0, colon);
    if (tag.empty()) continue;  // no tag: text, and the search goes on after it
    AddText(line.substr(text_start, begin - text_start));
    text_start = search;
    const size_t first_field = fields_.size();
    if (colon != std::string_view::npos) {
      std::string_view rest = content.substr(colon + 1);
      while (true) {
        size_t next = rest.find(':');
        fields_.push_back(rest.substr(0, next));
        if (next == std::string_view::npos) break;
        rest.remove_prefix(next + 1);
      }
    }
    Push(line.substr(begin, search - begin), tag, first_field, fields_.size() - first_field);
  }
  AddText(line.substr(text_start));
  // (The fields are pointed at once they no longer move.)
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto [first, count] = field_ranges_[i];
    nodes_[i].fields = std::span<const std::string_view>(fields_.data() + first, count);
  }
  return nodes_;
}

void MarkupParser::AddText(std::string_view text) {
  while (!text.empty()) {
    size_t length = 0;
    size_t sgr = FindMarkupSgr(text, &length);
    if (sgr == std::string_view::npos) break;
    if (sgr > 0) Push(text.substr(0, sgr));
    Push(text.substr(sgr, length));
    text.remove_prefix(sgr + length);
  }
  if (!text.empty()) Push(text);
}

void MarkupParser::Push(std::string_view text, std::string_view tag, size_t first_field,
                        size_t field_count) {
  nodes_.push_back({text, tag, {}});
  field_ranges_.emplace_back(first_field, field_count);
}

size_t FindMarkupSgr(std::string_view text, size_t* length) {
  for (size_t at = text.find("\033["); at != std::string_view::npos;
       at = text.find("\033[", at + 1)) {
    std::string_view rest = text.substr(at + 2);
    if (rest.size() >= 2 && (rest[0] == '0' || rest[0] == '1') && rest[1] == 'm') {
      *length = 4;
      return at;
    }
    if (rest.size() >= 3 && rest[0] == '3' && rest[1] >= '0' && rest[1] <= '7' && rest[2] == 'm') {
      *length = 5;
      return at;
    }
  }
  return std::string_view::npos;
}

bool IsMarkupSgr(std::string_view text) {
  size_t length = 0;
  return FindMarkupSgr(text, &length) == 0 && length == text.size();
}

std::optional<uint64_t> ParseMarkupAddress(std::string_view field) {
  if (field.empty()) return std::nullopt;
  if (std::all_of(field.begin(), field.end(), [](char c) { return c == '0'; })) return 0;
  // (With its "0x", ParseLlvmAddress reads the rest as hex digits and nothing else.)
  uint64_t value = 0;
  if (!field.starts_with("0x") || !ParseLlvmAddress(field, &value)) return std::nullopt;
  return value;
}

std::optional<uint64_t> ParseMarkupInteger(std::string_view field) {
  uint64_t value = 0;
  if (!ParseLlvmAddress(field, &value)) return std::nullopt;
  return value;
}

std::optional<uint64_t> ParseMarkupFrameNumber(std::string_view field) {
  if (field.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : field) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;  // overflow
    value = value * 10 + digit;
  }
  return value;
}

std::optional<std::vector<uint8_t>> ParseMarkupBuildId(std::string_view field) {
  if (field.empty() || field.size() % 2 != 0) return std::nullopt;
  return FromHex(field);
}

std::optional<std::string> ParseMarkupMode(std::string_view field) {
  if (field.empty()) return std::nullopt;
  std::string mode;
  std::string_view rest = field;
  for (char letter : {'r', 'w', 'x'}) {
    if (!rest.empty() && (rest[0] | 0x20) == letter) {
      mode += letter;
      rest.remove_prefix(1);
    }
  }
  if (!rest.empty()) return std::nullopt;
  return mode;
}

}  // namespace stacksym::cli
