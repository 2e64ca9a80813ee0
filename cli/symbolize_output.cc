#include "symbolize_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "base/hex.h"
#include "stacksym/remote.h"

namespace stacksym::cli {

namespace {

void AppendHex(uint64_t v, std::string* out) {
  char buf[kHexU64Size];
  out->append(buf, WriteHexU64(v, buf));
}

void AppendUint(uint64_t v, std::string* out) { *out += std::to_string(v); }

void AppendLocation(const SourceFrame& frame, std::string* out) {
  if (frame.file.empty()) {
    *out += "??:0:0";
    return;
  }
  *out += frame.file;
  *out += ':';
  AppendUint(frame.line, out);
  *out += ':';
  AppendUint(frame.column, out);
}

void AppendLlvm(const SymbolizedAddress& a, std::string* out) {
  if (!a.frames.empty()) {
    for (const SourceFrame& frame : a.frames) {
      *out += frame.function.empty() ? "??" : frame.function;
      *out += '\n';
      AppendLocation(frame, out);
      *out += '\n';
    }
  } else if (!a.reason && !a.symbol.empty()) {
    *out += a.symbol;
    *out += "\n??:0:0\n";
  } else {
    *out += "??\n??:0:0\n";
  }
  *out += '\n';
}

void AppendText(const SymbolizedAddress& a, std::string* out) {
  AppendHex(a.input, out);
  *out += "  ";
  if (a.reason) {
    *out += "?? (";
    *out += ReasonText(*a.reason);
    *out += ")";
    if (!a.module.empty()) *out += "  " + a.module;
    *out += '\n';
    return;
  }
  if (!a.symbol.empty()) {
    *out += a.symbol;
    *out += '+';
    AppendHex(a.offset, out);
  } else if (!a.frames.empty()) {
    *out += a.frames.back().function;
  }
  if (!a.module.empty()) *out += "  " + a.module;
  *out += '\n';
  for (const SourceFrame& frame : a.frames) {
    *out += frame.inlined ? "    inlined " : "    in ";
    *out += frame.function.empty() ? "??" : frame.function;
    *out += " at ";
    AppendLocation(frame, out);
    *out += '\n';
  }
}

void AppendJson(const SymbolizedAddress& a, std::string* out) {
  *out += "{\"address\":\"";
  AppendHex(a.input, out);
  *out += "\",\"vaddr\":\"";
  AppendHex(a.vaddr, out);
  *out += "\",\"module\":";
  AppendJsonString(a.module, out);
  if (a.reason) {
    *out += ",\"reason\":";
    AppendJsonString(ReasonName(*a.reason), out);
    *out += ",\"reason_text\":";
    AppendJsonString(ReasonText(*a.reason), out);
    *out += "}\n";
    return;
  }
  *out += ",\"symbol\":";
  AppendJsonString(a.symbol, out);
  *out += ",\"raw_symbol\":";
  AppendJsonString(a.raw_symbol, out);
  *out += ",\"symbol_address\":\"";
  AppendHex(a.symbol_address, out);
  *out += "\",\"symbol_size\":";
  AppendUint(a.symbol_size, out);
  *out += ",\"offset\":";
  AppendUint(a.offset, out);
  *out += ",\"frames\":[";
  for (size_t i = 0; i < a.frames.size(); ++i) {
    const SourceFrame& f = a.frames[i];
    if (i) *out += ',';
    *out += "{\"function\":";
    AppendJsonString(f.function, out);
    *out += ",\"raw_function\":";
    AppendJsonString(f.raw_function, out);
    *out += ",\"file\":";
    AppendJsonString(f.file, out);
    *out += ",\"line\":";
    AppendUint(f.line, out);
    *out += ",\"column\":";
    AppendUint(f.column, out);
    *out += f.inlined ? ",\"inlined\":true}" : ",\"inlined\":false}";
  }
  *out += "]}\n";
}

}  // namespace

OutputStyle OutputOptions::style() const {
  if (json || style_name == "json" || style_name == "JSON") return OutputStyle::kJson;
  if (style_name == "llvm" || style_name == "LLVM" || style_name == "GNU")
    return OutputStyle::kLlvm;
  return OutputStyle::kText;
}

void AddOutputOptions(CLI::App& app, OutputOptions* options) {
  app.add_flag("--json", options->json, "One JSON object per address (JSON lines)");
  app.add_option("--output-style", options->style_name,
                 "text (default), json, or llvm (llvm-symbolizer's layout, for diffing)")
      ->check(CLI::IsMember({"text", "json", "JSON", "llvm", "LLVM"}));
  app.add_flag("--no-demangle", options->no_demangle, "Keep raw (mangled) names");
}

SymbolizeOptions SymbolizeCliOptions::ToSymbolizeOptions() const {
  SymbolizeOptions options;
  options.demangle = !output.no_demangle;
  options.linkage_names = output.style() == OutputStyle::kJson;  // the only style printing them
  options.keep_dwarf_after_index_build = true;  // the command exits when done (KeepUntilExit)
  options.use_debug_info = !no_debug_info;
  options.inlines = !no_inlines;
  options.debug_dirs = debug_dirs.Resolve(options.debug_dirs);
  options.threads = threads;
  options.cache_dir = cache.Resolve();
  if (!no_debuginfod) options.fetcher = MakeDebuginfodFetcher({});
  return options;
}

void AddSymbolizeOptions(CLI::App& app, SymbolizeCliOptions* options) {
  app.add_flag("--no-debug-info", options->no_debug_info, "Use only the symbol tables, not DWARF");
  app.add_flag("--no-inlines", options->no_inlines, "Report only the out-of-line function");
  AddDebugDirOptions(app, &options->debug_dirs);
  app.add_option("--threads", options->threads,
                 "Threads for parsing debug info and resolving names (default: one per CPU)")
      ->check(CLI::Range(0u, 1024u));
  AddCacheOptions(app, &options->cache);
  app.add_flag("--no-debuginfod", options->no_debuginfod,
               "Do not fetch missing files from the servers in $DEBUGINFOD_URLS");
  AddOutputOptions(app, &options->output);
}

void AppendSymbolized(const SymbolizedAddress& address, const OutputOptions& options,
                      std::string* out) {
  switch (options.style()) {
    case OutputStyle::kText:
      return AppendText(address, out);
    case OutputStyle::kJson:
      return AppendJson(address, out);
    case OutputStyle::kLlvm:
      return AppendLlvm(address, out);
  }
}

std::string FormatSymbolized(const SymbolizedAddress& address, const OutputOptions& options) {
  std::string out;
  AppendSymbolized(address, options, &out);
  return out;
}

bool ParseHexAddress(std::string_view text, uint64_t* value) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  if (text.empty() || text.size() > 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int digit = HexDigit(c);
    if (digit < 0) return false;
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

bool ReadAddresses(const std::vector<std::string>& args, std::vector<uint64_t>* out,
                   std::string* error) {
  auto add = [&](std::string_view token) {
    uint64_t v;
    if (!ParseHexAddress(token, &v)) {
      *error = "invalid address '" + std::string(token) + "' (expected hex, with or without 0x)";
      return false;
    }
    out->push_back(v);
    return true;
  };
  if (!args.empty()) {
    for (const std::string& a : args) {
      if (!add(a)) return false;
    }
    return true;
  }
  // Read whole, then split: std::getline on std::cin takes a character at a time.
  std::string input;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    input.append(buffer, static_cast<size_t>(n));
  }
  std::string_view rest = input;
  while (!rest.empty()) {
    size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos || line[b] == '#') continue;
    size_t e = line.find_last_not_of(" \t\r");
    if (!add(line.substr(b, e - b + 1))) return false;
  }
  return true;
}

void AppendJsonString(std::string_view s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

}  // namespace stacksym::cli
