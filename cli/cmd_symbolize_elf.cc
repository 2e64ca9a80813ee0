// `stacksym symbolize elf --file F [--file-offsets] [ADDR...]` — symbolize addresses of one
// ELF file with its symbol table and DWARF (separate debug files found automatically).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/symbolize.h"
#include "symbolize_output.h"

namespace stacksym::cli {
namespace {

struct Options {
  std::string file;
  bool file_offsets = false;
  bool no_debug_info = false;
  bool no_inlines = false;
  std::vector<std::string> debug_dirs;
  std::vector<std::string> addresses;
  OutputOptions output;
};

int Run(const Options& o) {
  std::vector<uint64_t> addresses;
  std::string error;
  if (!ReadAddresses(o.addresses, &addresses, &error)) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", error.c_str());
    return kExitBadInput;
  }
  SymbolizeOptions options;
  options.demangle = !o.output.no_demangle;
  options.use_debug_info = !o.no_debug_info;
  options.inlines = !o.no_inlines;
  if (!o.debug_dirs.empty()) options.debug_dirs = o.debug_dirs;
  auto symbolizer = ElfSymbolizer::Open(o.file, options);
  if (!symbolizer) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", symbolizer.error().ToString().c_str());
    return kExitBadInput;
  }
  AddressKind kind = o.file_offsets ? AddressKind::kFileOffset : AddressKind::kVirtual;
  std::string out;
  out.reserve(4096);
  for (uint64_t address : addresses) {
    AppendSymbolized((*symbolizer)->Symbolize(address, kind), o.output, &out);
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize elf", "Symbolize addresses (or file offsets) of an ELF file",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--file,-e,--obj", o->file, "ELF file")->required();
      app.add_flag("--file-offsets", o->file_offsets,
                   "Addresses are file offsets, not virtual addresses");
      app.add_flag("--no-debug-info", o->no_debug_info, "Use only the symbol tables, not DWARF");
      app.add_flag("--no-inlines", o->no_inlines, "Report only the out-of-line function");
      app.add_option("--debug-dir", o->debug_dirs,
                     "Root of separate debug files (repeatable; default /usr/lib/debug)");
      AddOutputOptions(app, &o->output);
      app.add_option("ADDR", o->addresses, "Hex addresses; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli
