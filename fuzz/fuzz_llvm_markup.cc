// Fuzzes the llvm-symbolizer drop-in's markup parser and filter (cli/llvm_markup_parser.cc,
// cli/llvm_markup_filter.cc) on arbitrary logs: no crash, and per line the nodes cover the line
// exactly, in order; an element is "{{{" tag [":" fields joined by ':'] "}}}" with a tag and
// no "}}}" inside; text between elements is split at every SGR sequence. The filter then runs
// over the lines (with and without colour) against a symbolizer that answers every address.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "llvm_markup_filter.h"
#include "llvm_markup_parser.h"

namespace {

using stacksym::cli::MarkupFrame;
using stacksym::cli::MarkupNode;

void CheckNodes(std::string_view line, std::span<const MarkupNode> nodes) {
  const char* at = line.data();
  for (const MarkupNode& node : nodes) {
    if (node.text.data() != at || node.text.empty()) std::abort();  // contiguous, in order
    at += node.text.size();
    if (!node.is_element()) {
      size_t length = 0;
      size_t sgr = stacksym::cli::FindMarkupSgr(node.text, &length);
      // An SGR sequence is a node of its own.
      if (sgr != std::string_view::npos && !(sgr == 0 && length == node.text.size())) std::abort();
      continue;
    }
    std::string rebuilt = "{{{" + std::string(node.tag);
    for (size_t i = 0; i < node.fields.size(); ++i) rebuilt += ":" + std::string(node.fields[i]);
    rebuilt += "}}}";
    if (rebuilt != node.text || node.tag.find(':') != std::string_view::npos ||
        node.text.substr(3, node.text.size() - 6).find("}}}") != std::string_view::npos)
      std::abort();
  }
  if (at != line.data() + line.size()) std::abort();
}

class AnsweringSymbolizer : public stacksym::cli::MarkupSymbolizer {
 public:
  MarkupFrame Code(std::span<const uint8_t> build_id, uint64_t address,
                   std::string* error) override {
    if (build_id.size() == 1) *error = "could not find build ID";
    if (address % 3 == 0) return {};
    return {"f" + std::to_string(address), address % 2 ? "a.c" : "", 1, 2};
  }
  std::vector<MarkupFrame> InlinedCode(std::span<const uint8_t> build_id, uint64_t address,
                                       std::string* error) override {
    std::vector<MarkupFrame> frames(address % 4);
    for (MarkupFrame& frame : frames) frame = Code(build_id, address++, error);
    return frames;
  }
  std::string DataName(std::span<const uint8_t> build_id, uint64_t address,
                       std::string* error) override {
    return address % 2 ? "" : "d" + std::to_string(address);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view log(reinterpret_cast<const char*>(data), size);
  stacksym::cli::MarkupParser parser;
  AnsweringSymbolizer symbolizer;
  stacksym::cli::MarkupFilter plain(symbolizer, false, false);
  stacksym::cli::MarkupFilter colored(symbolizer, true, true);
  std::string out, err, line;
  while (!log.empty()) {
    size_t end = log.find('\n');
    line.assign(log.substr(0, end));
    line += '\n';
    log.remove_prefix(end == std::string_view::npos ? log.size() : end + 1);
    CheckNodes(line, parser.Parse(line));
    plain.Filter(line, &out, &err);
    colored.Filter(line, &out, &err);
    out.clear();
    err.clear();
  }
  plain.Finish(&out);
  colored.Finish(&out);
  return 0;
}
