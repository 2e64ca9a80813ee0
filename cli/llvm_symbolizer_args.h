// The llvm-symbolizer drop-in's command line as LLVM 16's llvm-symbolizer reads it (its option
// table: LLVM_SYMBOLIZER_OPTS first, then the arguments; @FILE response files; grouped
// one-letter options such as "-apCie=FILE"; its error messages). The options' meanings are
// in llvm_symbolizer_mode.cc; this is the part that can be tested without running anything.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym::cli {

// GNU-style tokens (LLVM's TokenizeGNUCommandLine): whitespace separates, single and double
// quotes group, a backslash escapes the next character (inside quotes too, as LLVM does).
std::vector<std::string> TokenizeGnuCommandLine(std::string_view text);

// Each "@FILE" argument replaced by FILE's tokens, recursively (a file that cannot be read, or
// one already being expanded, leaves the argument as it is).
std::vector<std::string> ExpandResponseFiles(const std::vector<std::string>& args);

// One-letter groups split as LLVM 16's option table splits them: "-apCi" as "-a" "-p" "-C"
// "-i"; "-e" takes the rest of its group ("-eFILE", "-e=FILE") or else the next argument; a
// letter no option has becomes "-x" alone (an unknown argument). An argument that is a whole
// option name with one dash ("-inlines", "-obj=F", which LLVM 14 took) stays as it is.
// `is_option_name(name)` tells whether "name" (without dashes or "=value") is one.
template <typename IsName>
std::vector<std::string> SplitLlvmShortGroups(const std::vector<std::string>& args,
                                              IsName is_option_name);

// True when `arg` is one of LLVM 16 llvm-symbolizer's option spellings ("--color",
// "--obj=F", "-e"), whether or not the drop-in implements it.
bool IsLlvm16Option(std::string_view arg);

// "unknown argument 'ARG'", with ", did you mean 'OPTION'?" when one of LLVM 16's option
// spellings is one edit away (as LLVM's OptTable::findNearest suggests).
std::string LlvmUnknownArgumentMessage(std::string_view spelling);

// --color=VALUE of --filter-markup: "always", "never", "auto" (colour when stdout is a colour
// terminal, also the default); nullopt for anything else (LLVM 16 reads such a value as
// undefined behaviour; the drop-in refuses it).
enum class LlvmColor { kAuto, kAlways, kNever };
std::optional<LlvmColor> ParseLlvmColor(std::string_view value);

// --- template definition ---

namespace llvm_args_detail {
constexpr std::string_view kFlagLetters = "aCfhipsv";  // -a -C -f -h -i -p -s -v
}

template <typename IsName>
std::vector<std::string> SplitLlvmShortGroups(const std::vector<std::string>& args,
                                              IsName is_option_name) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    if (arg.size() <= 2 || arg[0] != '-' || arg[1] == '-') {
      out.push_back(arg);
      continue;
    }
    std::string_view name(arg);
    name.remove_prefix(1);
    name = name.substr(0, name.find('='));
    if (name.size() > 1 && is_option_name(name)) {
      out.push_back(arg);
      continue;
    }
    std::string_view rest(arg);
    rest.remove_prefix(1);  // the letters still to read
    while (!rest.empty()) {
      char letter = rest[0];
      if (letter == 'e') {  // the module: "-e=FILE", "-eFILE", or "-e" and the next argument
        rest.remove_prefix(1);
        if (rest.starts_with('=')) rest.remove_prefix(1);
        out.push_back(rest.empty() ? std::string("-e") : "--obj=" + std::string(rest));
        break;
      }
      if (letter == 'f' && rest.size() > 1 && rest[1] == '=') {  // "-f=short"
        out.push_back("--functions" + std::string(rest.substr(1)));
        break;
      }
      if (llvm_args_detail::kFlagLetters.find(letter) != std::string_view::npos &&
          rest.size() > 1 &&
          rest[1] == '=') {  // a flag given a value: unknown, the whole remainder
        out.push_back("-" + std::string(rest));
        break;
      }
      out.push_back(std::string("-") + letter);  // a flag, or an unknown letter alone
      rest.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace stacksym::cli
