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
  std::vector<std::string> addresses;
  SymbolizeCliOptions symbolize;
};

int Run(const Options& o) {
  std::vector<uint64_t> addresses;
  std::string error;
  if (!ReadAddresses(o.addresses, &addresses, &error)) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", error.c_str());
    return kExitBadInput;
  }
  auto symbolizer = ElfSymbolizer::Open(o.file, o.symbolize.ToSymbolizeOptions());
  if (!symbolizer) {
    std::fprintf(stderr, "stacksym symbolize elf: %s\n", symbolizer.error().ToString().c_str());
    return kExitBadInput;
  }
  AddressKind kind = o.file_offsets ? AddressKind::kFileOffset : AddressKind::kVirtual;
  WriteAnswers(addresses.size(), o.symbolize.output,
               [&](size_t i) { return (*symbolizer)->Symbolize(addresses[i], kind); });
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize elf", "Symbolize addresses (or file offsets) of an ELF file",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--file,-e,--obj", o->file, "ELF file")->required();
      app.add_flag("--file-offsets", o->file_offsets,
                   "Addresses are file offsets, not virtual addresses");
      AddSymbolizeOptions(app, &o->symbolize);
      app.add_option("ADDR", o->addresses, "Hex addresses; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli
