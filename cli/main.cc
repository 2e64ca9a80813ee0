// stacksym — follow a stack trace through its life: capture, normalize, symbolize, output.
// The command is thin: every subcommand parses its arguments and calls the library.
#include <cstdio>

#include "command.h"
#include "llvm_symbolizer_mode.h"

int main(int argc, char** argv) {
  // Under a name starting with "llvm-symbolizer", speak its protocol (ASAN_SYMBOLIZER_PATH).
  if (argc > 0 && stacksym::cli::IsLlvmSymbolizerName(argv[0]))
    return stacksym::cli::RunLlvmSymbolizer(argc, argv);
  CLI::App app{
      "stacksym: capture stacks with BPF, normalize them to (build ID, file offset), "
      "symbolize them with ELF symbols and DWARF, and write profiles."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stacksym 0.1");
  stacksym::cli::CommandTree tree(app, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? stacksym::cli::kExitOk : stacksym::cli::kExitUsage;
  }
  stacksym::cli::CommandRun run = tree.Selected();
  if (!run) {
    std::fputs(app.help().c_str(), stderr);
    return stacksym::cli::kExitUsage;
  }
  return run();
}
