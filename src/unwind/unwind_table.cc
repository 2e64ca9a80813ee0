// UnwindTable::Build — every FDE interpreted, compiled into 16-byte rows, the FDEs laid end
// to end by pc (.eh_frame before .debug_frame, no overlaps), gaps filled with kUndefined rows
// and equal neighbours merged. Go functions, which have no CFI in a stripped build (and none in
// .eh_frame ever), get rows from their .gopclntab stack depths, after every FDE.
#include <elf.h>

#include <algorithm>
#include <map>

#include "elf/go_pclntab.h"
#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_sources.h"
#include "unwind/eh_frame_hdr.h"
#include "unwind/row_compiler.h"

namespace stacksym {
namespace {

using unwind::CfiEntries;
using unwind::CfiSectionInfo;

// One FDE's rows, pcs absolute, before the table's base is known.
struct FdeRows {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint32_t first = 0;  // into the rows vector
  uint32_t count = 0;
  uint8_t source = 0;  // index of the CFI section: lower wins
};

struct AbsoluteRow {
  uint64_t pc;
  UnwindRow row;
};

bool SameRule(UnwindRow a, UnwindRow b) {
  a.pc = b.pc;
  return a == b;
}

class TableBuilder {
 public:
  explicit TableBuilder(const ElfFile& elf) : elf_(elf) {
    for (const ElfSegment& seg : elf.segments()) {
      if (seg.type == PT_LOAD && (seg.flags & PF_X) && seg.memsz > 0) {
        code_.push_back({seg.vaddr, seg.vaddr + seg.memsz});
      }
    }
  }

  Result<std::shared_ptr<const UnwindTable>> Build(const ElfFile* debug_file) {
    unwind::CfiSources sources = unwind::FindCfiSources(elf_, debug_file);
    for (const Error& e : sources.problems) Note(e.ToString());
    for (size_t i = 0; i < sources.sections.size(); ++i) {
      const CfiSectionInfo& info = sources.sections[i];
      CfiEntries entries = unwind::ReadCfiSection(info);
      if (info.kind == unwind::CfiSectionKind::kEhFrame && !sources.eh_frame_hdr.empty()) {
        CheckHeader(sources, info, entries);
      }
      AddEntries(info, entries, static_cast<uint8_t>(i));
    }
    AddGoFunctions(static_cast<uint8_t>(sources.sections.size()));
    return Compile(!sources.problems.empty());
  }

 private:
  void Note(const std::string& problem) {
    if (stats_.first_problem.empty()) stats_.first_problem = problem;
  }

  void CheckHeader(const unwind::CfiSources& sources, const CfiSectionInfo& info,
                   const CfiEntries& entries) {
    Result<unwind::EhFrameHdr> hdr =
        unwind::ReadEhFrameHdr(sources.eh_frame_hdr, sources.eh_frame_hdr_vaddr);
    if (!hdr) {
      stats_.eh_frame_hdr_problem = hdr.error().ToString();
      return;
    }
    stats_.eh_frame_hdr_fdes = hdr->table.size();
    if (Result<void> ok = unwind::CheckEhFrameHdr(*hdr, entries, info.vaddr); !ok) {
      stats_.eh_frame_hdr_problem = ok.error().ToString();
    }
  }

  // FDEs must describe code: with program headers, inside one executable segment. (A file
  // without any, such as a relocatable object or a hand-made test file, is taken as is.)
  bool InCode(uint64_t begin, uint64_t end) const {
    if (code_.empty()) return true;
    for (const auto& [lo, hi] : code_) {
      if (begin >= lo && end <= hi) return true;
    }
    return false;
  }

  void AddEntries(const CfiSectionInfo& info, const CfiEntries& entries, uint8_t source) {
    const char* section = unwind::CfiSectionName(info.kind);
    stats_.cies += entries.cies.size();
    stats_.fdes += entries.fdes.size();
    stats_.fdes_skipped += entries.problems.size();
    for (const unwind::CfiProblem& p : entries.problems) {
      Note(std::string(section) + " entry at " + std::to_string(p.offset) + ": " + p.message);
    }
    unwind::CfaInterpreter interpreter;
    std::vector<AbsoluteRow> fde_rows;
    for (const unwind::Fde& fde : entries.fdes) {
      if (fde.pc_begin == fde.pc_end) continue;  // covers nothing
      if (!InCode(fde.pc_begin, fde.pc_end)) {
        ++stats_.fdes_outside_code;
        continue;
      }
      const unwind::Cie& cie = entries.cies[fde.cie_index];
      fde_rows.clear();
      uint64_t unsupported = 0;
      Result<unwind::CfaProgramSummary> run =
          interpreter.Run(cie, fde, [&](uint64_t pc, const unwind::CfaState& state) {
            if (pc >= fde.pc_end) return;
            unwind::CompiledRow compiled = unwind::CompileRow(state, cie, 0);
            if (compiled.unsupported) ++unsupported;
            // Rows at the same pc (an advance by 0): the last one holds.
            if (!fde_rows.empty() && fde_rows.back().pc == pc) fde_rows.pop_back();
            fde_rows.push_back({pc, compiled.row});
          });
      if (!run) {
        ++stats_.fdes_skipped;
        Note(std::string(section) + " FDE at " + std::to_string(fde.offset) + ": " +
             run.error().message);
        continue;
      }
      stats_.unsupported_rows += unsupported;
      FdeRows f{.begin = fde.pc_begin,
                .end = fde.pc_end,
                .first = static_cast<uint32_t>(rows_.size()),
                .count = static_cast<uint32_t>(fde_rows.size()),
                .source = source};
      rows_.insert(rows_.end(), fde_rows.begin(), fde_rows.end());
      fdes_.push_back(f);
    }
  }

  // A Go function's rows from its pcsp table (amd64): the stack pointer is sp_delta below
  // the entry's, where the return address is, so CFA = RSP + sp_delta + 8. A function with a
  // frame keeps the caller's RBP at CFA - 16 (Go's prologue saves it there, before 1.21 right
  // after the SUBQ, from 1.21 as the PUSHQ that makes the frame); a frameless leaf (depth 0)
  // leaves RBP alone, which is why walking Go by frame pointers skips a leaf's caller.
  // Where goroutine and thread stacks begin, and where the runtime switches stacks, the return
  // address is undefined: the walk ends there, as Go's own traceback does.
  void AddGoFunctions(uint8_t source) {
    Result<std::optional<std::unique_ptr<elf::GoPclntab>>> found = elf::FindGoPclntab(elf_);
    if (!found) {
      Note(".gopclntab: " + found.error().message);
      return;
    }
    if (!*found) return;
    const elf::GoPclntab& table = ***found;
    std::vector<elf::GoStackDelta> runs;
    // Each run takes at least two bytes of its function's own pcsp table, so a real table gives
    // fewer runs than it has bytes; a corrupt one whose functions share a long table is cut off.
    uint64_t run_budget = table.table_size();
    for (size_t i = 0; i < table.function_count(); ++i) {
      std::optional<elf::GoFunction> function = table.FunctionAt(i);
      if (!function || function->end <= function->entry) continue;
      if (!table.StackDeltas(i, &runs)) {
        ++stats_.fdes_skipped;
        Note(".gopclntab: no stack depths for " + std::string(function->name));
        continue;
      }
      if (!InCode(function->entry, function->end)) {
        ++stats_.fdes_outside_code;
        continue;
      }
      if (runs.size() > run_budget) {
        Note(".gopclntab: more stack-depth runs than the table has bytes; the rest left out");
        break;
      }
      run_budget -= runs.size();
      const bool outermost = GoStackEnds(*function);
      FdeRows f{.begin = function->entry,
                .end = function->end,
                .first = static_cast<uint32_t>(rows_.size()),
                .count = static_cast<uint32_t>(runs.size()),
                .source = source};
      for (const elf::GoStackDelta& run : runs) rows_.push_back({run.begin, GoRow(run, outermost)});
      fdes_.push_back(f);
      ++stats_.go_functions;
    }
  }

  // Go's traceback stops at these too. Their flags come with Go 1.17; the names for older ones.
  static bool GoStackEnds(const elf::GoFunction& f) {
    if (f.flag & (elf::kGoFuncTopFrame | elf::kGoFuncSpWrite)) return true;
    for (std::string_view name : {"runtime.goexit", "runtime.mstart", "runtime.rt0_go",
                                  "runtime.morestack", "runtime.systemstack", "runtime.mcall"}) {
      if (f.name == name) return true;
    }
    return false;
  }

  static UnwindRow GoRow(const elf::GoStackDelta& run, bool outermost) {
    UnwindRow row{};
    row.cfa_rule = CfaRule::kRspOffset;
    row.cfa_offset = run.sp_delta + 8;
    row.ra_rule = outermost ? RegRule::kUndefined : RegRule::kAtCfa;
    row.ra_offset = outermost ? 0 : -8;
    row.rbp_rule = run.sp_delta > 0 ? RegRule::kAtCfa : RegRule::kSame;
    row.rbp_offset = run.sp_delta > 0 ? -16 : 0;
    return row;
  }

  // Keeps the FDEs that overlap no FDE of a better source (or an earlier one of the same).
  std::vector<FdeRows> NonOverlapping() {
    std::stable_sort(fdes_.begin(), fdes_.end(), [](const FdeRows& a, const FdeRows& b) {
      return a.source != b.source ? a.source < b.source : a.begin < b.begin;
    });
    std::map<uint64_t, uint64_t> taken;  // begin -> end
    std::vector<FdeRows> kept;
    for (const FdeRows& f : fdes_) {
      auto next = taken.lower_bound(f.begin);
      bool overlaps = next != taken.end() && next->first < f.end;
      if (!overlaps && next != taken.begin()) overlaps = std::prev(next)->second > f.begin;
      if (overlaps) {
        ++stats_.fdes_overlapping;
        continue;
      }
      taken.emplace(f.begin, f.end);
      kept.push_back(f);
    }
    std::sort(kept.begin(), kept.end(),
              [](const FdeRows& a, const FdeRows& b) { return a.begin < b.begin; });
    return kept;
  }

  void Push(std::vector<UnwindRow>& out, const UnwindRow& row) {
    if (!out.empty() && out.back().pc == row.pc) out.pop_back();
    if (!out.empty() && SameRule(out.back(), row)) return;
    out.push_back(row);
  }

  Result<std::shared_ptr<const UnwindTable>> Compile(bool section_problems) {
    std::vector<FdeRows> kept = NonOverlapping();
    std::vector<UnwindRow> table;
    uint64_t base = kept.empty() ? 0 : kept.front().begin;
    uint64_t end = base;
    for (const FdeRows& f : kept) {
      if (f.end - base > UINT32_MAX) {
        ++stats_.fdes_skipped;
        Note("FDE at pc " + std::to_string(f.begin) + " is outside the 4 GiB window of the table");
        continue;
      }
      if (!table.empty() && end < f.begin) {
        UnwindRow gap{};
        gap.pc = static_cast<uint32_t>(end - base);
        Push(table, gap);
      }
      for (uint32_t i = 0; i < f.count; ++i) {
        UnwindRow row = rows_[f.first + i].row;
        row.pc = static_cast<uint32_t>(rows_[f.first + i].pc - base);
        Push(table, row);
      }
      end = f.end;
    }
    if (table.empty() && (stats_.fdes_skipped > 0 || section_problems)) {
      return MakeError(ErrorCode::kMalformed,
                       "no usable call frame information: " + stats_.first_problem)
          .WithFile(elf_.path());
    }
    table.shrink_to_fit();
    std::span<const uint8_t> id = elf_.build_id();
    return std::make_shared<const UnwindTable>(base, end, std::move(table), std::move(stats_),
                                               std::vector<uint8_t>(id.begin(), id.end()));
  }

  const ElfFile& elf_;
  UnwindTableStats stats_;
  std::vector<AbsoluteRow> rows_;
  std::vector<FdeRows> fdes_;
  std::vector<std::pair<uint64_t, uint64_t>> code_;  // executable PT_LOAD ranges
};

}  // namespace

UnwindTable::UnwindTable(uint64_t base_pc, uint64_t end_pc, std::vector<UnwindRow> rows,
                         UnwindTableStats stats, std::vector<uint8_t> build_id)
    : base_pc_(base_pc),
      end_pc_(end_pc),
      rows_(std::move(rows)),
      stats_(std::move(stats)),
      build_id_(std::move(build_id)) {}

Result<std::shared_ptr<const UnwindTable>> UnwindTable::Build(const ElfFile& elf,
                                                              const ElfFile* debug_file) {
  return TableBuilder(elf).Build(debug_file);
}

const UnwindRow* UnwindTable::Find(uint64_t vaddr) const {
  if (rows_.empty() || vaddr < base_pc_ || vaddr >= end_pc_) return nullptr;
  const uint32_t pc = static_cast<uint32_t>(vaddr - base_pc_);
  auto it = std::upper_bound(rows_.begin(), rows_.end(), pc,
                             [](uint32_t p, const UnwindRow& r) { return p < r.pc; });
  if (it == rows_.begin()) return nullptr;
  return &*std::prev(it);
}

}  // namespace stacksym
