// `stacksym symbolize kernel [--kallsyms FILE] [--vmlinux FILE] ADDR...` — kernel addresses to
// symbols from /proc/kallsyms (modules and BPF programs included), or from vmlinux DWARF.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/kernel.h"
#include "symbolize_output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_symbolize_kernel {
namespace {

struct Options {
  std::string kallsyms = "/proc/kallsyms";
  std::string vmlinux;
  std::vector<std::string> addresses;
  SymbolizeCliOptions symbolize;  // --debug-dir and DWARF options apply to --vmlinux
};

int Run(const Options& o) {
  std::vector<uint64_t> addresses;
  std::string error;
  if (!ReadAddresses(o.addresses, &addresses, &error)) {
    std::fprintf(stderr, "stacksym symbolize kernel: %s\n", error.c_str());
    return kExitBadInput;
  }
  KernelSymbolizerOptions options;
  options.kallsyms_path = o.kallsyms;
  options.vmlinux_path = o.vmlinux;
  options.symbolize = o.symbolize.ToSymbolizeOptions();
  auto symbolizer = KernelSymbolizer::Open(options);
  if (!symbolizer) {
    std::fprintf(stderr, "stacksym symbolize kernel: %s\n", symbolizer.error().ToString().c_str());
    return kExitBadInput;
  }
  if ((*symbolizer)->addresses_hidden()) {
    // Still answer each address (with the Reason), but say once, clearly, why.
    std::fprintf(stderr, "stacksym symbolize kernel: %s shows only zero addresses: %s\n",
                 o.kallsyms.c_str(), ReasonText(Reason::kKernelAddressesHidden));
  }
  WriteAnswers(addresses.size(), o.symbolize.output,
               [&](size_t i) { return (*symbolizer)->Symbolize(addresses[i]); });
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize kernel", "Symbolize kernel addresses (kallsyms, modules, BPF; vmlinux DWARF)",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--kallsyms", o->kallsyms, "kallsyms file (default /proc/kallsyms)");
      app.add_option("--vmlinux", o->vmlinux,
                     "vmlinux with symbols/DWARF; KASLR offset derived from _stext");
      AddSymbolizeOptions(app, &o->symbolize);
      app.add_option("ADDR", o->addresses, "Hex addresses; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_symbolize_kernel
