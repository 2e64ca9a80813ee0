// `stacksym symbolize build-id --build-id HEX OFFSET...` — symbolize file offsets of the
// binary with that GNU build ID, found in debug directories (<dir>/.build-id/xx/rest and
// rest.debug): the remote half of `stacksym normalize`.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "symbolize_output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_build_id {
namespace {

struct Options {
  std::string build_id;
  std::vector<std::string> offsets;
  SymbolizeCliOptions symbolize;
};

int Run(const Options& o) {
  KeepFreedMemoryForReuse();
  constexpr const char* kName = "stacksym symbolize build-id";
  std::vector<uint64_t> offsets;
  std::string error;
  if (!ReadAddresses(o.offsets, &offsets, &error)) {
    std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
    return kExitBadInput;
  }
  std::optional<std::vector<uint8_t>> build_id = FromHex(o.build_id);
  if (!build_id || build_id->size() < 2) {
    std::fprintf(stderr, "%s: invalid build ID '%s' (expected an even number of hex digits)\n",
                 kName, o.build_id.c_str());
    return kExitBadInput;
  }
  SymbolizeOptions options = o.symbolize.ToSymbolizeOptions();
  int exit_code = kExitOk;
  Result<std::string> path =
      FindBinaryByBuildId(*build_id, options.debug_dirs, options.fetcher.get());
  if (!path) {
    // Still answer every offset (with the Reason), so output lines up with input.
    std::fprintf(stderr, "%s: %s\n", kName, path.error().ToString().c_str());
    exit_code = kExitBadInput;
  }
  BuildIdSymbolizer symbolizer(options);
  WriteAnswers(offsets.size(), o.symbolize.output,
               [&](size_t i) { return symbolizer.Symbolize(*build_id, offsets[i]); });
  return exit_code;
}

CommandRegistrar registrar(
    "symbolize build-id", "Symbolize file offsets of the binary with a given build ID",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--build-id", o->build_id, "GNU build ID (hex)")->required();
      AddSymbolizeOptions(app, &o->symbolize);
      app.add_option("OFFSET", o->offsets, "Hex file offsets; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_build_id
