#include "cache_options.h"

#include "stacksym/symbol_cache.h"

namespace stacksym::cli {

std::string CacheCliOptions::Resolve() const {
  if (none) return {};
  return dir.empty() ? DefaultSymbolCacheDir() : dir;
}

void AddCacheOptions(CLI::App& app, CacheCliOptions* options) {
  app.add_option(
      "--cache-dir", options->dir,
      "Directory of persisted symbol indexes and unwind tables, one per build ID (default "
      "$XDG_CACHE_HOME/stacksym or ~/.cache/stacksym)");
  app.add_flag("--no-cache", options->none,
               "Parse debug info (and CFI) directly; no persisted index or unwind table");
}

}  // namespace stacksym::cli
