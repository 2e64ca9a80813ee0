// `stacksym symbolize kernel [--kallsyms FILE] [--vmlinux FILE] ADDR...` — kernel addresses to
// symbols from /proc/kallsyms (modules and BPF programs included), or from vmlinux DWARF.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "stacksym/kernel.h"
#include "symbolize_output.h"

namespace stacksym::cli {
namespace {

struct Options {
  std::string kallsyms = "/proc/kallsyms";
  std::string vmlinux;
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
    std::fprintf(stderr, "stacksym symbolize kernel: %s\n", error.c_str());
    return kExitBadInput;
  }
  KernelSymbolizerOptions options;
  options.kallsyms_path = o.kallsyms;
  options.vmlinux_path = o.vmlinux;
  options.symbolize.demangle = !o.output.no_demangle;
  options.symbolize.use_debug_info = !o.no_debug_info;
  options.symbolize.inlines = !o.no_inlines;
  if (!o.debug_dirs.empty()) options.symbolize.debug_dirs = o.debug_dirs;
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
  std::string out;
  out.reserve(4096);
  for (uint64_t address : addresses) {
    AppendSymbolized((*symbolizer)->Symbolize(address), o.output, &out);
    if (out.size() > (1 << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

CommandRegistrar registrar(
    "symbolize kernel", "Symbolize kernel addresses (kallsyms, modules, BPF; vmlinux DWARF)",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      app.add_option("--kallsyms", o->kallsyms, "kallsyms file (default /proc/kallsyms)");
      app.add_option("--vmlinux", o->vmlinux,
                     "vmlinux with symbols/DWARF; KASLR offset derived from _stext");
      app.add_flag("--no-debug-info", o->no_debug_info, "Use only vmlinux's symbol table");
      app.add_flag("--no-inlines", o->no_inlines, "Report only the out-of-line function");
      app.add_option("--debug-dir", o->debug_dirs,
                     "Root of separate debug files for vmlinux (repeatable)");
      AddOutputOptions(app, &o->output);
      app.add_option("ADDR", o->addresses, "Hex addresses; read from stdin when none are given");
      return [o] { return Run(*o); };
    });

}  // namespace
}  // namespace stacksym::cli
