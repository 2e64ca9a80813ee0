// Compiled tables: lookups on known code of the fixtures and of libc (function entry, frame
// set-up, VLA, PLT stubs, the signal trampoline), gaps, merging, .eh_frame winning over
// .debug_frame, separate debug files, agreement with the interpreted rows, and the cache.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "../elf/tool_runner.h"
#include "cfi_bytes.h"
#include "cfi_elf.h"
#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_sources.h"
#include "unwind/row_compiler.h"

namespace stacksym::testing {
namespace {

constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

std::shared_ptr<ElfFile> Open(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << path << ": " << (elf ? "" : elf.error().ToString());
  return elf ? *elf : nullptr;
}

std::shared_ptr<const UnwindTable> Build(const ElfFile& elf, const ElfFile* debug = nullptr) {
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(elf, debug);
  EXPECT_TRUE(table.ok()) << (table ? "" : table.error().ToString());
  return table ? *table : nullptr;
}

const ElfSymbol& Symbol(const ElfFile& elf, std::string_view name) {
  const ElfSymbol* s = elf.symbols().FindByName(name);
  EXPECT_NE(s, nullptr) << name;
  static const ElfSymbol kNone;
  return s ? *s : kNone;
}

std::span<const uint8_t> CodeAt(const ElfFile& elf, uint64_t vaddr, size_t n) {
  std::optional<uint64_t> off = elf.VaddrToFileOffset(vaddr);
  if (!off || *off + n > elf.bytes().size()) return {};
  return elf.bytes().subspan(*off, n);
}

void ExpectEntryRow(const UnwindRow* row, const std::string& what) {
  ASSERT_NE(row, nullptr) << what;
  EXPECT_EQ(row->cfa_rule, CfaRule::kRspOffset) << what;
  EXPECT_EQ(row->cfa_offset, 8) << what;
  EXPECT_EQ(row->ra_rule, RegRule::kAtCfa) << what;
  EXPECT_EQ(row->ra_offset, -8) << what;
  EXPECT_EQ(row->rbp_rule, RegRule::kSame) << what;
}

TEST(UnwindTable, FunctionEntriesOfFixtures) {
  for (const char* name : {"unwind_gcc_o2", "unwind_gcc_o0", "unwind_clang_o2", "unwind_clang_o0",
                           "unwind_gcc_debug_frame"}) {
    std::shared_ptr<ElfFile> elf = Open(Fixture(name));
    ASSERT_TRUE(elf);
    std::shared_ptr<const UnwindTable> table = Build(*elf);
    ASSERT_TRUE(table);
    for (const char* fn : {"leaf", "middle", "with_vla", "sort_some", "main"}) {
      ExpectEntryRow(table->Find(Symbol(*elf, fn).address), std::string(name) + " " + fn);
    }
  }
}

// After `push rbp; mov rbp, rsp` the CFA is RBP+16 and the caller's RBP is at CFA-16.
TEST(UnwindTable, FramePointerPrologue) {
  for (const char* name : {"unwind_gcc_o0", "unwind_clang_o0"}) {
    std::shared_ptr<ElfFile> elf = Open(Fixture(name));
    ASSERT_TRUE(elf);
    std::shared_ptr<const UnwindTable> table = Build(*elf);
    ASSERT_TRUE(table);
    const ElfSymbol& fn = Symbol(*elf, "middle");
    std::span<const uint8_t> code = CodeAt(*elf, fn.address, 16);
    ASSERT_EQ(code.size(), 16u);
    const uint8_t mov_rbp_rsp[] = {0x48, 0x89, 0xe5};
    size_t at = 0;
    while (at + 3 <= code.size() && std::memcmp(&code[at], mov_rbp_rsp, 3) != 0) ++at;
    ASSERT_LT(at + 3, code.size()) << name << ": no mov rbp, rsp in the prologue";
    ASSERT_GE(at, 1u);
    const UnwindRow* after_push = table->Find(fn.address + at);
    ASSERT_NE(after_push, nullptr);
    EXPECT_EQ(after_push->cfa_rule, CfaRule::kRspOffset) << name;
    EXPECT_EQ(after_push->cfa_offset, 16) << name;
    EXPECT_EQ(after_push->rbp_rule, RegRule::kAtCfa) << name;
    EXPECT_EQ(after_push->rbp_offset, -16) << name;
    const UnwindRow* framed = table->Find(fn.address + at + 3);
    ASSERT_NE(framed, nullptr);
    EXPECT_EQ(framed->cfa_rule, CfaRule::kRbpOffset) << name;
    EXPECT_EQ(framed->cfa_offset, 16) << name;
    EXPECT_EQ(framed->ra_rule, RegRule::kAtCfa) << name;
    EXPECT_EQ(framed->ra_offset, -8) << name;
    EXPECT_EQ(framed->rbp_rule, RegRule::kAtCfa) << name;
    EXPECT_EQ(framed->rbp_offset, -16) << name;
  }
}

// A VLA makes even -O2 -fomit-frame-pointer code compute its CFA from RBP.
TEST(UnwindTable, VlaUsesRbpCfa) {
  for (const char* name : {"unwind_gcc_o2", "unwind_clang_o2"}) {
    std::shared_ptr<ElfFile> elf = Open(Fixture(name));
    ASSERT_TRUE(elf);
    std::shared_ptr<const UnwindTable> table = Build(*elf);
    ASSERT_TRUE(table);
    const ElfSymbol& fn = Symbol(*elf, "with_vla");
    bool rbp_based = false;
    for (uint64_t pc = fn.address; pc < fn.address + fn.size; ++pc) {
      const UnwindRow* row = table->Find(pc);
      ASSERT_NE(row, nullptr);
      if (row->cfa_rule == CfaRule::kRbpOffset && row->cfa_offset == 16 &&
          row->rbp_rule == RegRule::kAtCfa && row->rbp_offset == -16) {
        rbp_based = true;
      }
    }
    EXPECT_TRUE(rbp_based) << name;
  }
}

TEST(UnwindTable, PltRows) {
  for (const std::string& path : {Fixture("unwind_gcc_o2"), std::string(kLibc)}) {
    std::shared_ptr<ElfFile> elf = Open(path);
    ASSERT_TRUE(elf);
    const ElfSection* plt = elf->FindSection(".plt");
    if (plt == nullptr) GTEST_SKIP() << path << " has no .plt";
    std::shared_ptr<const UnwindTable> table = Build(*elf);
    ASSERT_TRUE(table);
    // PLT0 pushes the GOT's second word then jumps: RSP+16, then RSP+24.
    const UnwindRow* plt0 = table->Find(plt->addr);
    ASSERT_NE(plt0, nullptr) << path;
    EXPECT_EQ(plt0->cfa_rule, CfaRule::kRspOffset);
    EXPECT_EQ(plt0->cfa_offset, 16);
    ASSERT_GE(plt->size, 32u);
    const UnwindRow* entry = table->Find(plt->addr + 16);
    ASSERT_NE(entry, nullptr) << path;
    EXPECT_EQ(entry->cfa_rule, CfaRule::kPlt) << path;
    EXPECT_EQ(entry->cfa_offset, 8);
    // Lazy PLT entries are jmp *GOT (6 bytes), push n (5), jmp PLT0: past byte 11 the push
    // has happened.
    EXPECT_EQ(entry->rbp_offset, 11) << "threshold";
    EXPECT_EQ(entry->ra_rule, RegRule::kAtCfa);
    EXPECT_EQ(entry->ra_offset, -8);
    EXPECT_EQ(table->Find(plt->addr + plt->size - 1)->cfa_rule, CfaRule::kPlt);
  }
}

// glibc's __restore_rt: CFA = *(RSP + offsetof(ucontext, rsp)), RA and RBP saved in the
// ucontext's gregs (x86_64 ABI: uc_mcontext at 40, REG_RIP 16, REG_RSP 15, REG_RBP 10).
TEST(UnwindTable, LibcSignalTrampoline) {
  if (access(kLibc, R_OK) != 0) GTEST_SKIP() << kLibc << " is not present";
  std::shared_ptr<ElfFile> elf = Open(kLibc);
  ASSERT_TRUE(elf);
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  std::vector<const UnwindRow*> signal_rows;
  for (const UnwindRow& row : table->rows()) {
    if (row.flags & kUnwindRowSignalFrame) signal_rows.push_back(&row);
  }
  ASSERT_EQ(signal_rows.size(), 1u);
  const UnwindRow& row = *signal_rows[0];
  EXPECT_EQ(row.cfa_rule, CfaRule::kDerefRspOffset);
  EXPECT_EQ(row.cfa_offset, 40 + 15 * 8);
  EXPECT_EQ(row.ra_rule, RegRule::kAtRsp);
  EXPECT_EQ(row.ra_offset, 40 + 16 * 8);
  EXPECT_EQ(row.rbp_rule, RegRule::kAtRsp);
  EXPECT_EQ(row.rbp_offset, 40 + 10 * 8);
  // The code there is `mov $15, %rax; syscall` (rt_sigreturn), after the FDE's leading nop.
  std::span<const uint8_t> code = CodeAt(*elf, table->base_pc() + row.pc, 16);
  const uint8_t sigreturn[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  bool found = false;
  for (size_t i = 0; i + sizeof sigreturn <= code.size() && i < 2; ++i) {
    found |= std::memcmp(&code[i], sigreturn, sizeof sigreturn) == 0;
  }
  EXPECT_TRUE(found) << "no rt_sigreturn at the signal frame's row";
}

// Every row boundary of every FDE: Find() gives the compiled form of the interpreted row.
TEST(UnwindTable, LibcTableAgreesWithInterpretedRows) {
  if (access(kLibc, R_OK) != 0) GTEST_SKIP() << kLibc << " is not present";
  std::shared_ptr<ElfFile> elf = Open(kLibc);
  ASSERT_TRUE(elf);
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  EXPECT_EQ(table->stats().fdes_skipped, 0u) << table->stats().first_problem;
  EXPECT_TRUE(table->stats().eh_frame_hdr_problem.empty()) << table->stats().eh_frame_hdr_problem;
  EXPECT_EQ(table->stats().eh_frame_hdr_fdes, table->stats().fdes);
  unwind::CfiSources sources = unwind::FindCfiSources(*elf, nullptr);
  ASSERT_FALSE(sources.sections.empty());
  unwind::CfiEntries entries = unwind::ReadCfiSection(sources.sections[0]);
  unwind::CfaInterpreter interpreter;
  size_t checked = 0, errors = 0;
  for (const unwind::Fde& fde : entries.fdes) {
    if (fde.pc_begin == fde.pc_end) continue;
    const unwind::Cie& cie = entries.cies[fde.cie_index];
    std::vector<std::pair<uint64_t, UnwindRow>> rows;
    ASSERT_TRUE(interpreter
                    .Run(cie, fde,
                         [&](uint64_t pc, const unwind::CfaState& state) {
                           if (pc >= fde.pc_end) return;
                           if (!rows.empty() && rows.back().first == pc) rows.pop_back();
                           rows.push_back({pc, unwind::CompileRow(state, cie, 0).row});
                         })
                    .ok());
    for (size_t i = 0; i < rows.size(); ++i) {
      uint64_t end = i + 1 < rows.size() ? rows[i + 1].first : fde.pc_end;
      for (uint64_t pc : {rows[i].first, end - 1}) {
        const UnwindRow* found = table->Find(pc);
        UnwindRow want = rows[i].second;
        if (found == nullptr) {
          ++errors;
          continue;
        }
        want.pc = found->pc;
        if (!(want == *found) && errors++ < 10) {
          ADD_FAILURE() << "pc " << std::hex << pc << ": table row differs";
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(errors, 0u);
  EXPECT_GT(checked, 10000u);
  // Compact: fewer rows than row boundaries, and sorted.
  for (size_t i = 1; i < table->rows().size(); ++i) {
    ASSERT_LT(table->rows()[i - 1].pc, table->rows()[i].pc);
    ASSERT_FALSE([&] {
      UnwindRow a = table->rows()[i - 1];
      a.pc = table->rows()[i].pc;
      return a == table->rows()[i];
    }()) << "equal neighbours not merged at "
         << i;
  }
}

TEST(UnwindTable, GapsBetweenFdesAreUndefined) {
  CfiBytes b(unwind::CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x10, {unwind::DW_CFA_advance_loc | 4, unwind::DW_CFA_def_cfa_offset, 16});
  b.AddFde(cie, 0x1040, 0x10, {});
  std::shared_ptr<ElfFile> elf = ElfWithCfi(b.bytes(), {});
  ASSERT_TRUE(elf);
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  EXPECT_EQ(table->base_pc(), 0x1000u);
  EXPECT_EQ(table->end_pc(), 0x1050u);
  EXPECT_EQ(table->Find(0xfff), nullptr);
  EXPECT_EQ(table->Find(0x1003)->cfa_offset, 8);
  EXPECT_EQ(table->Find(0x1004)->cfa_offset, 16);
  EXPECT_EQ(table->Find(0x100f)->cfa_offset, 16);
  EXPECT_EQ(table->Find(0x1010)->cfa_rule, CfaRule::kUndefined);
  EXPECT_EQ(table->Find(0x103f)->cfa_rule, CfaRule::kUndefined);
  EXPECT_EQ(table->Find(0x1040)->cfa_rule, CfaRule::kRspOffset);
  EXPECT_EQ(table->Find(0x1040)->cfa_offset, 8);
  EXPECT_EQ(table->Find(0x1050), nullptr);
  EXPECT_EQ(table->rows().size(), 4u);
}

TEST(UnwindTable, EqualNeighboursMerge) {
  CfiBytes b(unwind::CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  // Three rows, the middle one equal to the first: advance without change, then a change.
  b.AddFde(cie, 0x1000, 0x10,
           {unwind::DW_CFA_advance_loc | 2, unwind::DW_CFA_advance_loc | 2,
            unwind::DW_CFA_def_cfa_offset, 16});
  b.AddFde(cie, 0x1010, 0x10, {unwind::DW_CFA_def_cfa_offset, 16});  // same as the last row
  std::shared_ptr<ElfFile> elf = ElfWithCfi(b.bytes(), {});
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  ASSERT_EQ(table->rows().size(), 2u);
  EXPECT_EQ(table->rows()[0].pc, 0u);
  EXPECT_EQ(table->rows()[1].pc, 4u);
  EXPECT_EQ(table->Find(0x101f)->cfa_offset, 16);
}

TEST(UnwindTable, EhFrameWinsOverDebugFrame) {
  CfiBytes eh(unwind::CfiSectionKind::kEhFrame);
  size_t cie = eh.AddCie(X86CieInstructions());
  eh.AddFde(cie, 0x1000, 0x10, {});
  CfiBytes debug(unwind::CfiSectionKind::kDebugFrame);
  size_t dcie = debug.AddCie(X86CieInstructions());
  debug.AddFde(dcie, 0x1000, 0x10, {unwind::DW_CFA_def_cfa_offset, 32});  // disagrees: loses
  debug.AddFde(dcie, 0x1008, 0x10, {});                                   // overlaps: left out
  debug.AddFde(dcie, 0x1020, 0x10, {unwind::DW_CFA_def_cfa_offset, 24});  // only here: kept
  std::shared_ptr<ElfFile> elf = ElfWithCfi(eh.bytes(), debug.bytes());
  ASSERT_TRUE(elf);
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  EXPECT_EQ(table->Find(0x1000)->cfa_offset, 8);
  EXPECT_EQ(table->Find(0x100f)->cfa_offset, 8);
  EXPECT_EQ(table->Find(0x1010)->cfa_rule, CfaRule::kUndefined);
  EXPECT_EQ(table->Find(0x1020)->cfa_offset, 24);
  EXPECT_EQ(table->stats().fdes_overlapping, 2u);
  EXPECT_EQ(table->stats().cies, 2u);
  EXPECT_EQ(table->stats().fdes, 4u);
}

// .debug_frame keeps FDEs of code the linker discarded, at address 0: not code of this file.
TEST(UnwindTable, FdesOutsideExecutableSegmentsAreLeftOut) {
  CfiBytes debug(unwind::CfiSectionKind::kDebugFrame);
  size_t cie = debug.AddCie(X86CieInstructions());
  debug.AddFde(cie, 0x0, 0x1080, {unwind::DW_CFA_def_cfa_offset, 64});  // would shadow the next
  debug.AddFde(cie, 0x1000, 0x20, {});
  debug.AddFde(cie, 0x10f0, 0x20, {});  // runs past the segment's end
  std::shared_ptr<ElfFile> elf = ElfWithCfi({}, debug.bytes(), /*code_segment=*/true);
  ASSERT_TRUE(elf);
  ASSERT_FALSE(elf->segments().empty());
  std::shared_ptr<const UnwindTable> table = Build(*elf);
  ASSERT_TRUE(table);
  EXPECT_EQ(table->stats().fdes_outside_code, 2u);
  EXPECT_EQ(table->base_pc(), 0x1000u);
  ASSERT_NE(table->Find(0x1000), nullptr);
  EXPECT_EQ(table->Find(0x1000)->cfa_offset, 8);
  EXPECT_EQ(table->Find(0x10f0), nullptr);
}

TEST(UnwindTable, DebugFrameOfTheFileAndOfASeparateDebugFile) {
  std::shared_ptr<ElfFile> with = Open(Fixture("unwind_gcc_debug_frame"));
  ASSERT_TRUE(with);
  ASSERT_NE(with->FindSection(".debug_frame"), nullptr);
  std::shared_ptr<const UnwindTable> table = Build(*with);
  ASSERT_TRUE(table);
  ExpectEntryRow(table->Find(Symbol(*with, "middle").address), "debug_frame middle");

  std::shared_ptr<ElfFile> stripped = Open(Fixture("unwind_gcc_split"));
  std::shared_ptr<ElfFile> debug = Open(Fixture("unwind_gcc_split.debug"));
  ASSERT_TRUE(stripped && debug);
  EXPECT_EQ(stripped->FindSection(".debug_frame"), nullptr);
  const ElfSymbol& middle = Symbol(*stripped, "middle");
  std::shared_ptr<const UnwindTable> alone = Build(*stripped);
  ASSERT_TRUE(alone);
  const UnwindRow* none = alone->Find(middle.address);
  EXPECT_TRUE(none == nullptr || none->cfa_rule == CfaRule::kUndefined)
      << "without its debug file the stripped binary has no CFI for middle()";
  std::shared_ptr<const UnwindTable> joined = Build(*stripped, debug.get());
  ASSERT_TRUE(joined);
  ExpectEntryRow(joined->Find(middle.address), "split middle");
  EXPECT_GT(joined->rows().size(), alone->rows().size());
}

TEST(UnwindTable, CxxFixturesHaveEveryFunctionCovered) {
  for (const char* name : {"unwind_gxx_o2", "unwind_clangxx_o2"}) {
    std::shared_ptr<ElfFile> elf = Open(Fixture(name));
    ASSERT_TRUE(elf);
    std::shared_ptr<const UnwindTable> table = Build(*elf);
    ASSERT_TRUE(table);
    EXPECT_EQ(table->stats().fdes_skipped, 0u);
    EXPECT_TRUE(table->stats().eh_frame_hdr_problem.empty());
    size_t covered = 0;
    for (const ElfSymbol& s : elf->symbols().symbols()) {
      if (s.type != STT_FUNC || s.size == 0 || s.address < table->base_pc()) continue;
      const UnwindRow* row = table->Find(s.address);
      if (row != nullptr && row->cfa_rule == CfaRule::kRspOffset) ++covered;
    }
    EXPECT_GT(covered, 5u) << name;
  }
}

TEST(UnwindTableCache, SharesByBuildIdAndEvicts) {
  std::shared_ptr<ElfFile> a = Open(Fixture("unwind_gcc_o2"));
  std::shared_ptr<ElfFile> a_again = Open(Fixture("unwind_gcc_o2"));
  std::shared_ptr<ElfFile> b = Open(Fixture("unwind_clang_o2"));
  ASSERT_TRUE(a && a_again && b);
  UnwindTableCache cache;
  std::shared_ptr<const UnwindTable> t1 = cache.Get(*a);
  std::shared_ptr<const UnwindTable> t2 = cache.Get(*a_again);
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1.get(), t2.get());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_GE(cache.bytes(), t1->memory_bytes());
  cache.Get(*b);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 0u);

  UnwindTableCache small({.max_bytes = 1});
  small.Get(*a);
  small.Get(*b);
  EXPECT_EQ(small.size(), 1u);
  EXPECT_EQ(small.evictions(), 1u);
  EXPECT_NE(small.Get(*b), nullptr);
  EXPECT_EQ(small.evictions(), 1u) << "the most recent table stays";
}

// A table evicted past the byte bound while someone still holds it (the processes mapping a
// big binary) is handed out again, not built once more: one copy per build ID.
TEST(UnwindTableCache, AHeldTableIsSharedPastTheBound) {
  std::shared_ptr<ElfFile> a = Open(Fixture("unwind_gcc_o2"));
  std::shared_ptr<ElfFile> b = Open(Fixture("unwind_clang_o2"));
  ASSERT_TRUE(a && b);
  UnwindTableCache small({.max_bytes = 1});
  std::shared_ptr<const UnwindTable> held = small.Get(*a);
  small.Get(*b);  // evicts a's
  EXPECT_EQ(small.evictions(), 1u);
  EXPECT_EQ(small.Get(*a).get(), held.get()) << "a second copy of a held table";
  std::weak_ptr<const UnwindTable> gone = small.Get(*b);  // evicts a's again
  held.reset();
  small.Get(*a);  // no one held it: built again
  EXPECT_TRUE(gone.expired()) << "b's table, evicted and not held, was kept";
}

TEST(UnwindTableCache, BadCfiGivesAnEmptyTableRemembered) {
  CfiBytes b(unwind::CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x10, {0x3c});
  std::shared_ptr<ElfFile> elf = ElfWithCfi(b.bytes(), {});
  ASSERT_TRUE(elf);
  UnwindTableCache cache;
  std::shared_ptr<const UnwindTable> t = cache.Get(*elf);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->empty());
  EXPECT_FALSE(t->stats().first_problem.empty());
  EXPECT_EQ(cache.Get(*elf).get(), t.get());
}

TEST(UnwindTableCache, ConcurrentGetsAgree) {
  std::shared_ptr<ElfFile> elf = Open(Fixture("unwind_gxx_o2"));
  ASSERT_TRUE(elf);
  UnwindTableCache cache;
  std::vector<std::shared_ptr<const UnwindTable>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = cache.Get(*elf); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& t : got) EXPECT_EQ(t.get(), cache.Get(*elf).get());
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace stacksym::testing
