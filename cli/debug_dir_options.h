// --debug-dir DIR (repeatable) and --no-default-debug-dir, the same on every subcommand that
// looks for separate debug files: the given directories are searched first, in the order
// given, then the default /usr/lib/debug (as gdb, perf and elfutils search the system debug
// directory too); --no-default-debug-dir drops the default, so that only the given ones are
// searched.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace stacksym::cli {

struct DebugDirCliOptions {
  std::vector<std::string> dirs;
  bool no_default = false;
  // `dirs`, then each of `defaults` not already among them (none with --no-default-debug-dir).
  std::vector<std::string> Resolve(const std::vector<std::string>& defaults) const;
};

void AddDebugDirOptions(CLI::App& app, DebugDirCliOptions* options);

}  // namespace stacksym::cli
