// `stacksym convert IN --to folded|html|svg|pprof [-o OUT] [--sample-type T]
// [--off-cpu-state LIST]` — between profile formats.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "sample_type_options.h"
#include "stacksym/output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_convert {
namespace {

struct ConvertArgs {
  std::string input;
  std::string to;
  std::string output = "-";
  std::string title;
  std::string comm;
  int64_t pid = -1;
  uint32_t width = 1200;
  SampleTypeCliOptions sample_type;
};

int RunConvert(const ConvertArgs& args) {
  Result<ProfileFormat> format = ParseProfileFormat(args.to);
  if (!format) {
    std::fprintf(stderr, "stacksym convert: %s\n", format.error().ToString().c_str());
    return kExitUsage;
  }
  Result<SampleTypeCliOptions::Choice> choice = args.sample_type.Parse();
  if (!choice) {
    std::fprintf(stderr, "stacksym convert: %s\n", choice.error().ToString().c_str());
    return kExitUsage;
  }
  Result<Profile> profile = ReadProfile(args.input);
  if (!profile) {
    std::fprintf(stderr, "stacksym convert: %s\n", profile.error().ToString().c_str());
    return kExitBadInput;
  }
  ProfileFilter filter;
  if (!args.comm.empty()) filter.comm = args.comm;
  if (args.pid >= 0) filter.pid = static_cast<uint32_t>(args.pid);
  filter.states = choice->states;
  Result<SampleType> type = ChooseSampleType(*profile, choice->type, filter);
  if (!type) {
    std::fprintf(stderr, "stacksym convert: %s\n", type.error().ToString().c_str());
    return kExitUsage;
  }
  const Profile& chosen = *profile;
  Profile filtered;
  if (!filter.KeepsAll()) filtered = FilterProfile(chosen, filter);
  WriteOptions options;
  options.flame_graph.title = args.title.empty() ? "stacksym: " + args.input : args.title;
  options.flame_graph.svg_width = args.width;
  options.sample_type = *type;
  Result<void> written =
      WriteProfileAs(filter.KeepsAll() ? chosen : filtered, *format, args.output, options);
  if (!written) {
    std::fprintf(stderr, "stacksym convert: %s\n", written.error().ToString().c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

CommandRegistrar registrar(
    "convert", "Convert a profile (pprof or folded, detected by content) to another format",
    [](CLI::App& app) -> CommandRun {
      auto args = std::make_shared<ConvertArgs>();
      app.add_option("IN", args->input, "input profile (.pb.gz or folded; - for stdin)")
          ->required();
      app.add_option("--to", args->to, "output format")
          ->required()
          ->check(CLI::IsMember({"folded", "html", "svg", "pprof"}));
      app.add_option("-o,--output", args->output, "output file (default: stdout)");
      app.add_option("--title", args->title, "flame graph title");
      app.add_option("--width", args->width, "SVG width in pixels")->capture_default_str();
      app.add_option("--comm", args->comm, "only samples of threads with this name");
      app.add_option("--pid", args->pid, "only samples of this process")
          ->check(CLI::NonNegativeNumber);
      AddSampleTypeOptions(app, &args->sample_type);
      return [args] { return RunConvert(*args); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_convert
