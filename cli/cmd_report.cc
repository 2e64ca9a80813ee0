// `stacksym report PROFILE` — top functions by self and total samples (or CPU, off-CPU or wall
// time: --sample-type), of the thread states --off-cpu-state keeps.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "command.h"
#include "sample_type_options.h"
#include "stacksym/output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_report {
namespace {

struct ReportArgs {
  std::string input;
  std::string comm;
  int64_t pid = -1;
  size_t limit = 20;
  bool stdio = false;
  std::string sort = "self";
  SampleTypeCliOptions sample_type;
};

int RunReport(const ReportArgs& args) {
  Result<SampleTypeCliOptions::Choice> choice = args.sample_type.Parse();
  if (!choice) {
    std::fprintf(stderr, "stacksym report: %s\n", choice.error().ToString().c_str());
    return kExitUsage;
  }
  Result<Profile> profile = ReadProfile(args.input);
  if (!profile) {
    std::fprintf(stderr, "stacksym report: %s\n", profile.error().ToString().c_str());
    return kExitBadInput;
  }
  ReportOptions options;
  if (!args.comm.empty()) options.filter.comm = args.comm;
  if (args.pid >= 0) options.filter.pid = static_cast<uint32_t>(args.pid);
  options.filter.states = choice->states;
  Result<SampleType> type = ChooseSampleType(*profile, choice->type, options.filter);
  if (!type) {
    std::fprintf(stderr, "stacksym report: %s\n", type.error().ToString().c_str());
    return kExitUsage;
  }
  options.sample_type = *type;
  options.limit = args.limit;
  options.stdio_table = args.stdio;
  options.sort_by_total = args.sort == "total";
  std::string text = FormatReport(*profile, options);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

CommandRegistrar registrar(
    "report",
    "Top functions of a profile (pprof or folded) by self and total samples, or CPU, off-CPU "
    "or wall time",
    [](CLI::App& app) -> CommandRun {
      auto args = std::make_shared<ReportArgs>();
      app.add_option("PROFILE", args->input, "profile file (.pb.gz or folded; - for stdin)")
          ->required();
      app.add_flag("--stdio", args->stdio,
                   "one table like `perf report --no-children --stdio` (self, total, object, "
                   "symbol)");
      app.add_option("--comm", args->comm, "only samples of threads with this name");
      app.add_option("--pid", args->pid, "only samples of this process")
          ->check(CLI::NonNegativeNumber);
      app.add_option("-n,--limit", args->limit, "rows per table (0 = all)")->capture_default_str();
      app.add_option("--sort", args->sort, "order of the --stdio table: self or total")
          ->check(CLI::IsMember({"self", "total"}))
          ->capture_default_str();
      AddSampleTypeOptions(app, &args->sample_type);
      return [args] { return RunReport(*args); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_report
