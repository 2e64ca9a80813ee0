// `stacksym symbolize process --pid P ADDR...` — symbolize addresses of a live process:
// normalization, then ELF/DWARF through /proc/PID/map_files, the vDSO from process memory,
// and /tmp/perf-PID.map for JIT code.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/process.h"
#include "symbolize_output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_process {
namespace {

struct Options {
  int pid = 0;
  bool no_perf_map = false;
  std::string vma_source = "auto";
  std::vector<std::string> addresses;
  SymbolizeCliOptions symbolize;
};

int Run(const Options& o) {
  KeepFreedMemoryForReuse();
  constexpr const char* kName = "stacksym symbolize process";
  std::vector<uint64_t> addresses;
  std::string error;
  if (!ReadAddresses(o.addresses, &addresses, &error)) {
    std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
    return kExitBadInput;
  }
  if (o.pid <= 0) {
    std::fprintf(stderr, "%s: invalid pid %d\n", kName, o.pid);
    return kExitBadInput;
  }
  if (::kill(o.pid, 0) != 0 && errno == ESRCH) {
    std::fprintf(stderr, "%s: no process with pid %d\n", kName, o.pid);
    return kExitBadInput;
  }
  ProcessSymbolizerOptions options;
  options.symbolize = o.symbolize.ToSymbolizeOptions();
  options.perf_maps = !o.no_perf_map;
  std::optional<VmaSourceKind> source = ParseVmaSourceKind(o.vma_source);
  if (!source) {
    std::fprintf(stderr, "%s: unknown --vma-source '%s'\n", kName, o.vma_source.c_str());
    return kExitUsage;
  }
  options.normalize.vma_source = *source;
  ProcessSymbolizer symbolizer(options);
  Result<std::vector<SymbolizedAddress>> results = symbolizer.Symbolize(o.pid, addresses);
  if (!results) {
    std::fprintf(stderr, "%s: %s\n", kName, results.error().ToString().c_str());
    return kExitBadInput;
  }
  WriteAnswers(results->size(), o.symbolize.output,
               [&](size_t i) -> const SymbolizedAddress& { return (*results)[i]; });
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize process", "Symbolize addresses of a live process (ELF, vDSO, perf maps)",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--pid,-p", o->pid, "Process ID")->required();
      app.add_flag("--no-perf-map", o->no_perf_map, "Do not read /tmp/perf-PID.map");
      app.add_option("--vma-source", o->vma_source, "auto (default), ioctl or text")
          ->check(CLI::IsMember({"auto", "ioctl", "text"}));
      AddSymbolizeOptions(app, &o->symbolize);
      app.add_option("ADDR", o->addresses, "Hex addresses; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_process
