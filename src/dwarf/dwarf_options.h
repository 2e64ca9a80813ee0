// What the DWARF reader is told: where a binary's separate debug files are looked for
// (DebugFileSearch, also what a persisted index's cache key and identity are made of), and how
// DebugInfoSource answers (DwarfOptions). The symbolizer fills them from its SymbolizeOptions
// (ToDwarfOptions in src/symbolize/narrow_options.h); tests and tools fill them directly.
//
//   dwarf::DwarfOptions options;
//   options.search.debug_dirs = {"/srv/debug"};
//   auto source = DebugInfoSource::Open(elf, options);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"

namespace stacksym::dwarf {

struct DebugFileSearch {
  // Roots searched for separate debug files (".build-id/xx/rest.debug", debuglink paths).
  std::vector<std::string> debug_dirs = {kDefaultDebugDir};
  // The path the binary is known by where it runs, and the root that path is relative to (a
  // container's "/proc/PID/root"; empty: ours): its .gnu_debuglink file is also looked for
  // next to that path and under each debug dir by that path's directory.
  std::string known_path;
  std::string known_root;
  // The split-DWARF package of every binary's split units, in place of "<binary>.dwp" and
  // "<debug file>.dwp"; empty: those.
  std::string dwp_path;
  // A split unit's .dwo is also looked for in the binary's directory, by the last component
  // of its name, when comp_dir/dwo_name has none (build trees that were moved). Off: only
  // there, as LLVM looks.
  bool dwo_beside_binary = true;
  // Asked by build ID when no debug dir has the debug file (debuginfod); null: local only.
  std::shared_ptr<const BuildIdFetcher> fetcher;
};

struct DwarfOptions {
  DebugFileSearch search;
  bool demangle = true;  // SourceFrame::function demangled (else the linkage name)
  bool inlines = true;   // the whole inline chain (else only the out-of-line function)
  // Functions named by DW_AT_name ("f", "g<int>") instead of the linkage name.
  bool short_function_names = false;
  bool start_addresses = false;  // fill SourceFrame::start_address (DW_AT_low_pc)
  // Paths as the line table names them, without the compilation directory.
  bool relative_paths = false;
  // A batch asked while a big compressed .debug_info streams in gives back each unit's bytes
  // once its addresses are answered, when the source opened its debug file itself and no DIE
  // refers into another unit (UnitCache::AnswerWhileStreaming): the section's resident size
  // is then a window of it. The source is retired afterwards (DebugFiles::retired): it
  // answers nothing more, and a caller that needs the DWARF again opens it anew.
  bool release_streamed_info = false;
};

}  // namespace stacksym::dwarf
