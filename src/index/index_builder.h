// IndexBuilder — the symbol index of one binary, for the whole binary: its symbol table
// flattened into address segments, and every DWARF unit's function segments, inline nodes
// (names demangled once), line rows and file paths, exactly as the direct path
// (ElfSymbolizer + DebugInfoSource) would compute them for any address. Units are parsed on
// SymbolizeOptions::threads threads.
//
//   Result<std::vector<uint8_t>> bytes = IndexBuilder::Build(elf, options);
//   ... write them; SymbolIndex::Open() reads them back ...
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym::symindex {

class IndexBuilder {
 public:
  // The DWARF is the one the direct path finds under `options` (debug dirs, known path); the
  // demangling and inline options do not matter (the index serves both settings).
  // `dwarf` (nullable) receives the DWARF source the index was built from, opened with
  // `options` but demangling and inlines on, instead of its being torn down here (tens of
  // milliseconds on a big binary, which a caller about to exit need not pay).
  static Result<std::vector<uint8_t>> Build(const std::shared_ptr<ElfFile>& elf,
                                            const SymbolizeOptions& options,
                                            std::unique_ptr<DebugInfoSource>* dwarf = nullptr);
};

}  // namespace stacksym::symindex
