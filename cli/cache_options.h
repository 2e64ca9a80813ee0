// --cache-dir DIR and --no-cache, shared by the commands that symbolize: which directory of
// persisted symbol indexes to use (default $XDG_CACHE_HOME/stacksym or ~/.cache/stacksym).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace stacksym::cli {

struct CacheCliOptions {
  std::string dir;
  bool none = false;
  // The directory to put in SymbolizeOptions::cache_dir: empty with --no-cache.
  std::string Resolve() const;
};

void AddCacheOptions(CLI::App& app, CacheCliOptions* options);

}  // namespace stacksym::cli
