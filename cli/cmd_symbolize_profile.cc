// `stacksym symbolize-profile IN OUT` — symbols for a normalized-only profile, later and
// elsewhere: the one profile symbolizer (a server first with --server, then files found by
// build ID in the debug dirs, then debuginfod; kernel frames with --kallsyms / --vmlinux).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "command.h"
#include "profile_symbolize_options.h"
#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_profile {
namespace {

struct SymbolizeProfileArgs {
  std::string input;
  std::string output;
  ProfileSymbolizeCliOptions symbolize;
  bool quiet = false;
};

int RunSymbolizeProfile(const SymbolizeProfileArgs& args) {
  KeepFreedMemoryForReuse();
  Result<ProfileSymbolizeOptions> options = args.symbolize.Resolve();
  if (!options) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", options.error().ToString().c_str());
    return kExitUsage;
  }
  Result<Profile> profile = ReadProfile(args.input);
  if (!profile) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", profile.error().ToString().c_str());
    return kExitBadInput;
  }
  ProfileSymbolizeStats stats = SymbolizeProfile(*profile, *options);
  if (!args.quiet) {
    PrintProfileSymbolizeStats("stacksym symbolize-profile", stats);
  } else if (!stats.server_error.empty()) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", stats.server_error.c_str());
  }
  std::optional<ProfileFormat> format = ProfileFormatFromPath(args.output);
  Result<void> written =
      WriteProfileAs(*profile, format.value_or(ProfileFormat::kPprof), args.output);
  if (!written) {
    std::fprintf(stderr, "stacksym symbolize-profile: %s\n", written.error().ToString().c_str());
    return kExitBadInput;
  }
  // The output is written, but a server that was asked for and could not be used is an error.
  return stats.server_error.empty() ? kExitOk : kExitBadInput;
}

CommandRegistrar registrar(
    "symbolize-profile",
    "Symbolize a normalized-only profile (build ID + file offsets) from local files or a server",
    [](CLI::App& app) -> CommandRun {
      auto args = std::make_shared<SymbolizeProfileArgs>();
      app.add_option("IN", args->input, "profile to symbolize (.pb.gz or folded)")->required();
      app.add_option("OUT", args->output,
                     "output file; format from the extension (.pb.gz, .folded, .html, .svg), "
                     "pprof otherwise")
          ->required();
      AddProfileSymbolizeOptions(app, &args->symbolize, /*default_kallsyms=*/"");
      app.add_flag("-q,--quiet", args->quiet, "no summary on stderr");
      return [args] { return RunSymbolizeProfile(*args); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_profile
