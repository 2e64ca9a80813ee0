#include "symbolize/narrow_options.h"

#include "index/index_cache.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::symbolize {

dwarf::DebugFileSearch ToDebugFileSearch(const SymbolizeOptions& options) {
  dwarf::DebugFileSearch search;
  search.debug_dirs = options.debug_dirs;
  search.known_path = options.known_path;
  search.known_root = options.known_root;
  search.dwp_path = options.dwp_path;
  search.dwo_beside_binary = options.dwo_beside_binary;
  search.fetcher = options.fetcher;
  return search;
}

dwarf::DwarfOptions ToDwarfOptions(const SymbolizeOptions& options) {
  dwarf::DwarfOptions out;
  out.search = ToDebugFileSearch(options);
  out.demangle = options.demangle;
  out.inlines = options.inlines;
  out.short_function_names = options.short_function_names;
  out.start_addresses = options.start_addresses;
  out.relative_paths = options.relative_paths;
  out.release_streamed_info = options.release_dwarf_as_read;
  return out;
}

index::IndexOptions ToIndexOptions(const SymbolizeOptions& options) {
  index::IndexOptions out;
  out.cache_dir = options.cache_dir;
  out.cache_max_bytes = options.cache_max_bytes;
  out.search = ToDebugFileSearch(options);
  out.threads = options.threads;
  return out;
}

index::AnswerOptions ToAnswerOptions(const SymbolizeOptions& options) {
  index::AnswerOptions out;
  out.demangle = options.demangle;
  out.inlines = options.inlines;
  out.linkage_names = options.linkage_names;
  return out;
}

}  // namespace stacksym::symbolize

namespace stacksym {

// stacksym/symbol_cache.h's, here because it takes SymbolizeOptions, which the index module
// does not see.
Result<SymbolCacheEntry> BuildSymbolIndex(const std::string& path,
                                          const SymbolizeOptions& options) {
  return index::BuildSymbolIndex(path, symbolize::ToIndexOptions(options));
}

}  // namespace stacksym
