// SymbolizeOptions as the modules below the symbolizer take them: the DWARF reader
// (dwarf::DwarfOptions) and the persisted index (index::IndexOptions for building, opening
// and naming indexes; index::AnswerOptions for its answers). The one place they are filled
// from the symbolizer's options.
//
//   auto source = DebugInfoSource::Open(elf, ToDwarfOptions(options));
#pragma once

#include "dwarf/dwarf_options.h"
#include "index/index_options.h"
#include "stacksym/symbolize.h"

namespace stacksym::symbolize {

dwarf::DebugFileSearch ToDebugFileSearch(const SymbolizeOptions& options);
dwarf::DwarfOptions ToDwarfOptions(const SymbolizeOptions& options);
index::IndexOptions ToIndexOptions(const SymbolizeOptions& options);
index::AnswerOptions ToAnswerOptions(const SymbolizeOptions& options);

}  // namespace stacksym::symbolize
