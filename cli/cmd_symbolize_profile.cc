// `stacksym symbolize-profile IN OUT` — symbols for a normalized-only profile from files found
// by build ID (debug dirs, then debuginfod), or with --server by a `stacksym serve`.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache_options.h"
#include "command.h"
#include "debug_dir_options.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_profile {
namespace {

struct SymbolizeProfileArgs {
  std::string input;
  std::string output;
  DebugDirCliOptions debug_dirs;
  bool no_demangle = false;
  bool no_inlines = false;
  bool resymbolize = false;
  std::string kallsyms;
  bool quiet = false;
  CacheCliOptions cache;
  std::string server;  // symbolize on this `stacksym serve`
  bool no_debuginfod = false;
};

int WriteOutput(const SymbolizeProfileArgs& args, const Profile& profile) {
  std::optional<ProfileFormat> format = ProfileFormatFromPath(args.output);
  Result<void> written =
      WriteProfileAs(profile, format.value_or(ProfileFormat::kPprof), args.output);
  if (!written) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", written.error().ToString().c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

// --server: user frames by the server, kernel frames here.
int RunRemote(const SymbolizeProfileArgs& args, Profile& profile) {
  RemoteSymbolizeOptions options;
  options.url = args.server;
  options.demangle = !args.no_demangle;
  options.inlines = !args.no_inlines;
  options.resymbolize = args.resymbolize;
  options.kallsyms_path = args.kallsyms;
  Result<RemoteSymbolizeStats> stats = SymbolizeProfileRemote(profile, options);
  if (!stats) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", stats.error().ToString().c_str());
    return kExitBadInput;
  }
  if (!args.quiet) {
    for (const std::string& message : stats->messages) {
      std::fprintf(stderr, "stacksym symbolize-profile: %s\n", message.c_str());
    }
    std::fprintf(stderr,
                 "stacksym symbolize-profile: %llu of %llu frames symbolized; %llu distinct "
                 "(build ID, offset) pairs in %llu requests to %s\n",
                 static_cast<unsigned long long>(stats->symbolized),
                 static_cast<unsigned long long>(stats->frames + stats->kernel_frames),
                 static_cast<unsigned long long>(stats->pairs),
                 static_cast<unsigned long long>(stats->requests), args.server.c_str());
  }
  return WriteOutput(args, profile);
}

int RunSymbolizeProfile(const SymbolizeProfileArgs& args) {
  KeepFreedMemoryForReuse();
  Result<Profile> profile = ReadProfile(args.input);
  if (!profile) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", profile.error().ToString().c_str());
    return kExitBadInput;
  }
  if (!args.server.empty()) return RunRemote(args, *profile);
  OfflineSymbolizeOptions options;
  options.debug_dirs = args.debug_dirs.Resolve(options.debug_dirs);
  options.demangle = !args.no_demangle;
  options.inlines = !args.no_inlines;
  options.resymbolize = args.resymbolize;
  options.kallsyms_path = args.kallsyms;
  options.cache_dir = args.cache.Resolve();
  if (!args.no_debuginfod) options.fetcher = MakeDebuginfodFetcher({});
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
  return WriteOutput(args, *profile);
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
      AddDebugDirOptions(app, &args->debug_dirs);
      app.add_flag("--no-demangle", args->no_demangle, "keep linkage names");
      app.add_flag("--no-inlines", args->no_inlines, "no inlined frames");
      app.add_flag("--resymbolize", args->resymbolize, "redo frames that already have symbols");
      app.add_option("--kallsyms", args->kallsyms,
                     "symbolize kernel frames from this kallsyms file (same machine and boot "
                     "only, e.g. /proc/kallsyms)");
      app.add_option("--server", args->server,
                     "symbolize user frames on this `stacksym serve` (http://host:port); "
                     "kernel frames stay local");
      app.add_flag("--no-debuginfod", args->no_debuginfod,
                   "do not fetch missing files from the servers in $DEBUGINFOD_URLS");
      app.add_flag("-q,--quiet", args->quiet, "no summary on stderr");
      AddCacheOptions(app, &args->cache);
      return [args] { return RunSymbolizeProfile(*args); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_profile
