// elf/go_pclntab.h — Go's own symbol table: the pclntab (".gopclntab") that every Go binary
// keeps for its runtime's tracebacks, also when `-ldflags='-s -w'` strips .symtab and DWARF.
//
// It maps a pc to its function (name, entry, end), to file:line through the function's pcfile
// and pcln tables (varint-delta pc-value tables), and to the chain of functions inlined there
// (FUNCDATA_InlTree indexed by PCDATA_InlTreeIndex), innermost first. Table layouts of Go 1.2
// (magic 0xfffffffb), 1.16 (0xfffffffa), 1.18 (0xfffffff0) and 1.20 (0xfffffff1) are read.
//
// Inline trees: from 1.16 on the magic says the layout. Tables with the 1.2 magic (written by
// Go 1.2 to 1.15) changed it three times without a new one, so the release that linked the
// binary decides (FindGoPclntab reads its "go1.N" from .go.buildinfo, else from the
// runtime.buildVersion symbol; Parse takes it as `go_minor`):
//   go1.9–1.11  _func ends in an int32 nfuncdata; PCDATA_InlTreeIndex 1, FUNCDATA_InlTree 2;
//               16-byte nodes {parent int32, file int32, line int32, func int32}: a caller's
//               file:line is the node's own, the caller the node at `parent`;
//   go1.12      _func ends in {funcID, 2 unused bytes, nfuncdata uint8}; indices 1 and 2;
//               20-byte nodes {parent int16, funcID, pad, file, line, func, parentPc int32}:
//               a caller's file:line is its tables' at entry + parentPc (as from 1.16 on);
//   go1.13–1.15 as 1.12, with PCDATA_InlTreeIndex 2 and FUNCDATA_InlTree 4.
// An unknown release (neither .go.buildinfo nor the symbol: a stripped binary before Go 1.13,
// a "devel" build), one before 1.9 (no inline trees), one that writes a later magic, or a
// record that contradicts its release's layout gives no inline frames — never a chain read in
// a wrong layout, and no layout guessed from the bytes alone.
//
// Every byte is read bounds-checked through ByteCursor: a corrupt table gives fewer answers or
// an error, never a read outside the mapping.
//
//   auto table = elf::FindGoPclntab(elf);         // nullopt: not a Go binary
//   std::vector<elf::GoFrame> frames;
//   elf::GoFunction function;
//   if (table && *table && (**table).Lookup(pc, true, &frames, &function)) ...
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::elf {

enum class GoPclntabVersion : uint8_t { k1_2, k1_16, k1_18, k1_20 };
const char* GoPclntabVersionName(GoPclntabVersion version);  // "1.2", "1.16", ...

// A piece of the program's memory image as the file holds it (a PT_LOAD segment's file bytes):
// funcdata pointers, the moduledata and the inline trees are found through it.
struct GoSegment {
  uint64_t vaddr = 0;
  std::span<const uint8_t> bytes;
  bool writable = false;  // where the runtime's moduledata may be
};

struct GoFunction {
  uint64_t entry = 0;
  uint64_t end = 0;       // the next function's entry (or the table's end pc)
  std::string_view name;  // into the table; empty when its name offset is corrupt
  uint8_t flag = 0;       // the runtime's funcFlag (Go 1.17+): kGoFuncTopFrame, kGoFuncSpWrite
};
// A function at the top of a stack (runtime.goexit, mstart, rt0_go) ...
inline constexpr uint8_t kGoFuncTopFrame = 1;
// ... or one that writes SP (morestack, systemstack, mcall: they switch stacks), where Go's own
// traceback stops too.
inline constexpr uint8_t kGoFuncSpWrite = 2;

// A run of a function's pcs with one stack depth (its pcsp table): from `begin` to `end` the
// stack pointer is `sp_delta` bytes below where it was at the function's entry (where it
// pointed at the return address).
struct GoStackDelta {
  uint64_t begin = 0;
  uint64_t end = 0;
  int32_t sp_delta = 0;
};

// One frame of a pc's inline chain. Views into the table's bytes.
struct GoFrame {
  std::string_view function;
  std::string_view file;  // empty when unknown
  uint32_t line = 0;
  bool inlined = false;  // every frame but the last
};

class GoPclntab {
 public:
  // A memo of the pc-value tables Lookup decodes, for a caller that asks many pcs of each
  // function (an index build asks every piece of LookupBounds, in order): the last few tables
  // decoded once each, instead of from their start for every pc. The same answers as without.
  class LookupMemo {
   private:
    friend class GoPclntab;
    struct Run {
      uint64_t from = 0, to = 0;
      int32_t value = 0;
    };
    struct Table {
      uint64_t offset = 0, entry = 0;
      bool ascending = true;  // every run ends at or after its start (no pc overflowed)
      std::vector<Run> runs;
    };
    std::vector<Table> tables_;
    // Where the entries ascend (the binary search finds the last entry at or before a pc),
    // the function found last answers for the pcs up to the next entry without a search.
    int ascending_entries_ = -1;  // unknown yet
    size_t function_ = SIZE_MAX;
    uint64_t entry_ = 0, end_ = 0;
  };

  // `table`: the bytes from the table's header on (they may run past its end); `table_vaddr`:
  // where the header is in memory; `image`: the program's loaded bytes, for inline trees
  // (empty: no inline frames); `go_minor`: N of the release "go1.N" that linked the binary (0:
  // unknown), which a 1.2-magic table needs for its inline trees (see the top of this file).
  static Result<std::unique_ptr<GoPclntab>> Parse(std::span<const uint8_t> table,
                                                  uint64_t table_vaddr,
                                                  std::vector<GoSegment> image,
                                                  uint32_t go_minor = 0);

  GoPclntabVersion version() const { return version_; }
  uint8_t pointer_size() const { return pointer_size_; }
  uint8_t pc_quantum() const { return quantum_; }
  size_t function_count() const { return function_count_; }
  uint32_t go_minor() const { return go_minor_; }  // as given to Parse
  uint64_t table_vaddr() const { return table_vaddr_; }
  size_t table_size() const { return table_.size(); }  // bytes from the header to the mapping's end
  // Where the runtime's go:func.* data starts (Go 1.18+ funcdata are offsets from it; found
  // through the moduledata); 0 when unknown, and then no inline frames for those versions.
  uint64_t gofunc() const { return gofunc_; }

  // The i-th function of the table (i < function_count()); nullopt when its record is corrupt.
  std::optional<GoFunction> FunctionAt(size_t i) const;
  // The function whose [entry, end) holds pc.
  std::optional<GoFunction> FindFunction(uint64_t pc) const;
  // pc's frames, innermost first (only the function itself without `inlines`), and the
  // function; false when no function covers pc. A frame whose file:line tables are corrupt
  // keeps its name with an empty file and line 0.
  bool Lookup(uint64_t pc, bool inlines, std::vector<GoFrame>* frames, GoFunction* function,
              LookupMemo* memo = nullptr) const;
  // The pcs at which Lookup's answer can change, sorted, each once: every function entry (and
  // the table's end pc), and every run bound of every function's file, line and inline-index
  // tables. A pc's answer depends only on how it compares with these (its chain's outer frames
  // on its inline node alone), so Lookup answers every pc of [bound k, bound k+1) — and of
  // [0, the first) and [the last, 2^64) — as it answers the first: what a symbol index stores
  // (src/index/), a table's answers without a second reading of it.
  std::vector<uint64_t> LookupBounds() const;
  // The i-th function's stack depths, from its entry on without gaps, up to the end of its code
  // (the alignment padding before the next function is not covered); false when its pcsp
  // table is missing or corrupt.
  bool StackDeltas(size_t i, std::vector<GoStackDelta>* runs) const;

 private:
  struct FuncRecord;  // a function's _func record, decoded
  struct InlineNode;  // a node of an inline tree, decoded
  // How this table's inline trees are laid out (the top of this file); kNone: no inline frames.
  enum class InlineLayout : uint8_t { kNone, kGo19, kGo112, kGo113, kGo116, kGo118, kGo120 };
  GoPclntab() = default;
  Result<void> ParseHeader();
  std::optional<size_t> FindIndex(uint64_t pc) const;
  std::optional<size_t> FindIndex(uint64_t pc, LookupMemo* memo) const;
  std::optional<uint64_t> EntryAt(size_t i) const;
  std::optional<FuncRecord> RecordAt(size_t i) const;
  // Calls run(from, to, value) for each run of a pc-value table until it returns false; false
  // when the table is absent or corrupt before its end.
  bool ForEachPcValue(uint64_t table_offset, uint64_t entry,
                      const std::function<bool(uint64_t, uint64_t, int32_t)>& run) const;
  // The value of the run holding pc (nullopt: none), read through `memo` when given.
  std::optional<int32_t> PcValue(uint64_t table_offset, uint64_t entry, uint64_t pc,
                                 LookupMemo* memo = nullptr) const;
  std::string_view FuncName(int64_t name_offset) const;
  std::string_view FileName(const FuncRecord& f, int32_t file_number) const;
  std::span<const uint8_t> ImageBytes(uint64_t vaddr, size_t size) const;
  std::optional<uint64_t> InlineTree(const FuncRecord& f) const;
  // The offset in table_ of f's inline-index pc-value table (nullopt: none or no tree).
  std::optional<uint64_t> InlineIndexTable(const FuncRecord& f) const;
  std::optional<InlineNode> NodeAt(uint64_t tree, int32_t index) const;
  void ChooseInlineLayout();
  // The frames of the chain from `node` out (Go 1.9–1.11: through the nodes' parents).
  void AppendParentChain(const FuncRecord& f, uint64_t tree, int32_t node,
                         const GoFunction& function, std::vector<GoFrame>* frames) const;
  void FindGofunc();

  std::span<const uint8_t> table_;
  uint64_t table_vaddr_ = 0;
  std::vector<GoSegment> image_;
  GoPclntabVersion version_ = GoPclntabVersion::k1_2;
  uint8_t quantum_ = 1;
  uint8_t pointer_size_ = 8;
  size_t function_count_ = 0;
  uint64_t text_start_ = 0;   // 1.18+: function entries are offsets from it
  uint64_t funcnametab_ = 0;  // offsets into table_ (1.2: names are relative to the table)
  uint64_t cutab_ = 0;
  uint64_t filetab_ = 0;
  uint64_t pctab_ = 0;    // 1.2: pc-value tables are relative to the table itself
  uint64_t functab_ = 0;  // the (entry, func offset) pairs; funcs are relative to it
  uint64_t gofunc_ = 0;
  uint32_t go_minor_ = 0;
  InlineLayout inline_layout_ = InlineLayout::kNone;
  uint32_t pcdata_inline_index_ = 0;   // PCDATA_InlTreeIndex of the layout
  uint32_t funcdata_inline_tree_ = 0;  // FUNCDATA_InlTree of the layout
};

// The Go pclntab of an ELF file: the .gopclntab section (.data.rel.ro.gopclntab in PIE
// linked by Go), else the table runtime.pclntab or runtime.firstmoduledata points to, else —
// in a Go binary (.go.buildinfo, .note.go.buildid) or one without section headers — a table
// header found in the loaded segments (ld merges the PIE section into .data.rel.ro).
// nullopt when the file has none; an error when the named section is corrupt. The table's
// go_minor() is the release the binary names (.go.buildinfo, else runtime.buildVersion).
Result<std::optional<std::unique_ptr<GoPclntab>>> FindGoPclntab(const ElfFile& elf);

}  // namespace stacksym::elf
