// `stacksym symbolize elf --file F [--file-offsets] [ADDR...]` — symbolize addresses of one
// ELF file with its symbol table and DWARF (separate debug files found automatically).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>
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
  // Batches let the symbolizer parse the DWARF units they need on all cores; bounded so a
  // huge address list streams instead of holding every answer.
  constexpr size_t kBatch = 1 << 16;
  for (size_t begin = 0; begin < addresses.size(); begin += kBatch) {
    std::span<const uint64_t> batch(addresses.data() + begin,
                                    std::min(kBatch, addresses.size() - begin));
    std::vector<SymbolizedAddress> answers = (*symbolizer)->SymbolizeBatch(batch, kind);
    WriteAnswers(answers.size(), o.symbolize.output,
                 [&](size_t i) -> const SymbolizedAddress& { return answers[i]; });
  }
  KeepUntilExit(std::move(*symbolizer));
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
