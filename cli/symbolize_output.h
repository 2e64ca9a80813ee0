// Output shared by every `symbolize` subcommand: human text (default), JSON lines (--json),
// and --output-style=llvm, which reproduces llvm-symbolizer's layout byte for byte where the
// information is the same (function line, then "file:line:column" or "??:0:0", a blank line
// after each address), so the two can be diffed. Also the address reader: addresses as
// arguments, or one per line on stdin when there are none.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

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

// Appends the rendering of one address (with its trailing newline(s)) to `out`.
void AppendSymbolized(const SymbolizedAddress& address, const OutputOptions& options,
                      std::string* out);
std::string FormatSymbolized(const SymbolizedAddress& address, const OutputOptions& options);

// Parses hex addresses (with or without 0x). With no arguments, reads stdin, one address per
// line (blank lines and '#' comments skipped). False + message on the first bad address.
bool ReadAddresses(const std::vector<std::string>& args, std::vector<uint64_t>* out,
                   std::string* error);
bool ParseHexAddress(std::string_view text, uint64_t* value);

// JSON string escaping (quotes included).
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace stacksym::cli
