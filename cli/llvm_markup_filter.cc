#include "llvm_markup_filter.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "base/hex.h"
#include "llvm_demangle.h"

namespace stacksym::cli {
namespace llvm_markup_filter {  // (named, not anonymous: the CLI compiles in unity batches)

// raw_ostream's colour numbers.
constexpr int kGreen = 2;
constexpr int kBlue = 4;
constexpr int kCyan = 6;

constexpr std::string_view kInvalid = "<invalid>";  // LLVM's DILineInfo::BadString

std::string_view Known(const std::string& s) { return s.empty() ? kInvalid : s; }

}  // namespace llvm_markup_filter

using llvm_markup_filter::kBlue;
using llvm_markup_filter::kCyan;
using llvm_markup_filter::kGreen;
using llvm_markup_filter::Known;

bool LlvmTerminalHasColors(int fd) {
  if (!::isatty(fd)) return false;
  const char* term = std::getenv("TERM");
  if (!term) return false;
  std::string_view t(term);
  return t == "ansi" || t == "cygwin" || t == "linux" || t.starts_with("screen") ||
         t.starts_with("xterm") || t.starts_with("vt100") || t.starts_with("rxvt") ||
         t.ends_with("color");
}

MarkupFilter::MarkupFilter(MarkupSymbolizer& symbolizer, bool color, bool color_errors)
    : symbolizer_(symbolizer), color_(color), color_errors_(color_errors) {}

void MarkupFilter::Filter(std::string_view line, std::string* out, std::string* err) {
  line_ = line;
  crlf_ = line.ends_with("\r\n");
  out_ = out;
  err_ = err;
  ResetColor();
  std::span<const MarkupNode> nodes = parser_.Parse(line);
  // A line with a contextual element is that element alone: what follows it is dropped, and
  // what precedes it too unless the element prints something.
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (TryContextual(nodes[i], nodes.first(i))) return;
  }
  EndModuleLine();
  for (const MarkupNode& node : nodes) FilterNode(node);
}

void MarkupFilter::Finish(std::string* out) {
  out_ = out;
  EndModuleLine();
  ResetColor();
  modules_.clear();
  mmaps_.clear();
}

bool MarkupFilter::TryContextual(const MarkupNode& node, std::span<const MarkupNode> before) {
  return TryMMap(node, before) || TryReset(node, before) || TryModule(node, before);
}

bool MarkupFilter::TryMMap(const MarkupNode& node, std::span<const MarkupNode> before) {
  if (node.tag != "mmap") return false;
  std::optional<MMap> parsed = ParseMMap(node);
  if (!parsed) return true;
  if (const MMap* other = Overlapping(*parsed)) {
    Error("overlapping mmap: #" + HexU64(other->module->id) + " [" + HexU64(other->address) + "-" +
              HexU64(other->address + other->size - 1) + "]",
          node.fields[0].data());
    return true;
  }
  const MMap* map = &mmaps_.emplace(parsed->address, std::move(*parsed)).first->second;
  if (!module_line_ || module_line_->module != map->module) {
    EndModuleLine();
    for (const MarkupNode& n : before) FilterNode(n);
    BeginModuleLine(map->module);
    *out_ += "; adds";
  }
  module_line_->mmaps.push_back(map);
  return true;
}

bool MarkupFilter::TryReset(const MarkupNode& node, std::span<const MarkupNode> before) {
  if (node.tag != "reset") return false;
  if (!CheckFields(node, 0)) return true;
  if (modules_.empty() && mmaps_.empty()) return true;
  EndModuleLine();
  for (const MarkupNode& n : before) FilterNode(n);
  Highlight();
  *out_ += "[[[reset]]]";
  *out_ += LineEnding();
  RestoreColor();
  modules_.clear();
  mmaps_.clear();
  return true;
}

bool MarkupFilter::TryModule(const MarkupNode& node, std::span<const MarkupNode> before) {
  if (node.tag != "module") return false;
  std::optional<Module> parsed = ParseModule(node);
  if (!parsed) return true;
  auto [it, added] = modules_.try_emplace(parsed->id);
  if (!added) {
    Error("duplicate module ID", node.fields[0].data());
    return true;
  }
  it->second = std::make_unique<Module>(std::move(*parsed));
  EndModuleLine();
  for (const MarkupNode& n : before) FilterNode(n);
  BeginModuleLine(it->second.get());
  *out_ += "; BuildID=";
  Value(ToHex(it->second->build_id));
  return true;
}

void MarkupFilter::BeginModuleLine(const Module* module) {
  Highlight();
  *out_ += "[[[ELF module";
  Value(" #" + HexU64(module->id) + " ");
  *out_ += '"';
  Value(module->name);
  *out_ += '"';
  module_line_ = ModuleLine{module, {}};
}

void MarkupFilter::EndModuleLine() {
  if (!module_line_) return;
  std::vector<const MMap*>& maps = module_line_->mmaps;
  std::stable_sort(maps.begin(), maps.end(),
                   [](const MMap* a, const MMap* b) { return a->address < b->address; });
  for (const MMap* map : maps) {
    *out_ += map == maps.front() ? " [" : ",[";
    Value(HexU64(map->address));
    *out_ += '-';
    Value(HexU64(map->address + map->size - 1));
    *out_ += "](";
    Value(map->mode);
    *out_ += ')';
  }
  *out_ += "]]]";
  *out_ += LineEnding();
  RestoreColor();
  module_line_.reset();
}

void MarkupFilter::FilterNode(const MarkupNode& node) {
  for (char c : node.tag) {
    if (c < 'a' || c > 'z') {
      Error("tags must be all lowercase characters", node.tag.data());
      return;
    }
  }
  if (node.tag == "symbol") {
    Symbol(node);
  } else if (node.tag == "pc") {
    Pc(node);
  } else if (node.tag == "bt") {
    Backtrace(node);
  } else if (node.tag == "data") {
    Data(node);
  } else if (!TrySgr(node)) {
    *out_ += node.text;  // text, and elements of tags the filter does not know
  }
}

void MarkupFilter::Symbol(const MarkupNode& node) {
  if (!CheckFields(node, 1)) return;
  Highlight();
  *out_ += DemangleLikeLlvm(node.fields[0]);
  RestoreColor();
}

void MarkupFilter::Pc(const MarkupNode& node) {
  if (!CheckFieldsAtLeast(node, 1) || !CheckFieldsAtMost(node, 2)) return;
  std::optional<uint64_t> address = Address(node.fields[0]);
  if (!address) return;
  // Not in a backtrace, an address is the instruction's own unless it says otherwise.
  PcType type = PcType::kPreciseCode;
  if (node.fields.size() == 2) {
    std::optional<PcType> given = ParsePcType(node.fields[1]);
    if (!given) return;
    type = *given;
  }
  if (type == PcType::kReturnAddress) --*address;
  const MMap* map = Locate(node, node.fields[0], &*address);
  if (!map) return;
  std::string error;
  MarkupFrame frame = symbolizer_.Code(map->module->build_id,
                                       *address - map->address + map->module_address, &error);
  if (!error.empty()) Error(error);
  if (!error.empty() || !frame.known()) {
    RawElement(node);
    return;
  }
  Highlight();
  Value(Known(frame.function));
  *out_ += '[';
  Value(Known(frame.file));
  *out_ += ':';
  Value(std::to_string(frame.line));
  *out_ += ']';
  RestoreColor();
}

void MarkupFilter::Backtrace(const MarkupNode& node) {
  if (!CheckFieldsAtLeast(node, 2) || !CheckFieldsAtMost(node, 3)) return;
  std::optional<uint64_t> number = ParseMarkupFrameNumber(node.fields[0]);
  if (!number) return TypeError(node.fields[0], "frame number");
  std::optional<uint64_t> address = Address(node.fields[1]);
  if (!address) return;
  // In a backtrace, an address is a return address unless it says otherwise.
  PcType type = PcType::kReturnAddress;
  if (node.fields.size() == 3) {
    std::optional<PcType> given = ParsePcType(node.fields[2]);
    if (!given) return;
    type = *given;
  }
  if (type == PcType::kReturnAddress) --*address;
  // (LLVM puts the caret of "no mmap covers address" under the frame number here.)
  const MMap* map = Locate(node, node.fields[0], &*address);
  if (!map) return;
  const uint64_t module_address = *address - map->address + map->module_address;
  std::string error;
  std::vector<MarkupFrame> frames =
      symbolizer_.InlinedCode(map->module->build_id, module_address, &error);
  if (!error.empty()) {
    Error(error);
    RawElement(node);
    return;
  }
  Highlight();
  const std::string number_text = std::to_string(*number);
  char address_text[24];
  std::snprintf(address_text, sizeof address_text, " 0x%016" PRIx64 " ", *address);
  for (size_t i = 0; i < frames.size(); ++i) {
    // "#N" right-aligned in 6 columns, then ".I" left-aligned in 3 for an inlined frame.
    if (number_text.size() + 1 < 6) out_->append(5 - number_text.size(), ' ');
    *out_ += '#';
    Value(number_text);
    const bool last = i + 1 == frames.size();
    if (last) {
      *out_ += "   ";
    } else {
      *out_ += '.';
      std::string inlined = std::to_string(i + 1);
      if (inlined.size() < 2) inlined += ' ';
      Value(inlined);
    }
    Value(address_text);
    const MarkupFrame& frame = frames[i];
    if (frame.known()) {
      Value(Known(frame.function));
      *out_ += ' ';
      Value(Known(frame.file));
      *out_ += ':';
      Value(std::to_string(frame.line));
      *out_ += ':';
      Value(std::to_string(frame.column));
      *out_ += ' ';
    }
    *out_ += '(';
    Value(map->module->name);
    *out_ += '+';
    Value(HexU64(module_address));
    *out_ += ')';
    if (!last) *out_ += LineEnding();
  }
  RestoreColor();
}

void MarkupFilter::Data(const MarkupNode& node) {
  if (!CheckFields(node, 1)) return;
  std::optional<uint64_t> address = Address(node.fields[0]);
  if (!address) return;
  const MMap* map = Locate(node, node.fields[0], &*address);
  if (!map) return;
  std::string error;
  std::string name = symbolizer_.DataName(map->module->build_id,
                                          *address - map->address + map->module_address, &error);
  if (!error.empty()) {
    Error(error);
    RawElement(node);
    return;
  }
  Highlight();
  *out_ += Known(name);
  RestoreColor();
}

bool MarkupFilter::TrySgr(const MarkupNode& node) {
  if (!IsMarkupSgr(node.text)) return false;
  const char code = node.text[2];
  if (code == '0') {
    ResetColor();
  } else if (code == '1') {
    sgr_bold_ = true;
    if (color_) *out_ += "\033[1m";  // (raw_ostream's bold in the saved colour)
  } else {
    sgr_color_ = node.text[3] - '0';
    ChangeColor(*sgr_color_, false);
  }
  return true;
}

std::optional<MarkupFilter::Module> MarkupFilter::ParseModule(const MarkupNode& node) {
  if (!CheckFieldsAtLeast(node, 3)) return std::nullopt;
  std::optional<uint64_t> id = ParseMarkupInteger(node.fields[0]);
  if (!id) {
    TypeError(node.fields[0], "module ID");
    return std::nullopt;
  }
  if (node.fields[2] != "elf") {
    Error("unknown module type", node.fields[2].data());
    return std::nullopt;
  }
  if (!CheckFields(node, 4)) return std::nullopt;
  std::optional<std::vector<uint8_t>> build_id = ParseMarkupBuildId(node.fields[3]);
  if (!build_id) {
    TypeError(node.fields[3], "build ID");
    return std::nullopt;
  }
  return Module{*id, std::string(node.fields[1]), std::move(*build_id)};
}

std::optional<MarkupFilter::MMap> MarkupFilter::ParseMMap(const MarkupNode& node) {
  if (!CheckFieldsAtLeast(node, 3)) return std::nullopt;
  std::optional<uint64_t> address = Address(node.fields[0]);
  if (!address) return std::nullopt;
  std::optional<uint64_t> size = ParseMarkupInteger(node.fields[1]);
  if (!size) {
    TypeError(node.fields[1], "size");
    return std::nullopt;
  }
  if (node.fields[2] != "load") {
    Error("unknown mmap type", node.fields[2].data());
    return std::nullopt;
  }
  if (!CheckFields(node, 6)) return std::nullopt;
  std::optional<uint64_t> id = ParseMarkupInteger(node.fields[3]);
  if (!id) {
    TypeError(node.fields[3], "module ID");
    return std::nullopt;
  }
  std::optional<std::string> mode = ParseMarkupMode(node.fields[4]);
  if (!mode) {
    TypeError(node.fields[4], "mode");
    return std::nullopt;
  }
  auto module = modules_.find(*id);
  if (module == modules_.end()) {
    Error("unknown module ID", node.fields[3].data());
    return std::nullopt;
  }
  std::optional<uint64_t> module_address = Address(node.fields[5]);
  if (!module_address) return std::nullopt;
  return MMap{*address, *size, module->second.get(), std::move(*mode), *module_address};
}

std::optional<uint64_t> MarkupFilter::Address(std::string_view field) {
  std::optional<uint64_t> address = ParseMarkupAddress(field);
  if (!address) TypeError(field, "address");
  return address;
}

std::optional<MarkupFilter::PcType> MarkupFilter::ParsePcType(std::string_view field) {
  if (field == "ra") return PcType::kReturnAddress;
  if (field == "pc") return PcType::kPreciseCode;
  TypeError(field, "PC type");
  return std::nullopt;
}

const MarkupFilter::MMap* MarkupFilter::Locate(const MarkupNode& node, std::string_view field,
                                               uint64_t* address) {
  const MMap* map = Containing(*address);
  if (!map) {
    Error("no mmap covers address", field.data());
    RawElement(node);
  }
  return map;
}

const MarkupFilter::MMap* MarkupFilter::Overlapping(const MMap& map) const {
  // One that starts inside the new one, or else the one before it, if it reaches in.
  auto next = mmaps_.upper_bound(map.address);
  if (next != mmaps_.end() && map.Contains(next->second.address)) return &next->second;
  if (next == mmaps_.begin()) return nullptr;
  const MMap& previous = std::prev(next)->second;
  return previous.Contains(map.address) ? &previous : nullptr;
}

const MarkupFilter::MMap* MarkupFilter::Containing(uint64_t address) const {
  auto next = mmaps_.lower_bound(address);
  if (next != mmaps_.end() && next->second.Contains(address)) return &next->second;
  if (next == mmaps_.begin()) return nullptr;
  const MMap& previous = std::prev(next)->second;
  return previous.Contains(address) ? &previous : nullptr;
}

bool MarkupFilter::CheckFields(const MarkupNode& node, size_t exactly) {
  if (node.fields.size() == exactly) return true;
  Error("expected " + std::to_string(exactly) + " field(s); found " +
            std::to_string(node.fields.size()),
        node.tag.data() + node.tag.size());
  return false;
}

bool MarkupFilter::CheckFieldsAtLeast(const MarkupNode& node, size_t least) {
  if (node.fields.size() >= least) return true;
  Error("expected at least " + std::to_string(least) + " field(s); found " +
            std::to_string(node.fields.size()),
        node.tag.data() + node.tag.size());
  return false;
}

bool MarkupFilter::CheckFieldsAtMost(const MarkupNode& node, size_t most) {
  if (node.fields.size() <= most) return true;
  Error("expected at most " + std::to_string(most) + " field(s); found " +
            std::to_string(node.fields.size()),
        node.tag.data() + node.tag.size());
  return false;
}

void MarkupFilter::Error(std::string_view message, const char* at) {
  *err_ += color_errors_ ? "\033[0;1;31merror: \033[0m" : "error: ";
  *err_ += message;
  *err_ += '\n';
  if (!at) return;
  *err_ += line_;
  err_->append(static_cast<size_t>(at - line_.data()), ' ');
  *err_ += color_errors_ ? "\033[0;32m^\033[0m\n" : "^\n";
}

void MarkupFilter::TypeError(std::string_view field, std::string_view type) {
  Error("expected " + std::string(type) + "; found '" + std::string(field) + "'", field.data());
}

void MarkupFilter::ChangeColor(int color, bool bold) {
  if (!color_) return;
  *out_ += bold ? "\033[0;1;3" : "\033[0;3";
  *out_ += static_cast<char>('0' + color);
  *out_ += 'm';
}

// Answers stand out from the log's own colour: blue, or cyan where the log is blue.
void MarkupFilter::Highlight() { ChangeColor(sgr_color_ == kBlue ? kCyan : kBlue, sgr_bold_); }

void MarkupFilter::HighlightValue() { ChangeColor(kGreen, sgr_bold_); }

void MarkupFilter::RestoreColor() {
  if (!color_) return;
  if (sgr_color_) {
    ChangeColor(*sgr_color_, sgr_bold_);
    return;
  }
  *out_ += "\033[0m";
  if (sgr_bold_) *out_ += "\033[1m";
}

void MarkupFilter::ResetColor() {
  if (!sgr_color_ && !sgr_bold_) return;
  sgr_color_.reset();
  sgr_bold_ = false;
  if (color_) *out_ += "\033[0m";
}

void MarkupFilter::Value(std::string_view text) {
  HighlightValue();
  *out_ += text;
  Highlight();
}

void MarkupFilter::RawElement(const MarkupNode& node) {
  Highlight();
  *out_ += "[[[";
  Value(node.tag);
  for (std::string_view field : node.fields) {
    *out_ += ':';
    Value(field);
  }
  *out_ += "]]]";
  RestoreColor();
}

}  // namespace stacksym::cli
