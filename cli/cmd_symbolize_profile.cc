// `stacksym symbolize-profile IN OUT` — symbols for a normalized-only profile, locally, from
// files found by build ID.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/output.h"

namespace stacksym::cli {
namespace {

struct SymbolizeProfileArgs {
  std::string input;
  std::string output;
  std::vector<std::string> debug_dirs;
  bool no_default_debug_dir = false;
  bool no_demangle = false;
  bool no_inlines = false;
  bool resymbolize = false;
  std::string kallsyms;
  bool quiet = false;
};

int RunSymbolizeProfile(const SymbolizeProfileArgs& args) {
  Result<Profile> profile = ReadProfile(args.input);
  if (!profile) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", profile.error().ToString().c_str());
    return kExitBadInput;
  }
  OfflineSymbolizeOptions options;
  if (args.no_default_debug_dir) options.debug_dirs.clear();
  options.debug_dirs.insert(options.debug_dirs.begin(), args.debug_dirs.begin(),
                            args.debug_dirs.end());
  options.demangle = !args.no_demangle;
  options.inlines = !args.no_inlines;
  options.resymbolize = args.resymbolize;
  options.kallsyms_path = args.kallsyms;
  OfflineSymbolizeStats stats = SymbolizeProfileOffline(*profile, options);
  if (!args.quiet) {
    for (const std::string& message : stats.messages) {
      std::fprintf(stderr, "stacksym symbolize-profile: %s\n", message.c_str());
    }
    std::fprintf(stderr,
                 "stacksym symbolize-profile: %llu of %llu frames symbolized; modules: %llu "
                 "found, %llu without a matching file\n",
                 static_cast<unsigned long long>(stats.symbolized),
                 static_cast<unsigned long long>(stats.frames + stats.kernel_frames),
                 static_cast<unsigned long long>(stats.modules_found),
                 static_cast<unsigned long long>(stats.modules_missing));
  }
  std::optional<ProfileFormat> format = ProfileFormatFromPath(args.output);
  Result<void> written =
      WriteProfileAs(*profile, format.value_or(ProfileFormat::kPprof), args.output);
  if (!written) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", written.error().ToString().c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize-profile",
    "Symbolize a normalized-only profile (build ID + file offsets) from local files",
    [](CLI::App& app) -> CommandRun {
      auto args = std::make_shared<SymbolizeProfileArgs>();
      app.add_option("IN", args->input, "profile to symbolize (.pb.gz or folded)")->required();
      app.add_option("OUT", args->output,
                     "output file; format from the extension (.pb.gz, .folded, .html, .svg), "
                     "pprof otherwise")
          ->required();
      app.add_option("--debug-dir", args->debug_dirs,
                     "directory with .build-id/xx/rest[.debug] files (repeatable; searched "
                     "before /usr/lib/debug)");
      app.add_flag("--no-default-debug-dir", args->no_default_debug_dir,
                   "do not search /usr/lib/debug");
      app.add_flag("--no-demangle", args->no_demangle, "keep linkage names");
      app.add_flag("--no-inlines", args->no_inlines, "no inlined frames");
      app.add_flag("--resymbolize", args->resymbolize, "redo frames that already have symbols");
      app.add_option("--kallsyms", args->kallsyms,
                     "symbolize kernel frames from this kallsyms file (same machine and boot "
                     "only, e.g. /proc/kallsyms)");
      app.add_flag("-q,--quiet", args->quiet, "no summary on stderr");
      return [args] { return RunSymbolizeProfile(*args); };
    });

}  // namespace
}  // namespace stacksym::cli
