// DebugInfoSource — DWARF behind the ELF symbolizer: vaddr → inline chain with file:line:column.
//
// Open() finds the DWARF of a binary (the binary itself, or a separate debug file found by
// build ID / .gnu_debuglink, plus a dwz supplementary file and split-DWARF .dwo/.dwp files:
// dwarf::DebugFiles) and builds only a small address → unit map. Each unit is parsed the
// first time an address needs it, once, into compact sorted tables (inline tree + line rows:
// dwarf::UnitCache); lookups are then binary searches. This class is the lookup front over
// the two: it turns a unit's tables into frames, variables and locals.
//
//   auto source = DebugInfoSource::Open(elf, options);   // nullptr: no DWARF at all
//   std::vector<SourceFrame> frames;
//   if (*source && (*source)->Lookup(vaddr, &frames)) ... // innermost first
//
// Thread-safety: one thread at a time (lookups fill caches); LookupBatch() itself fans out
// over the cores.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwarf/debug_files.h"
#include "dwarf/dwarf_options.h"
#include "dwarf/unit_cache.h"
#include "dwarf/variable_table.h"
#include "stacksym/elf.h"
#include "stacksym/frame.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

// Resets every field of `frame` to its default but keeps its strings' storage, so that frames
// reused answer after answer do not allocate (the direct path and the index's reader both).
inline void ClearKeepingStorage(SourceFrame& frame) {
  frame.function.clear();
  frame.raw_function.clear();
  frame.file.clear();
  frame.line = 0;
  frame.column = 0;
  frame.inlined = false;
  frame.discriminator = 0;
  frame.start_file.clear();
  frame.start_line = 0;
  frame.has_start_address = false;
  frame.start_address = 0;
}

class DebugInfoSource {
 public:
  struct OpenTuning {
    // A compressed .debug_info of at least this many (compressed) bytes is decompressed on a
    // background thread: Open() returns at once, and a batch parses each unit it needs as
    // soon as that unit's bytes are final. Tests lower it to take that path on small files.
    uint64_t stream_info_from = uint64_t{4} << 20;
  };
  // Returns nullptr (not an error) when no DWARF exists at all.
  static Result<std::unique_ptr<DebugInfoSource>> Open(std::shared_ptr<ElfFile> binary,
                                                       const dwarf::DwarfOptions& options,
                                                       const OpenTuning& tuning);
  static Result<std::unique_ptr<DebugInfoSource>> Open(std::shared_ptr<ElfFile> binary,
                                                       const dwarf::DwarfOptions& options) {
    return Open(std::move(binary), options, OpenTuning{});
  }
  // DWARF from raw section bytes (tests, fuzzing); the bytes must outlive the source.
  static Result<std::unique_ptr<DebugInfoSource>> FromSections(const dwarf::DwarfSections& sections,
                                                               const dwarf::DwarfOptions& options);
  ~DebugInfoSource();

  // Inline chain for vaddr, innermost first, last = out-of-line function. false when DWARF
  // covers no function and no line for vaddr. A frame whose function DWARF does not name
  // (line-table-only units) has an empty function.
  bool Lookup(uint64_t vaddr, std::vector<SourceFrame>* frames);
  // Where the out-of-line function around vaddr starts and ends (dwarf::OutermostRun): the
  // start and size of a function that only DWARF names, as a symbol would give them.
  dwarf::FunctionRun OutermostRun(uint64_t vaddr);

  // Lookup() of every address, on `threads` threads (0: one per CPU): each unit's tables are
  // built for just the addresses that fall in it, and those addresses are answered by the
  // thread that built them. frames_of(i) is where the chain of vaddrs[i] goes (called once
  // per address, from any thread); an address DWARF cannot answer gets an empty chain.
  void LookupBatch(std::span<const uint64_t> vaddrs,
                   const std::function<std::vector<SourceFrame>*(size_t)>& frames_of,
                   unsigned threads = 0);

  // The declaration of the variable stored at `vaddr` (see VariableTable for which count);
  // false when none covers it or its DW_AT_decl_line is 0 or absent. The variable table of
  // the whole file is built on the first call.
  bool LookupVariable(uint64_t vaddr, DataDeclaration* out);
  // The same for a relocatable object's data offset, which names no section, as LLVM looks it
  // up with every section at 0: of the variables whose start, as an offset into its section
  // (`offset_of`; nullopt: none), is at or below `offset`, the one with the
  // greatest (the later DIE among equal ones) answers, when it reaches `offset`.
  bool LookupVariableAtOffset(uint64_t offset,
                              const std::function<std::optional<uint64_t>(uint64_t)>& offset_of,
                              DataDeclaration* out);

  // The locals of the innermost subroutine covering `vaddr` (see ReadFrameLocals); nothing
  // when DWARF has no function there.
  void LookupLocals(uint64_t vaddr, std::vector<FrameLocal>* out);

  // The text the line table embeds (DW_LNCT_LLVM_source) for the file of the line row of
  // `vaddr` — the innermost frame's file, which llvm-symbolizer prints source context of from
  // it; nullopt when there is no row or its file has none. Valid while the source lives.
  std::optional<std::string_view> EmbeddedSource(uint64_t vaddr);

  // Path of the file DWARF is read from (the binary or its separate debug file).
  const std::string& path() const { return files_->path(); }
  // The files read (dwarf::DebugFiles: which, .dwp bookkeeping) and the units' tables
  // (dwarf::UnitCache: an index build exports every unit through it; parse diagnostics).
  dwarf::DebugFiles& files() { return *files_; }
  const dwarf::DebugFiles& files() const { return *files_; }
  dwarf::UnitCache& units() { return *units_; }
  // An index build gave the decompressed sections back (UnitCache::ReleaseExportedSections):
  // the source must answer nothing more.
  bool retired() const { return files_->retired(); }
  size_t memory_bytes() const;  // heap held by tables and caches (not the section bytes)
  // Heap held by the files opened for the binary (separate debug file, supplementary file,
  // .dwo files): their decompressed sections and symbol tables.
  size_t file_heap_bytes() const { return files_->file_heap_bytes(); }

 private:
  DebugInfoSource() = default;
  bool LookupInUnit(dwarf::UnitState& state, uint64_t vaddr, std::vector<SourceFrame>* frames);

  const dwarf::VariableTable* Variables();  // built on the first call; null without DWARF
  bool Declaration(const dwarf::VariableTable::Entry* variable, DataDeclaration* out);

  dwarf::DwarfOptions options_;
  std::unique_ptr<dwarf::DebugFiles> files_;
  std::unique_ptr<dwarf::UnitCache> units_;          // reads files_
  std::unique_ptr<dwarf::VariableTable> variables_;  // built on the first LookupVariable()
};

}  // namespace stacksym::dwarf
