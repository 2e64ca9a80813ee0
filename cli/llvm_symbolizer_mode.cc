#include "llvm_symbolizer_mode.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "base/hex.h"
#include "command.h"
#include "llvm_demangle.h"
#include "llvm_json_pretty.h"
#include "llvm_markup_filter.h"
#include "llvm_source_context.h"
#include "llvm_symbolizer_args.h"
#include "llvm_symbolizer_names.h"
#include "llvm_symbolizer_request.h"
#include "stacksym/build_id.h"
#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/elf.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"
#include "symbolize_output.h"

namespace stacksym::cli {
namespace {

enum class FunctionNames { kNone, kLinkage, kShort };
enum class Style { kLlvm, kGnu, kJson };

struct Config {
  bool inlines = true;
  bool demangle = true;
  bool print_address = false;
  bool basenames = false;
  bool relativenames = false;  // --relativenames: paths without the compilation directory
  bool pretty = false;         // --pretty-print: "function at file:line:column", one line a frame
  bool verbose = false;        // --verbose: each location as a block of named fields
  uint64_t adjust_vma = 0;     // subtracted from every address before it is looked up
  int source_lines = 0;        // --print-source-context-lines
  FunctionNames functions = FunctionNames::kLinkage;
  Style style = Style::kLlvm;
  std::string obj;
  std::vector<uint8_t> build_id;  // --build-id: the module of address-only requests
  // --debuginfod / --no-debuginfod: debug files (and BUILDID: modules) no debug dir has are
  // fetched from $DEBUGINFOD_URLS, by default when it is set (as llvm-symbolizer 16 does).
  bool debuginfod = true;
  bool debuginfod_given = false;  // --debuginfod itself: LLVM's cache even without URLs
  std::vector<std::string> debug_dirs;
  std::string dwp;  // --dwp: the split-DWARF package of every module
  // --fallback-debug-path: where llvm-symbolizer looks for .gnu_debuglink files under the
  // binary's absolute directory in place of /usr/lib/debug.
  std::string fallback_debug_path;
  std::vector<std::string> inputs;  // positional arguments: requests, like stdin lines
  // Hidden (tests): DATA answers lose a DW_AT_decl_file written as DW_FORM_implicit_const,
  // as llvm-symbolizer 15 and 16 do, so that the answers can be compared byte for byte.
  bool llvm16_decl_file = false;
  // --untag-addresses (default) / --no-untag-addresses: symbol addresses without their top
  // byte (memory tags), as llvm-symbolizer 16 reads them.
  bool untag_addresses = true;
  // --filter-markup: stdin is a log with symbolizer markup (llvm_markup_filter.h); --color,
  // --color=always|never|auto colour its output (auto: when stdout is a colour terminal).
  bool filter_markup = false;
  LlvmColor color = LlvmColor::kAuto;
};

// "true"/"false"/"1"/"0" (cl::opt<bool> spelling); empty value means true.
bool ParseBool(std::string_view value, bool* out) {
  if (value.empty() || value == "true" || value == "TRUE" || value == "True" || value == "1") {
    *out = true;
    return true;
  }
  if (value == "false" || value == "FALSE" || value == "False" || value == "0") {
    *out = false;
    return true;
  }
  return false;
}

constexpr const char* kUsage =
    "OVERVIEW: llvm-symbolizer (stacksym's drop-in)\n\n"
    "USAGE: llvm-symbolizer [options] addresses...\n\n"
    "Requests (arguments, else stdin lines): [CODE|DATA|FRAME] \"module[:arch]\" address,\n"
    "the module also as FILE:path or BUILDID:hex (found as <debug dir>/.build-id/xx/rest.debug),\n"
    "or addresses alone with --obj or --build-id.\n\n"
    "OPTIONS:\n"
    "  --obj=FILE, -e FILE, --exe=FILE   module of address-only requests\n"
    "  --build-id=HEX                     module of address-only requests, by GNU build ID\n"
    "  --inlines, -i, --inlining[=BOOL]   report inlined frames (default)\n"
    "  --no-inlines                       report only the out-of-line function\n"
    "  --demangle, -C, --demangle=BOOL    demangle names (default)\n"
    "  --no-demangle                      keep linkage names\n"
    "  --functions[=linkage|short|none]   print function names (default linkage); -f\n"
    "  --output-style=LLVM|GNU|JSON       answer layout (default LLVM)\n"
    "  --print-address, --addresses, -a   print the address before its answer\n"
    "  --basenames, -s                    strip directories from file names\n"
    "  --relativenames                    file names without the compilation directory\n"
    "  --pretty-print, -p                 one line a frame: \"function at file:line:column\"\n"
    "  --verbose                          each location as named fields (start line, ...)\n"
    "  --adjust-vma=N                     subtract N from every address before the lookup\n"
    "  --print-source-context-lines=N     print N source lines around each answer\n"
    "  --debug-file-directory=DIR         root of separate debug files\n"
    "  --dwp=FILE                         split-DWARF package of every module (default:\n"
    "                                     MODULE.dwp)\n"
    "  --fallback-debug-path=DIR          root of .gnu_debuglink files, looked for under the\n"
    "                                     module's directory (before /usr/lib/debug)\n"
    "  --no-untag-addresses               keep symbols' top address byte (memory tags)\n"
    "  --debuginfod, --no-debuginfod      fetch missing debug files from $DEBUGINFOD_URLS\n"
    "                                     (default: when it is set)\n"
    "  --filter-markup                    filter symbolizer markup ({{{pc:0x...}}}) from stdin\n"
    "  --color[=always|never|auto]        colour the filtered log (default auto: on a\n"
    "                                     terminal)\n"
    "  --default-arch=ARCH, --use-symbol-table, --relative-address: accepted (no effect on\n"
    "  x86_64 ELF, as in llvm-symbolizer)\n"
    "Short options may be grouped (-pai, -Cfe FILE, -apCie=FILE). Options are also read\n"
    "from LLVM_SYMBOLIZER_OPTS (before the command line's).\n\n"
    "Pass @FILE as argument to read options from FILE.\n";

// The tool's name, then the version line LLVM's tools print (llvm-symbolizer 16's command
// line, messages and answers are what the drop-in follows).
constexpr const char* kVersion =
    "llvm-symbolizer\n"
    "  stacksym 0.1 drop-in, LLVM version 16.0.6 command line\n";

// The option names ParseFlags takes (also with one dash, as LLVM 14 did), space-separated.
constexpr std::string_view kOptionNames =
    " obj exe e build-id inlines inlining i no-inlines demangle C no-demangle functions f"
    " output-style print-address addresses a basenames s relativenames pretty-print p verbose"
    " adjust-vma print-source-context-lines debuginfod no-debuginfod debug-file-directory"
    " fallback-debug-path dwp default-arch use-symbol-table relative-address"
    " x-llvm16-decl-file filter-markup color help h version v ";

bool IsOptionName(std::string_view name) {
  return kOptionNames.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// False (after printing why) on a bad command line; *exit_now set for --help/--version.
bool ParseFlags(const std::vector<std::string>& given, Config* config, bool* exit_now) {
  const std::vector<std::string> args = SplitLlvmShortGroups(given, IsOptionName);
  auto fail = [](const std::string& arg, const char* why) {
    std::fprintf(stderr, "llvm-symbolizer: %s '%s'. Try: 'llvm-symbolizer --help'\n", why,
                 arg.c_str());
    return false;
  };
  // As LLVM 16's option table: a missing value and every unknown argument are reported (the
  // missing value first), then the command exits 1; --help and --version only without them.
  std::string missing;
  std::vector<std::string> unknown;
  bool help = false, version = false;
  bool color_flag = false;  // "--color" alone wins over every "--color=", as in LLVM 16
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      config->inputs.push_back(arg);
      continue;
    }
    std::string_view body(arg);
    body.remove_prefix(body.starts_with("--") ? 2 : 1);
    std::string_view name = body;
    std::string_view value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string_view::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    // Options that take a value, given as "--opt=v" or "--opt v".
    auto take_value = [&](std::string* out) {
      if (has_value) {
        *out = std::string(value);
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    auto flag = [&](bool* out) { return ParseBool(value, out); };
    if (has_value && name.size() == 1 && arg[1] != '-') {  // "-a=1": LLVM 16 knows no such
      unknown.push_back(arg);
      continue;
    }
    if (name == "obj" || name == "exe" || name == "e") {
      if (!take_value(&config->obj)) missing = arg;
    } else if (name == "build-id") {
      std::string hex;
      if (!take_value(&hex)) {
        missing = arg;
        continue;
      }
      std::optional<std::vector<uint8_t>> id = ParseLlvmBuildId(hex);
      if (!id) {
        std::fprintf(stderr, "--build-id=: expected a build ID, but got '%s'\n", hex.c_str());
        return false;
      }
      config->build_id = std::move(*id);
    } else if (name == "inlines" || name == "inlining" || name == "i") {
      if (!flag(&config->inlines)) return fail(arg, "Invalid boolean value in");
    } else if (name == "no-inlines") {
      config->inlines = false;
    } else if (name == "demangle" || name == "C") {
      if (!flag(&config->demangle)) return fail(arg, "Invalid boolean value in");
    } else if (name == "no-demangle") {
      config->demangle = false;
    } else if (name == "functions" || name == "f") {
      // The value is optional (-f alone means linkage), so it is only taken with '='.
      if (!has_value || value == "linkage") {
        config->functions = FunctionNames::kLinkage;
      } else if (value == "short") {
        config->functions = FunctionNames::kShort;
      } else if (value == "none") {
        config->functions = FunctionNames::kNone;
      } else {
        return fail(arg, "Unsupported --functions value (linkage, short and none) in");
      }
    } else if (name == "output-style") {
      std::string style;
      if (!take_value(&style)) {
        missing = arg;
        continue;
      }
      if (style == "LLVM") {
        config->style = Style::kLlvm;
      } else if (style == "GNU") {
        config->style = Style::kGnu;
      } else if (style == "JSON") {
        config->style = Style::kJson;
      } else {
        return fail(arg, "Unsupported --output-style (LLVM, GNU and JSON are supported) in");
      }
    } else if (name == "print-address" || name == "addresses" || name == "a") {
      if (!flag(&config->print_address)) return fail(arg, "Invalid boolean value in");
    } else if (name == "basenames" || name == "s") {
      if (!flag(&config->basenames)) return fail(arg, "Invalid boolean value in");
      config->relativenames = false;  // the last of the two decides
    } else if (name == "relativenames") {
      if (!flag(&config->relativenames)) return fail(arg, "Invalid boolean value in");
      config->basenames = false;
    } else if (name == "pretty-print" || name == "p") {
      if (!flag(&config->pretty)) return fail(arg, "Invalid boolean value in");
    } else if (name == "verbose") {
      if (!flag(&config->verbose)) return fail(arg, "Invalid boolean value in");
    } else if (name == "adjust-vma" || name == "print-source-context-lines") {
      std::string text;
      if (!take_value(&text)) {
        missing = arg;
        continue;
      }
      uint64_t number = 0;
      bool ok;
      // (Numbers as llvm::to_integer reads them: 0x hex, 0 octal, else decimal.)
      if (name == "adjust-vma") {
        ok = ParseLlvmAddress(text, &number);
        config->adjust_vma = number;
      } else {
        // LLVM reads it into an int: a negative count is taken (and prints no context).
        bool negative = text.starts_with('-');
        ok = ParseLlvmAddress(std::string_view(text).substr(negative ? 1 : 0), &number) &&
             number <= (negative ? 0x80000000u : 0x7fffffffu);
        config->source_lines = negative ? 0 : static_cast<int>(number);
      }
      if (!ok) {
        std::fprintf(stderr, "--%s=: expected a non-negative integer, but got '%s'\n",
                     std::string(name).c_str(), text.c_str());
        return false;
      }
    } else if (name == "debuginfod") {
      if (!flag(&config->debuginfod)) return fail(arg, "Invalid boolean value in");
      config->debuginfod_given = config->debuginfod;
    } else if (name == "untag-addresses" && arg.starts_with("--") && !has_value) {
      config->untag_addresses = true;
    } else if (name == "no-untag-addresses" && arg.starts_with("--") && !has_value) {
      config->untag_addresses = false;
    } else if (name == "no-debuginfod") {
      config->debuginfod = false;
      config->debuginfod_given = false;
    } else if (name == "debug-file-directory") {
      std::string dir;
      if (!take_value(&dir)) {
        missing = arg;
        continue;
      }
      config->debug_dirs.push_back(dir);
    } else if (name == "fallback-debug-path") {
      if (!take_value(&config->fallback_debug_path)) {
        missing = arg;
        continue;
      }
    } else if (name == "dwp") {
      if (!take_value(&config->dwp)) {
        missing = arg;
        continue;
      }
    } else if (name == "default-arch") {
      std::string ignored;
      if (!take_value(&ignored)) {
        missing = arg;
        continue;
      }
    } else if (name == "use-symbol-table" || name == "relative-address") {
      bool ignored;
      if (!flag(&ignored)) return fail(arg, "Invalid boolean value in");
    } else if (name == "x-llvm16-decl-file") {
      if (!flag(&config->llvm16_decl_file)) return fail(arg, "Invalid boolean value in");
    } else if (name == "filter-markup" && !has_value) {
      config->filter_markup = true;
    } else if (name == "color" && !has_value) {
      color_flag = true;
    } else if (name == "color") {
      std::optional<LlvmColor> color = ParseLlvmColor(value);
      if (!color) return fail(arg, "Unsupported --color value (always, never and auto) in");
      config->color = *color;
    } else if (name == "help" || name == "h") {
      help = true;
    } else if (name == "version" || name == "v") {
      version = true;
    } else if (name == "cache-size" || name == "dsym-hint") {
      std::string ignored;  // the binaries kept in memory; Mach-O bundles: no effect here
      if (!take_value(&ignored)) {
        missing = arg;
        continue;
      }
    } else if (!arg.starts_with("--") && IsLlvm16Option(arg)) {
      unknown.push_back(arg);  // "-demangle=maybe": LLVM 16 takes =true and =false only
    } else if (IsLlvm16Option(arg)) {
      std::fprintf(stderr, "error: '%s' is not supported by stacksym's llvm-symbolizer\n",
                   arg.c_str());
      return false;
    } else {
      unknown.push_back(arg);
    }
  }
  if (!missing.empty()) std::fprintf(stderr, "error: %s: missing argument\n", missing.c_str());
  for (const std::string& arg : unknown)
    std::fprintf(stderr, "error: %s\n", LlvmUnknownArgumentMessage(arg).c_str());
  if (!missing.empty() || !unknown.empty()) return false;
  if (help || version) {
    std::fputs(help ? kUsage : kVersion, stdout);
    *exit_now = true;
    return true;
  }
  if (color_flag) config->color = LlvmColor::kAlways;
  // (The markup filter reads no requests: as LLVM 16, it does not mind both.)
  if (!config->filter_markup && !config->obj.empty() && !config->build_id.empty()) {
    std::fprintf(stderr, "error: cannot specify both --build-id and --obj\n");
    return false;
  }
  return true;
}

struct Module {
  std::unique_ptr<ElfSymbolizer> symbolizer;  // null when the file could not be used
  std::unique_ptr<LlvmSymbolNames> names;     // llvm-symbolizer's view of its symbols
};

// Why `path` could not be opened, in llvm-symbolizer 14's words (its JSON "Error" message):
// the system's for files that cannot be read, its object-file message for anything else.
std::string LlvmOpenError(const std::string& path, const Error& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat st;
  bool is_dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  char magic[4] = {};
  ssize_t n = is_dir ? 0 : ::read(fd, magic, sizeof magic);
  ::close(fd);
  if (is_dir) return std::strerror(EISDIR);
  if (n != 4 || std::memcmp(magic, ELFMAG, SELFMAG) != 0)
    return "The file was not recognized as a valid object file";
  return error.ToString();  // an ELF file stacksym cannot use: its own reason
}

// LLVM 16's debuginfod client as llvm-symbolizer uses it: a file in its cache directory
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/llvm-debuginfod/client) named by the build ID's hash
// (LlvmDebuginfodCacheName), then the servers of $DEBUGINFOD_URLS (stacksym's fetcher).
class LlvmCacheFetcher : public BuildIdFetcher {
 public:
  explicit LlvmCacheFetcher(std::shared_ptr<const BuildIdFetcher> servers)
      : servers_(std::move(servers)) {
    if (const char* dir = std::getenv("DEBUGINFOD_CACHE_PATH"); dir && *dir) {
      dir_ = dir;
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
      dir_ = std::string(xdg) + "/llvm-debuginfod/client";
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      dir_ = std::string(home) + "/.cache/llvm-debuginfod/client";
    }
  }
  bool has_urls() const { return servers_ != nullptr; }

  Result<std::string> Fetch(std::span<const uint8_t> build_id, Kind kind) const override {
    if (!dir_.empty()) {
      std::string path = dir_ + "/" + LlvmDebuginfodCacheName(build_id, kind == Kind::kDebugInfo);
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
    }
    if (servers_) return servers_->Fetch(build_id, kind);
    return MakeError(ErrorCode::kNotFound, "not in LLVM's debuginfod cache");
  }

 private:
  std::shared_ptr<const BuildIdFetcher> servers_;
  std::string dir_;
};

// The drop-in's answers, to requests and (as MarkupSymbolizer) to --filter-markup's questions.
class Session : public MarkupSymbolizer {
 public:
  explicit Session(const Config& config) : config_(config), source_(config.source_lines) {
    options_.demangle = config.demangle;
    options_.inlines = true;  // --no-inlines still needs the innermost location
    options_.threads = 0;
    options_.short_function_names = config.functions == FunctionNames::kShort;
    options_.start_addresses = true;  // JSON StartAddress
    options_.relative_paths = config.relativenames;
    options_.dwp_path = config.dwp;
    options_.symbols_from_debug_file = false;  // llvm-symbolizer names from the binary's own tables
    options_.plt_names = false;          // nor a PLT stub perf's way ("puts@plt"): "_init" or "??"
    options_.dwo_beside_binary = false;  // a .dwo only at comp_dir/dwo_name
    // llvm-symbolizer searches it instead of /usr/lib/debug for a debuglink name under the
    // module's directory; first here, where every debug dir is searched both ways (a build ID
    // match is checked, a debuglink one by CRC, so an extra root cannot give a wrong file).
    if (!config.fallback_debug_path.empty())
      options_.debug_dirs.insert(options_.debug_dirs.begin(), config.fallback_debug_path);
    // As llvm-symbolizer 16: its debuginfod client (LLVM's own cache, then $DEBUGINFOD_URLS)
    // with --debuginfod, by default when URLs are set, and from the first build-ID request on
    // unless --no-debuginfod.
    if (config.debuginfod) {
      llvm_fetcher_ =
          std::make_shared<LlvmCacheFetcher>(MakeDebuginfodFetcher({}));  // (null: no URLs)
      if (config.debuginfod_given || llvm_fetcher_->has_urls()) options_.fetcher = llvm_fetcher_;
    }
    if (!config.debug_dirs.empty()) {
      options_.debug_dirs.insert(options_.debug_dirs.end(), config.debug_dirs.begin(),
                                 config.debug_dirs.end());
    }
  }

  // Answers one request line (echoed back when it cannot be parsed, as llvm-symbolizer does).
  // `list_separator`: for JSON answers to command-line requests, which llvm-symbolizer prints
  // as one array ('[' before the first, ',' before the others); 0 otherwise.
  void Answer(std::string_view line, char list_separator = 0) {
    std::string written_module;
    std::optional<LlvmRequest> request =
        ParseLlvmRequest(line, config_.obj, &written_module, config_.build_id);
    out_.clear();
    asked_ = nullptr;
    if (list_separator) out_ += list_separator;
    if (config_.style == Style::kJson) {
      if (config_.pretty && list_separator) out_ += "\n  ";  // an element of the array
      const size_t start = out_.size();
      AnswerJson(line, request, written_module);
      if (config_.pretty) {
        std::string compact = out_.substr(start);
        out_.resize(start);
        AppendPrettyJson(compact, list_separator ? 2 : 0, &out_);
      }
      if (!list_separator) out_ += '\n';
    } else if (!request) {
      out_.append(line);
      out_ += '\n';
    } else {
      if (config_.print_address) {
        out_ += HexU64(request->address);  // as asked, before --adjust-vma
        out_ += config_.pretty ? ": " : "\n";
      }
      std::string error;
      Module* module = Open(*request, &error);
      if (!error.empty())
        std::fprintf(stderr, "LLVMSymbolizer: error reading file: %s\n", error.c_str());
      const uint64_t address = request->address - config_.adjust_vma;  // wraps, as in LLVM
      switch (request->command) {
        case LlvmCommand::kCode:
          AppendCode(module, address);
          break;
        case LlvmCommand::kData:
          AppendData(module, address);
          break;
        case LlvmCommand::kFrame:
          AppendFrameLocals(module, address);
          break;
      }
      if (config_.style == Style::kLlvm) out_ += '\n';
    }
    // What its DWARF holds that LLVM warns about, as llvm-symbolizer reports it (on stderr,
    // while answering: before the answer).
    if (asked_ != nullptr) {
      for (const std::string& warning : asked_->symbolizer->TakeWarnings())
        std::fprintf(stderr, "warning: %s\n", warning.c_str());
    }
    std::fwrite(out_.data(), 1, out_.size(), stdout);
    std::fflush(stdout);  // the sanitizer waits for this answer before sending the next
  }

  // --filter-markup's questions: a module by build ID, found and opened as for BUILDID:
  // requests, and the answers a CODE (with or without inlines) or DATA request gets.
  MarkupFrame Code(std::span<const uint8_t> build_id, uint64_t address,
                   std::string* error) override {
    Module* module = OpenBuildId(build_id, error);
    if (!module) return {};
    return ToMarkupFrame(CodeLines(module, address, CodeQuery::kCode).front());
  }

  std::vector<MarkupFrame> InlinedCode(std::span<const uint8_t> build_id, uint64_t address,
                                       std::string* error) override {
    std::vector<MarkupFrame> frames;
    if (Module* module = OpenBuildId(build_id, error)) {
      for (const CodeLine& line : CodeLines(module, address, CodeQuery::kInlined))
        frames.push_back(ToMarkupFrame(line));
    }
    return frames;
  }

  std::string DataName(std::span<const uint8_t> build_id, uint64_t address,
                       std::string* error) override {
    Module* module = OpenBuildId(build_id, error);
    std::optional<LlvmSymbolNames::Entry> symbol =
        module ? module->names->Find(address) : std::nullopt;
    return symbol ? Name(symbol->name) : std::string();
  }

 private:
  // One line of a CODE answer: a function and where in it.
  struct CodeLine {
    std::string function;                   // empty: unknown
    const SourceFrame* location = nullptr;  // null or empty file: unknown
    const SourceFrame* start = nullptr;     // the DWARF function's start_* (null: unknown)
    std::optional<uint64_t> start_address;  // JSON StartAddress, when known
    // The text DWARF embeds for the location's file (innermost location only, as LLVM
    // has it), printed as source context instead of the file's (with a context asked).
    std::optional<std::string> embedded_source{};
  };

  Module* OpenBuildId(std::span<const uint8_t> build_id, std::string* error) {
    LlvmRequest request;
    request.build_id.assign(build_id.begin(), build_id.end());
    request.module = LlvmBuildIdName(build_id);
    return Open(request, error);
  }

  MarkupFrame ToMarkupFrame(const CodeLine& line) const {
    MarkupFrame frame;
    if (config_.functions != FunctionNames::kNone) frame.function = line.function;
    frame.file = FileName(line.location);
    if (!frame.file.empty()) {
      frame.line = line.location->line;
      frame.column = line.location->column;
    }
    return frame;
  }

  // The source context under a frame: from the text DWARF embeds for it, else its file.
  std::string SourceContext(const CodeLine& frame, const std::string& file, int64_t line) {
    if (frame.embedded_source)
      return FormatSourceContext(*frame.embedded_source, line, source_.lines());
    return source_.Around(file, line);
  }

  // The file llvm-symbolizer 16 takes for a build ID: <dir>/.build-id/xx/rest.debug under
  // each --debug-file-directory (/usr/lib/debug when none is given), the first that exists
  // and carries that build ID or none at all (llvm-symbolizer only asks that it exists; a
  // file there without a build ID note, such as an object, contradicts nothing), else the
  // debug file debuginfod has for it; empty when none.
  std::string FindByBuildId(std::span<const uint8_t> build_id) {
    if (build_id.size() < 2) return {};
    if (llvm_fetcher_) options_.fetcher = llvm_fetcher_;  // on for the rest of the run
    std::vector<std::string> dirs = config_.debug_dirs;
    if (dirs.empty()) dirs.push_back(kDefaultDebugDir);
    for (const std::string& dir : dirs) {
      std::string path = BuildIdPaths(dir, build_id)[1];  // the ".debug" one
      Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
      if (!elf) continue;
      std::span<const uint8_t> found = (*elf)->build_id();
      if (found.empty() || std::equal(found.begin(), found.end(), build_id.begin(), build_id.end()))
        return path;
    }
    if (options_.fetcher) {  // (the fetcher checks the build ID of what it brings)
      Result<std::string> fetched =
          options_.fetcher->Fetch(build_id, BuildIdFetcher::Kind::kDebugInfo);
      if (fetched) return *fetched;
    }
    return {};
  }

  // The module a request names, or nullptr (with *error set as for Open). A build ID that no
  // debug dir has is reported at every request, as llvm-symbolizer 16 does.
  Module* Open(const LlvmRequest& request, std::string* error) {
    if (request.build_id.empty()) return Open(request.module, error);
    auto found = build_id_paths_.find(request.module);
    if (found == build_id_paths_.end())
      found = build_id_paths_.emplace(request.module, FindByBuildId(request.build_id)).first;
    if (found->second.empty()) {
      *error = "could not find build ID '" + request.module + "'";
      return nullptr;
    }
    return Open(found->second, error);
  }

  // The module for `path`, or nullptr. The first time a path fails, *error gets why (in
  // llvm-symbolizer's words); later requests for it get no error, as in llvm-symbolizer,
  // which reports a file once and then answers as for an unknown address.
  Module* Open(const std::string& path, std::string* error) {
    error->clear();
    auto it = modules_.find(path);
    if (it == modules_.end()) {
      Module module;
      auto opened = ElfSymbolizer::Open(path, options_);
      if (opened) {
        module.symbolizer = std::move(*opened);
        module.names =
            std::make_unique<LlvmSymbolNames>(module.symbolizer->elf(), config_.untag_addresses);
        if (!module.names->error().empty()) {  // a file llvm-symbolizer 16 cannot read
          *error = module.names->error();
          module = Module();
        }
      } else {
        *error = LlvmOpenError(path, opened.error());
      }
      it = modules_.emplace(path, std::move(module)).first;
    }
    if (!it->second.symbolizer) return nullptr;
    asked_ = &it->second;
    return asked_;
  }

  std::string Name(std::string_view raw) const {
    return config_.demangle ? DemangleLikeLlvm(raw) : std::string(raw);
  }

  // A DWARF or symbol-table frame's name, with a GCC clone suffix as LLVM prints it (the
  // symbolizer demangles with libiberty: "[clone .isra.0]").
  std::string FrameName(const SourceFrame& frame) const {
    if (config_.demangle && frame.raw_function.starts_with("_Z") &&
        frame.raw_function.find('.') != std::string::npos) {
      return Name(frame.raw_function);
    }
    return frame.function;
  }

  std::string FileName(const SourceFrame* location) const {
    if (!location) return std::string();
    return BaseName(location->file);
  }

  std::string BaseName(const std::string& file) const {
    if (file.empty()) return std::string();
    size_t slash = config_.basenames ? file.rfind('/') : std::string::npos;
    return slash == std::string::npos ? file : file.substr(slash + 1);
  }

  // The JSON StartAddress / --verbose "Function start address" of a frame, when known.
  static std::optional<uint64_t> StartAddress(const CodeLine& frame) {
    if (frame.start_address) return frame.start_address;
    if (frame.start && frame.start->has_start_address) return frame.start->start_address;
    return std::nullopt;
  }

  // One frame of a text answer; `inlined`: not the first of its chain (--pretty-print then
  // says "(inlined by)").
  void AppendFrame(const CodeLine& frame, bool inlined) {
    if (config_.functions != FunctionNames::kNone) {
      if (config_.pretty && inlined) out_ += " (inlined by) ";
      out_ += frame.function.empty() ? "??" : frame.function;
      out_ += config_.pretty ? " at " : "\n";
    }
    std::string file = FileName(frame.location);
    const uint32_t line = file.empty() ? 0 : frame.location->line;
    const uint32_t column = file.empty() ? 0 : frame.location->column;
    const uint32_t discriminator = frame.location ? frame.location->discriminator : 0;
    if (file.empty()) file = "??";
    if (config_.verbose) {
      // LLVM's printVerbose: no source context, the start address in LLVM style only.
      out_ += "  Filename: " + file + '\n';
      if (frame.start && frame.start->start_line != 0) {
        out_ += "  Function start filename: " + BaseName(frame.start->start_file) + '\n';
        out_ += "  Function start line: " + std::to_string(frame.start->start_line) + '\n';
      }
      if (std::optional<uint64_t> start = StartAddress(frame);
          start && config_.style == Style::kLlvm) {
        out_ += "  Function start address: " + HexU64(*start) + '\n';
      }
      out_ += "  Line: " + std::to_string(line) + '\n';
      out_ += "  Column: " + std::to_string(column) + '\n';
      if (discriminator != 0) out_ += "  Discriminator: " + std::to_string(discriminator) + '\n';
      return;
    }
    out_ += file;
    out_ += ':';
    out_ += std::to_string(line);
    if (config_.style == Style::kLlvm) {
      out_ += ':';
      out_ += std::to_string(column);
    } else if (file != "??" && discriminator != 0) {
      // GNU style: as addr2line (LLVM's GNUPrinter).
      out_ += " (discriminator ";
      out_ += std::to_string(discriminator);
      out_ += ')';
    }
    out_ += '\n';
    // (An unknown file is looked for as "??", as LLVM does.)
    out_ += SourceContext(frame, file, line);
  }

  // llvm-symbolizer's JSON frame (14 and 16 agree): the location's discriminator, the
  // function's declaration file and line (StartFileName, StartLine: --basenames applies), and
  // StartAddress: the symbol's address for the outermost frame when the symbol table names it,
  // else the DWARF function's DW_AT_low_pc ("" when it has none).
  void AppendJsonFrame(const CodeLine& frame) {
    std::string file = FileName(frame.location);
    out_ += "{\"Column\":";
    out_ += std::to_string(file.empty() ? 0 : frame.location->column);
    out_ += ",\"Discriminator\":";
    out_ += std::to_string(frame.location ? frame.location->discriminator : 0);
    out_ += ",\"FileName\":";
    AppendJsonString(file, &out_);
    out_ += ",\"FunctionName\":";
    AppendJsonString(config_.functions == FunctionNames::kNone ? "" : frame.function, &out_);
    out_ += ",\"Line\":";
    out_ += std::to_string(file.empty() ? 0 : frame.location->line);
    if (source_.lines() > 0) {
      // (An unknown file is looked for under LLVM's name for it.)
      std::string source = SourceContext(frame, file.empty() ? "<invalid>" : file,
                                         file.empty() ? 0 : frame.location->line);
      if (!source.empty()) {
        out_ += ",\"Source\":";
        AppendJsonString(source, &out_);
      }
    }
    std::optional<uint64_t> start_address = StartAddress(frame);
    out_ += ",\"StartAddress\":";
    AppendJsonString(start_address ? HexU64(*start_address) : std::string(), &out_);
    out_ += ",\"StartFileName\":";
    AppendJsonString(frame.start ? BaseName(frame.start->start_file) : std::string(), &out_);
    out_ += ",\"StartLine\":";
    out_ += std::to_string(frame.start ? frame.start->start_line : 0);
    out_ += '}';
  }

  // How the frames of a CODE answer are asked for, as llvm-symbolizer asks LLVM's symbolizer.
  enum class CodeQuery {
    kInlined,    // symbolizeInlinedCode: every frame of the inline chain
    kCode,       // symbolizeCode: the innermost location, named by the out-of-line function
    kInnermost,  // symbolizeInlinedCode's first frame alone (GNU style without inlines)
  };
  CodeQuery RequestQuery() const {
    if (config_.inlines) return CodeQuery::kInlined;
    return config_.style == Style::kGnu ? CodeQuery::kInnermost : CodeQuery::kCode;
  }

  // The lines of a CODE answer, innermost first, as llvm-symbolizer prints them.
  std::vector<CodeLine> CodeLines(Module* module, uint64_t address, CodeQuery query) {
    std::vector<CodeLine> lines;
    if (!module) {
      lines.emplace_back();
      return lines;
    }
    SymbolizedAddress a = module->symbolizer->Symbolize(address, AddressKind::kVirtual);
    if (a.reason) a.frames.clear();
    // The out-of-line function is named by llvm-symbolizer's symbol-table entry when there is
    // one, by DWARF otherwise; where DWARF has no file for it, a local symbol's STT_FILE name
    // stands in (line 0).
    // (Only for linkage names: llvm-symbolizer consults the table for those alone, so short
    // names of code without DWARF are unknown.)
    std::optional<LlvmSymbolNames::Entry> symbol =
        config_.functions == FunctionNames::kLinkage ? module->names->Find(address) : std::nullopt;
    CodeLine outer;
    if (!a.frames.empty()) outer.function = FrameName(a.frames.back());
    symbol_file_ = SourceFrame();
    if (symbol) {
      // Usually the same symbol the symbolizer found, already demangled.
      outer.function = symbol->name == a.raw_symbol && !a.symbol.empty() &&
                               symbol->name.find('.') == std::string_view::npos
                           ? a.symbol
                           : Name(symbol->name);
      outer.start_address = symbol->address;
      symbol_file_.file = std::string(symbol->file);
    }
    frames_ = std::move(a.frames);
    outer.location = frames_.empty() ? nullptr : &frames_.back();
    outer.start = outer.location;
    if (!outer.location || outer.location->file.empty()) outer.location = &symbol_file_;
    if (frames_.size() > 1 && query == CodeQuery::kInnermost) {
      // GNU style: the innermost frame of the inline chain, as addr2line (llvm-symbolizer
      // answers it with symbolizeInlinedCode's first frame: the symbol table names only the
      // outermost one).
      lines.push_back(
          {FrameName(frames_.front()), &frames_.front(), &frames_.front(), std::nullopt});
      AddEmbeddedSource(module, address, lines.front());
      return lines;
    } else if (frames_.size() > 1 && query != CodeQuery::kInlined) {
      // The innermost location, named (as llvm-symbolizer does) by the symbol table where
      // it is asked (the out-of-line function), else by the innermost DWARF function.
      // (Its start is the innermost function's too, as llvm-symbolizer's.)
      outer.location = &frames_.front();
      outer.start = &frames_.front();
      if (!symbol) outer.function = FrameName(frames_.front());
    } else if (query == CodeQuery::kInlined) {
      for (size_t i = 0; i + 1 < frames_.size(); ++i)
        lines.push_back({FrameName(frames_[i]), &frames_[i], &frames_[i], std::nullopt});
    }
    lines.push_back(std::move(outer));
    AddEmbeddedSource(module, address, lines.front());
    return lines;
  }

  // With a source context asked, the innermost location's embedded text, when DWARF has it
  // (llvm-symbolizer takes it from the address's line row alone: callers' are read from
  // their files).
  void AddEmbeddedSource(Module* module, uint64_t address, CodeLine& innermost) {
    if (source_.lines() <= 0 || frames_.empty() || innermost.location != &frames_.front() ||
        innermost.location->file.empty()) {
      return;
    }
    innermost.embedded_source = module->symbolizer->EmbeddedSource(address, AddressKind::kVirtual);
  }

  void AppendCode(Module* module, uint64_t address) {
    std::vector<CodeLine> lines = CodeLines(module, address, RequestQuery());
    for (size_t i = 0; i < lines.size(); ++i) AppendFrame(lines[i], i > 0);
  }

  // A DATA answer as llvm-symbolizer 16 prints it (LLVM and GNU styles alike): the symbol's
  // name, "start size", and the declaration's file:line — DWARF's for the variable stored
  // there, else a local symbol's STT_FILE name with line 0, else "??:?". --basenames does not
  // apply to it.
  void AppendData(Module* module, uint64_t address) {
    std::optional<LlvmSymbolNames::Entry> symbol =
        module ? module->names->FindData(address) : std::nullopt;
    if (!symbol) {
      out_ += "??\n0 0\n";
    } else {
      out_ += Name(symbol->name);
      out_ += '\n';
      out_ += std::to_string(symbol->address);
      out_ += ' ';
      out_ += std::to_string(symbol->size);
      out_ += '\n';
    }
    std::string file = symbol ? std::string(symbol->file) : std::string();
    uint32_t line = 0;
    if (std::optional<DataDeclaration> decl =
            module ? module->symbolizer->FindDataDeclaration(address) : std::nullopt) {
      // llvm-symbolizer 15/16 lose a file written as DW_FORM_implicit_const (see
      // DataDeclaration); the drop-in prints it unless asked to answer exactly as they do.
      file = decl->file_form_implicit_const && config_.llvm16_decl_file ? "" : decl->file;
      line = decl->line;
    }
    if (file.empty()) {
      out_ += "??:?\n";
    } else {
      out_ += file;
      out_ += ':';
      out_ += std::to_string(line);
      out_ += '\n';
    }
  }

  // A FRAME answer as llvm-symbolizer 16 prints it: per local of the function at the
  // address (inlined ones included), its function, name, declaration file:line, and
  // "frame-offset size tag-offset" ("??" for each unknown); "??" when there are none.
  void AppendFrameLocals(Module* module, uint64_t address) {
    std::vector<FrameLocal> locals;
    if (module) locals = module->symbolizer->FindFrameLocals(address);
    if (locals.empty()) {
      out_ += "??\n";
      return;
    }
    auto known = [&](const std::string& s) { out_ += s.empty() ? "??" : s; };
    for (const FrameLocal& l : locals) {
      known(l.function);
      out_ += '\n';
      known(l.name);
      out_ += '\n';
      known(l.decl_file);
      out_ += ':';
      out_ += std::to_string(l.decl_line);
      out_ += '\n';
      out_ += l.frame_offset ? std::to_string(*l.frame_offset) : "??";
      out_ += ' ';
      out_ += l.size ? std::to_string(*l.size) : "??";
      out_ += ' ';
      out_ += l.tag_offset ? std::to_string(*l.tag_offset) : "??";
      out_ += '\n';
    }
  }

  // One JSON object as llvm-symbolizer 14 prints it (keys in sorted order, as llvm::json
  // writes objects): Address, then Data/Error/Frame, ModuleName, Symbol.
  void AnswerJson(std::string_view line, const std::optional<LlvmRequest>& request,
                  const std::string& written_module) {
    if (!request) {
      out_ += "{\"Error\":{\"Message\":";
      AppendJsonString(std::string("unable to parse arguments: ") + std::string(line), &out_);
      out_ += "},\"ModuleName\":";
      AppendJsonString(written_module, &out_);
      out_ += '}';
      return;
    }
    std::string error;
    Module* module = Open(*request, &error);
    out_ += "{\"Address\":";
    AppendJsonString(HexU64(request->address), &out_);  // as asked, before --adjust-vma
    const uint64_t address = request->address - config_.adjust_vma;
    auto module_name = [&] {
      out_ += ",\"ModuleName\":";
      AppendJsonString(written_module, &out_);
    };
    if (!error.empty()) {
      out_ += ",\"Error\":{\"Message\":";
      AppendJsonString(error, &out_);
      out_ += '}';
      module_name();
      out_ += '}';
      return;
    }
    switch (request->command) {
      case LlvmCommand::kCode: {
        module_name();
        out_ += ",\"Symbol\":[";
        // A module that failed before answers with no frames (with one unknown frame
        // under --no-inlines), as llvm-symbolizer's cached failure does.
        if (module || !config_.inlines) {
          std::vector<CodeLine> lines = CodeLines(module, address, RequestQuery());
          for (size_t i = 0; i < lines.size(); ++i) {
            if (i) out_ += ',';
            AppendJsonFrame(lines[i]);
          }
        }
        out_ += "]}";
        break;
      }
      case LlvmCommand::kData: {
        std::optional<LlvmSymbolNames::Entry> symbol =
            module ? module->names->FindData(address) : std::nullopt;
        out_ += ",\"Data\":{\"Name\":";
        AppendJsonString(symbol ? Name(symbol->name) : std::string(), &out_);
        out_ += ",\"Size\":";
        AppendJsonString(HexU64(symbol ? symbol->size : 0), &out_);
        out_ += ",\"Start\":";
        AppendJsonString(HexU64(symbol ? symbol->address : 0), &out_);
        out_ += '}';
        module_name();
        out_ += '}';
        break;
      }
      case LlvmCommand::kFrame: {
        out_ += ",\"Frame\":[";
        std::vector<FrameLocal> locals;
        if (module) locals = module->symbolizer->FindFrameLocals(address);
        for (size_t i = 0; i < locals.size(); ++i) {
          const FrameLocal& l = locals[i];
          if (i) out_ += ',';
          out_ += "{\"DeclFile\":";
          AppendJsonString(l.decl_file, &out_);
          out_ += ",\"DeclLine\":";
          out_ += std::to_string(l.decl_line);
          if (l.frame_offset) {
            out_ += ",\"FrameOffset\":";
            out_ += std::to_string(*l.frame_offset);
          }
          out_ += ",\"FunctionName\":";
          AppendJsonString(l.function, &out_);
          out_ += ",\"Name\":";
          AppendJsonString(l.name, &out_);
          out_ += ",\"Size\":";
          AppendJsonString(l.size ? HexU64(*l.size) : std::string(), &out_);
          out_ += ",\"TagOffset\":";
          AppendJsonString(l.tag_offset ? HexU64(*l.tag_offset) : std::string(), &out_);
          out_ += '}';
        }
        out_ += ']';
        module_name();
        out_ += '}';
        break;
      }
    }
  }

  Config config_;
  LlvmSourceContext source_;  // --print-source-context-lines: the files read so far
  SymbolizeOptions options_;
  std::unordered_map<std::string, Module> modules_;
  Module* asked_ = nullptr;  // the module the request being answered opened (null: none)
  std::shared_ptr<const LlvmCacheFetcher> llvm_fetcher_;         // null under --no-debuginfod
  std::unordered_map<std::string, std::string> build_id_paths_;  // build ID name → its file
  std::string out_;
  std::vector<SourceFrame> frames_;  // of the last CODE request (CodeLine points into them)
  SourceFrame symbol_file_;          // likewise: the STT_FILE stand-in
};

// --filter-markup: stdin's lines through the markup filter. Input is read as it comes, and
// the output of the lines a read brought is written and flushed before the next read: at once
// for a log followed as it grows, in large writes for a file. Messages go out per line.
int FilterMarkup(Session* session, const Config& config) {
  const bool color = config.color == LlvmColor::kAlways ||
                     (config.color == LlvmColor::kAuto && LlvmTerminalHasColors(STDOUT_FILENO));
  MarkupFilter filter(*session, color, LlvmTerminalHasColors(STDERR_FILENO));
  std::string pending, out, err;
  auto filter_line = [&](std::string_view line) {
    filter.Filter(line, &out, &err);
    std::fwrite(err.data(), 1, err.size(), stderr);
    err.clear();
  };
  auto write_out = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    out.clear();
  };
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // (a read error ends the input, as it ends LLVM's std::getline loop)
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1)
      filter_line(std::string_view(pending).substr(start, newline + 1 - start));
    pending.erase(0, start);
    write_out();
  }
  if (!pending.empty()) {
    pending += '\n';  // as LLVM reads lines (std::getline, then '\n')
    filter_line(pending);
  }
  filter.Finish(&out);
  write_out();
  return kExitOk;
}

}  // namespace

bool IsLlvmSymbolizerName(std::string_view argv0) {
  size_t slash = argv0.rfind('/');
  if (slash != std::string_view::npos) argv0.remove_prefix(slash + 1);
  return argv0.starts_with("llvm-symbolizer");
}

int RunLlvmSymbolizer(int argc, char** argv) {
  std::vector<std::string> args;
  // As LLVM 16: the environment's options first (the command line's override them), then
  // response files expanded in both.
  if (const char* env = std::getenv("LLVM_SYMBOLIZER_OPTS")) args = TokenizeGnuCommandLine(env);
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  args = ExpandResponseFiles(args);
  Config config;
  bool exit_now = false;
  if (!ParseFlags(args, &config, &exit_now)) return kExitBadInput;
  if (exit_now) return kExitOk;
  // The symbolizers live until exit (see KeepUntilExit): leaking the session is deliberate.
  auto* session = new Session(config);
  KeepUntilExit(static_cast<const void*>(session));
  if (config.filter_markup) return FilterMarkup(session, config);  // (arguments unused, as in LLVM)
  if (!config.inputs.empty()) {
    // JSON answers to command-line requests form one array, as in llvm-symbolizer.
    bool list = config.style == Style::kJson;
    for (size_t i = 0; i < config.inputs.size(); ++i)
      session->Answer(config.inputs[i], list ? (i == 0 ? '[' : ',') : 0);
    if (list) std::fputs(config.pretty ? "\n]\n" : "]\n", stdout);
    return kExitOk;
  }
  char* line = nullptr;
  size_t capacity = 0;
  ssize_t length;
  while ((length = getline(&line, &capacity, stdin)) >= 0) {
    std::string_view text(line, static_cast<size_t>(length));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    session->Answer(text);
  }
  std::free(line);
  return kExitOk;
}

}  // namespace stacksym::cli
