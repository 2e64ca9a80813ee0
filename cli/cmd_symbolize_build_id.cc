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

namespace stacksym::cli {
namespace {

struct Options {
  std::string build_id;
  bool no_debug_info = false;
  bool no_inlines = false;
  std::vector<std::string> debug_dirs;
  std::vector<std::string> offsets;
  OutputOptions output;
};

int Run(const Options& o) {
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
  SymbolizeOptions options;
  options.demangle = !o.output.no_demangle;
  options.use_debug_info = !o.no_debug_info;
  options.inlines = !o.no_inlines;
  if (!o.debug_dirs.empty()) options.debug_dirs = o.debug_dirs;
  int exit_code = kExitOk;
  Result<std::string> path = FindBinaryByBuildId(*build_id, options.debug_dirs);
  if (!path) {
    // Still answer every offset (with the Reason), so output lines up with input.
    std::fprintf(stderr, "%s: %s\n", kName, path.error().ToString().c_str());
    exit_code = kExitBadInput;
  }
  BuildIdSymbolizer symbolizer(options);
  std::string out;
  out.reserve(4096);
  for (uint64_t offset : offsets) {
    AppendSymbolized(symbolizer.Symbolize(*build_id, offset), o.output, &out);
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return exit_code;
}

CommandRegistrar registrar(
    "symbolize build-id", "Symbolize file offsets of the binary with a given build ID",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--build-id", o->build_id, "GNU build ID (hex)")->required();
      app.add_flag("--no-debug-info", o->no_debug_info, "Use only the symbol tables, not DWARF");
      app.add_flag("--no-inlines", o->no_inlines, "Report only the out-of-line function");
      app.add_option("--debug-dir", o->debug_dirs,
                     "Directory with a .build-id tree (repeatable; default /usr/lib/debug)");
      AddOutputOptions(app, &o->output);
      app.add_option("OFFSET", o->offsets, "Hex file offsets; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli
