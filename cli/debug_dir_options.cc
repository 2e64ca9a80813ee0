#include "debug_dir_options.h"

#include <algorithm>

namespace stacksym::cli {

std::vector<std::string> DebugDirCliOptions::Resolve(
    const std::vector<std::string>& defaults) const {
  std::vector<std::string> out = dirs;
  if (no_default) return out;
  for (const std::string& d : defaults) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

void AddDebugDirOptions(CLI::App& app, DebugDirCliOptions* options) {
  app.add_option("--debug-dir", options->dirs,
                 "Root of separate debug files, with a .build-id tree (repeatable; searched in "
                 "order, before /usr/lib/debug)")
      // One directory per --debug-dir: the addresses that may follow are not taken as more.
      ->allow_extra_args(false);
  app.add_flag("--no-default-debug-dir", options->no_default,
               "Do not search /usr/lib/debug (only the --debug-dir directories)");
}

}  // namespace stacksym::cli
