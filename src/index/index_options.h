// What the index module is told: where the cached indexes are and how a binary's DWARF is
// found for one (IndexOptions: the cache key, the identity of the files an index was built
// from, and the build), and what an answer from an index holds (AnswerOptions). The
// symbolizer fills them from its SymbolizeOptions (ToIndexOptions, ToAnswerOptions in
// src/symbolize/narrow_options.h).
//
//   index::IndexOptions options;
//   options.cache_dir = DefaultSymbolCacheDir();
//   auto index = index::OpenCachedIndex(elf, options);
//   if (index) index->Answer(vaddr, index::AnswerOptions{}, answer);
#pragma once

#include <cstdint>
#include <string>

#include "dwarf/dwarf_options.h"

namespace stacksym::index {

struct IndexOptions {
  std::string cache_dir;                         // where indexes are kept (required)
  uint64_t cache_max_bytes = uint64_t{1} << 30;  // least recently used indexes go beyond it
  // Where the binary's DWARF is found: its debug dirs are part of an index's file name, and
  // what was found where (and where was looked in vain) part of its identity.
  dwarf::DebugFileSearch search;
  unsigned threads = 0;  // an index build's threads (0: one per CPU)
  // A compressed .debug_info of at least this many bytes streams in while the units are
  // exported (DebugInfoSource::OpenTuning); tests lower it to take that path on small files.
  uint64_t stream_info_from = uint64_t{4} << 20;
};

struct AnswerOptions {
  bool demangle = true;       // names demangled (through the index's name memo)
  bool inlines = true;        // the whole inline chain (else only the out-of-line function)
  bool linkage_names = true;  // also raw_symbol and SourceFrame::raw_function
};

}  // namespace stacksym::index
