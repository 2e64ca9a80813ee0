// stacksym/unwind.h — compact unwind tables compiled from DWARF CFI (.eh_frame, .debug_frame)
// and Go's .gopclntab stack depths, and the user-space unwinder that walks a copied user stack
// with them.
//
//   Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open("/usr/lib/x86_64-linux-gnu/libc.so.6");
//   Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(**elf);
//   const UnwindRow* row = (*table)->Find(vaddr);   // the rule in force at that pc
//   // row->cfa_rule == CfaRule::kRspOffset: CFA = RSP + row->cfa_offset, and so on.
//
//   UnwindTableCache cache({.max_bytes = 64 << 20});   // shared per build ID, bounded in bytes
//   std::shared_ptr<const UnwindTable> t = cache.Get(**elf);
//   UnwindTableCache persisted({.dir = DefaultSymbolCacheDir()});  // also kept on disk
//
// A table covers one ELF file, by virtual address (as in the file's program headers); a
// process's pc maps to it through the module's load bias. Rows are sorted by pc; a row holds
// from its pc up to the next row's pc; pcs not covered by any FDE get a kUndefined row, so
// Find() never extends an FDE's last rule into the next function's gap. Only what an x86_64
// user-space unwinder needs is kept: the CFA rule, and where the caller's return address and
// RBP are (every other register is irrelevant to walking the stack).
//
// Thread-safety: a built UnwindTable is immutable; UnwindTableCache is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym {

// How the Canonical Frame Address (the caller's RSP) of a frame is computed.
enum class CfaRule : uint8_t {
  kUndefined = 0,   // no CFI covers this pc, or a rule we cannot evaluate (see UnwindRow::flags)
  kRspOffset,       // CFA = RSP + cfa_offset
  kRbpOffset,       // CFA = RBP + cfa_offset
  kDerefRspOffset,  // CFA = *(RSP + cfa_offset)   signal frames: the saved RSP in the ucontext
  kDerefRbpOffset,  // CFA = *(RBP + cfa_offset)   gcc's stack realignment (DW_OP_breg6 n; deref)
  kPlt,             // CFA = RSP + cfa_offset + ((RIP & 15) >= plt_threshold ? 8 : 0)  PLT stubs
};

// Where the caller's value of a register (the return address, or RBP) is.
enum class RegRule : uint8_t {
  kSame = 0,     // unchanged by this frame (RBP before it is saved)
  kUndefined,    // the register has no value: for the return address, the outermost frame
  kAtCfa,        // saved in memory at CFA + offset            (DW_CFA_offset & co.)
  kAtRsp,        // saved in memory at RSP + offset            (DW_CFA_expression: breg7 n)
  kValCfa,       // the value is CFA + offset                  (DW_CFA_val_offset)
  kUnsupported,  // some other rule (register, other expression): the unwinder stops here
};

enum UnwindRowFlags : uint8_t {
  kUnwindRowSignalFrame = 1,     // FDE of a signal trampoline (augmentation 'S'): the caller's pc
                                 // is the interrupted instruction, not a return address
  kUnwindRowUnsupportedCfa = 2,  // kUndefined because the CFA rule could not be expressed
};

// One row of a table: 16 bytes, the layout the BPF unwinder will read from a map.
struct UnwindRow {
  uint32_t pc;  // start of the row, relative to UnwindTable::base_pc()
  CfaRule cfa_rule;
  RegRule ra_rule;     // the return address (DWARF column 16)
  RegRule rbp_rule;    // RBP (DWARF register 6)
  uint8_t flags;       // UnwindRowFlags
  int32_t cfa_offset;  // kPlt: the offset before the PLT adjustment
  int16_t ra_offset;
  int16_t rbp_offset;  // kPlt: plt_threshold lives here (the rule has no RBP offset)
  friend bool operator==(const UnwindRow&, const UnwindRow&) = default;
};
static_assert(sizeof(UnwindRow) == 16);

struct UnwindTableStats {
  uint64_t cies = 0;
  uint64_t fdes = 0;
  uint64_t fdes_skipped = 0;         // malformed, or outside the 4 GiB window of the table
  uint64_t unsupported_rows = 0;     // rows whose CFA or RA/RBP rule could not be expressed
  std::string first_problem;         // what the first skipped FDE / bad rule was, for messages
  uint64_t fdes_overlapping = 0;     // left out: an FDE of .eh_frame (or one met earlier) covers
                                     // their pcs already (.debug_frame twins, discarded code)
  uint64_t fdes_outside_code = 0;    // left out: not inside an executable PT_LOAD segment
                                     // (.debug_frame FDEs of code the linker discarded)
  uint64_t eh_frame_hdr_fdes = 0;    // entries of .eh_frame_hdr's search table
  std::string eh_frame_hdr_problem;  // empty when .eh_frame_hdr agrees with .eh_frame or is absent
  uint64_t go_functions = 0;         // Go functions compiled from .gopclntab's stack depths
};

class UnwindTable {
 public:
  // Compiles every FDE of `elf`'s .eh_frame and .debug_frame (and of `debug_file`'s
  // .debug_frame when given: separate debug files carry .debug_frame only). When both have
  // an FDE for a pc, .eh_frame wins (it is what the runtime itself uses). Adjacent rows with
  // equal rules are merged. A file with no CFI at all gives an empty table, not an error;
  // malformed CFI gives an error only when nothing usable was found (otherwise the bad FDEs
  // are skipped and counted in stats()).
  static Result<std::shared_ptr<const UnwindTable>> Build(const ElfFile& elf,
                                                          const ElfFile* debug_file = nullptr);

  // The row in force at `vaddr`, or nullptr when vaddr is before the first row or past the
  // end of the table. The returned row may be kUndefined (a gap between FDEs).
  const UnwindRow* Find(uint64_t vaddr) const;

  uint64_t base_pc() const { return base_pc_; }
  uint64_t end_pc() const { return end_pc_; }  // one past the last covered pc
  std::span<const UnwindRow> rows() const { return rows_; }
  const UnwindTableStats& stats() const { return stats_; }
  std::span<const uint8_t> build_id() const { return build_id_; }
  size_t memory_bytes() const { return sizeof(*this) + rows_.capacity() * sizeof(UnwindRow); }
  bool empty() const { return rows_.empty(); }

  // For tests and tools: a table made from rows already compiled.
  UnwindTable(uint64_t base_pc, uint64_t end_pc, std::vector<UnwindRow> rows,
              UnwindTableStats stats, std::vector<uint8_t> build_id);

 private:
  uint64_t base_pc_ = 0;
  uint64_t end_pc_ = 0;
  std::vector<UnwindRow> rows_;
  UnwindTableStats stats_;
  std::vector<uint8_t> build_id_;
};

struct UnwindTableCacheOptions {
  size_t max_bytes = 256u << 20;  // least recently used tables are dropped past this
  // The directory of persisted tables (the symbol cache directory, see symbol_cache.h and
  // docs/unwind-table-format.md); empty: tables live in memory only. A table of a binary alone
  // (no debug_file) is loaded from `<dir>/<build ID>-v<N>.unwtab` when that file is intact
  // and of this binary, else built and stored there; the directory is then pruned to
  // dir_max_bytes (indexes and tables together, least recently used first).
  std::string dir;
  uint64_t dir_max_bytes = uint64_t{1} << 30;
};

// Tables shared by build ID (files without one: by file identity dev/inode/size/mtime).
// With a directory, a damaged file is reported once on stderr and rebuilt; a directory that
// cannot be written is reported once and the tables are kept in memory only.
class UnwindTableCache {
 public:
  explicit UnwindTableCache(UnwindTableCacheOptions options = {});
  ~UnwindTableCache();
  // The table of `elf`, built on first use. A file whose CFI cannot be read gives an empty
  // table (remembered too, so it is not parsed again); never null.
  std::shared_ptr<const UnwindTable> Get(const ElfFile& elf, const ElfFile* debug_file = nullptr);
  size_t bytes() const;
  size_t size() const;
  uint64_t evictions() const;
  uint64_t dir_loads() const;   // tables read from the directory
  uint64_t dir_stores() const;  // tables built and written to it

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stacksym
