#include "llvm_symbolizer_args.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

namespace stacksym::cli {
// (Named, not anonymous: the CLI compiles in unity batches.)
namespace llvm_symbolizer_args {

// LLVM 16 llvm-symbolizer's option spellings (its Opts.td), for suggestions.
constexpr std::string_view kSpellings[] = {"--addresses",
                                           "--adjust-vma=",
                                           "--adjust-vma",
                                           "--basenames",
                                           "--build-id=",
                                           "--build-id",
                                           "--cache-size=",
                                           "--cache-size",
                                           "--color",
                                           "--color=",
                                           "--debug-file-directory=",
                                           "--debug-file-directory",
                                           "--debuginfod",
                                           "--no-debuginfod",
                                           "--default-arch=",
                                           "--default-arch",
                                           "--demangle",
                                           "--no-demangle",
                                           "--filter-markup",
                                           "--functions",
                                           "--functions=",
                                           "--help",
                                           "--dwp=",
                                           "--dwp",
                                           "--dsym-hint=",
                                           "--dsym-hint",
                                           "--fallback-debug-path=",
                                           "--fallback-debug-path",
                                           "--inlines",
                                           "--no-inlines",
                                           "--obj=",
                                           "--obj",
                                           "--output-style=",
                                           "--output-style",
                                           "--pretty-print",
                                           "--print-source-context-lines=",
                                           "--print-source-context-lines",
                                           "--relative-address",
                                           "--relativenames",
                                           "--untag-addresses",
                                           "--no-untag-addresses",
                                           "--dia",
                                           "--verbose",
                                           "--version",
                                           "-a",
                                           "--print-address",
                                           "-C",
                                           "--exe=",
                                           "--exe",
                                           "-e",
                                           "-e=",
                                           "-f",
                                           "-f=",
                                           "-h",
                                           "-i",
                                           "--inlining",
                                           "-p",
                                           "-s",
                                           "-v",
                                           "--inlining=true",
                                           "--inlining=false",
                                           "-demangle=true",
                                           "-demangle=false",
                                           "--use-symbol-table=true"};

// Levenshtein distance with replacements.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

void Expand(const std::vector<std::string>& args, std::set<std::string>* open,
            std::vector<std::string>* out) {
  for (const std::string& arg : args) {
    if (arg.size() < 2 || arg[0] != '@' || open->count(arg.substr(1))) {
      out->push_back(arg);
      continue;
    }
    std::string path = arg.substr(1);
    std::ifstream file(path, std::ios::binary);
    if (!file) {  // stays an argument
      out->push_back(arg);
      continue;
    }
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    open->insert(path);
    Expand(TokenizeGnuCommandLine(text), open, out);
    open->erase(path);
  }
}

}  // namespace llvm_symbolizer_args

using llvm_symbolizer_args::EditDistance;
using llvm_symbolizer_args::Expand;
using llvm_symbolizer_args::kSpellings;

std::vector<std::string> TokenizeGnuCommandLine(std::string_view text) {
  std::vector<std::string> tokens;
  std::string token;
  bool in_token = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      if (in_token) tokens.push_back(std::move(token));
      token.clear();
      in_token = false;
      continue;
    }
    in_token = true;
    if (c == '\\' && i + 1 < text.size()) {
      token += text[++i];
    } else if (c == '\'' || c == '"') {
      char quote = c;
      for (++i; i < text.size() && text[i] != quote; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        token += text[i];
      }
    } else {
      token += c;
    }
  }
  if (in_token) tokens.push_back(std::move(token));
  return tokens;
}

std::vector<std::string> ExpandResponseFiles(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::set<std::string> open;
  Expand(args, &open, &out);
  return out;
}

bool IsLlvm16Option(std::string_view arg) {
  for (std::string_view spelling : kSpellings) {
    if (spelling.ends_with('=') ? arg.starts_with(spelling) : arg == spelling) return true;
  }
  return false;
}

std::optional<LlvmColor> ParseLlvmColor(std::string_view value) {
  if (value == "always") return LlvmColor::kAlways;
  if (value == "never") return LlvmColor::kNever;
  if (value == "auto") return LlvmColor::kAuto;
  return std::nullopt;
}

std::string LlvmUnknownArgumentMessage(std::string_view spelling) {
  size_t best = 2;  // suggested at distance 1 at most
  std::string nearest;
  for (std::string_view candidate : kSpellings) {
    // As findNearest: names shorter than 4 characters ("-a", "--obj") are not suggested; a
    // spelling ending in '=' is compared up to the given '=', the given value kept.
    std::string_view name = candidate.substr(candidate.find_first_not_of('-'));
    if (name.size() < 4) continue;
    std::string normalized(spelling);
    std::string_view value;
    bool delimited = candidate.ends_with('=');
    if (delimited) {
      size_t eq = spelling.find('=');
      normalized = std::string(spelling.substr(0, eq));
      if (eq != std::string_view::npos) {
        normalized += '=';
        value = spelling.substr(eq + 1);
      }
    }
    size_t distance = EditDistance(candidate, normalized);
    if (delimited && value.empty()) ++distance;  // a spelling that needs a value: less likely
    if (distance < best) {
      best = distance;
      nearest = std::string(candidate) + std::string(value);
    }
  }
  std::string message = "unknown argument '" + std::string(spelling) + "'";
  if (!nearest.empty()) message += ", did you mean '" + nearest + "'?";
  return message;
}

}  // namespace stacksym::cli
