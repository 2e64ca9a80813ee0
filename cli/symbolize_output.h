// Output shared by every `symbolize` subcommand: human text (default), JSON lines (--json),
// and --output-style=llvm, which reproduces llvm-symbolizer's layout byte for byte where the
// information is the same (function line, then "file:line:column" or "??:0:0", a blank line
// after each address), so the two can be diffed. Also the address reader: addresses as
// arguments, or one per line on stdin when there are none.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cache_options.h"
#include "debug_dir_options.h"
#include "stacksym/symbolize.h"

namespace stacksym::cli {

enum class OutputStyle { kText, kJson, kLlvm };

struct OutputOptions {
  bool json = false;
  std::string style_name = "text";
  bool no_demangle = false;
  OutputStyle style() const;
};

// Adds --json, --output-style=text|json|llvm and --no-demangle.
void AddOutputOptions(CLI::App& app, OutputOptions* options);

// What every `symbolize` subcommand shares: --debug-dir, --no-default-debug-dir,
// --no-debug-info, --no-inlines and the output options.
struct SymbolizeCliOptions {
  bool no_debug_info = false;
  bool no_inlines = false;
  DebugDirCliOptions debug_dirs;
  unsigned threads = 0;
  CacheCliOptions cache;
  bool no_debuginfod = false;
  OutputOptions output;
  SymbolizeOptions ToSymbolizeOptions() const;
};
void AddSymbolizeOptions(CLI::App& app, SymbolizeCliOptions* options);

// Renders answer(0) ... answer(count - 1) and writes them to stdout in 64 KiB chunks, so a
// long batch streams instead of piling up in memory.
template <class AnswerFn>
void WriteAnswers(size_t count, const OutputOptions& options, AnswerFn&& answer) {
  std::string out;
  out.reserve(1 << 17);
  for (size_t i = 0; i < count; ++i) {
    AppendSymbolized(answer(i), options, &out);
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// Appends the rendering of one address (with its trailing newline(s)) to `out`.
void AppendSymbolized(const SymbolizedAddress& address, const OutputOptions& options,
                      std::string* out);
std::string FormatSymbolized(const SymbolizedAddress& address, const OutputOptions& options);

// Parses hex addresses (with or without 0x). With no arguments, reads stdin, one address per
// line (blank lines and '#' comments skipped). False + message on the first bad address.
bool ReadAddresses(const std::vector<std::string>& args, std::vector<uint64_t>* out,
                   std::string* error);
bool ParseHexAddress(std::string_view text, uint64_t* value);

// JSON string escaping (quotes included): \" \\ \n \t \r short, other control characters
// as \u00XX, the rest (UTF-8 included) as is, which is also what llvm::json writes.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace stacksym::cli
