// Subcommand registry of the `stacksym` command. Each cli/cmd_*.cc registers one subcommand
// with a static CommandRegistrar; main.cc builds the CLI11 tree from the registry, parses,
// and runs the selected command. A command's path may have several words
// ("symbolize elf"): the leading words become groups that require a subcommand.
//
//   static stacksym::cli::CommandRegistrar registrar(
//       "buildid", "Print GNU build IDs of ELF files",
//       [](CLI::App& app) -> stacksym::cli::CommandRun {
//         auto files = std::make_shared<std::vector<std::string>>();
//         app.add_option("FILE", *files)->required();
//         return [files] { return 0; };
//       });
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

namespace stacksym::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;

// Keeps `object` alive until the process exits, and never destroys it: a command that built
// hundreds of MB of tables (symbolizers of big binaries) returns straight away and lets the
// kernel reclaim the memory in one go instead of freeing it piece by piece. Reachable from a
// list that is never destroyed, so leak checkers do not report it.
void KeepUntilExit(const void* object);
template <class T>
void KeepUntilExit(std::unique_ptr<T> object) {
  KeepUntilExit(static_cast<const void*>(object.release()));
}

// For commands that run once and exit (symbolize, cache build): memory they free stays in
// the heap for their next allocations. By default glibc unmaps freed blocks above a
// threshold and trims the heap's top, so each reuse faults in pages the kernel must zero
// again (a fifth of an index build's CPU went to that). Not for serve or record, which
// should give memory back.
void KeepFreedMemoryForReuse();

using CommandRun = std::function<int()>;
using CommandSetup = std::function<CommandRun(CLI::App& command)>;

struct CommandRegistrar {
  CommandRegistrar(std::string path, std::string description, CommandSetup setup);
};

// Called by main(): adds every registered command to `app`, with its options only when argv
// names it; returns the run function of the command that was selected after parsing (empty
// when none).
class CommandTree {
 public:
  CommandTree(CLI::App& app, int argc, char** argv);
  CommandRun Selected() const;

 private:
  struct Leaf {
    CLI::App* app;
    CommandRun run;
  };
  std::vector<Leaf> leaves_;
};

}  // namespace stacksym::cli
