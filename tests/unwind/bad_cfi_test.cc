// Malformed CFI, made by hand: each broken entry or program is skipped with a reason, never a
// crash, a hang or a row that the bytes do not justify.
#include <gtest/gtest.h>

#include "cfi_bytes.h"
#include "cfi_elf.h"
#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_reader.h"

namespace stacksym::testing {
namespace {

using unwind::CfiSectionKind;

std::vector<uint8_t> Bytes(std::initializer_list<int> list) {
  std::vector<uint8_t> out;
  for (int v : list) out.push_back(static_cast<uint8_t>(v));
  return out;
}

// Interprets the single FDE of `bytes`, returning the error message ("" when it ran).
std::string RunOnlyFde(const CfiBytes& bytes, size_t* rows = nullptr) {
  unwind::CfiSectionInfo info = bytes.Info();
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  EXPECT_EQ(entries.fdes.size(), 1u);
  if (entries.fdes.size() != 1) return "no FDE";
  unwind::CfaInterpreter interpreter;
  size_t n = 0;
  Result<unwind::CfaProgramSummary> r = interpreter.Run(
      entries.cies[0], entries.fdes[0], [&](uint64_t, const unwind::CfaState&) { ++n; });
  if (rows) *rows = n;
  return r ? "" : r.error().message;
}

TEST(BadCfi, WellFormedBaseline) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x20,
           Bytes({unwind::DW_CFA_advance_loc | 1, unwind::DW_CFA_def_cfa_offset, 16}));
  size_t rows = 0;
  EXPECT_EQ(RunOnlyFde(b, &rows), "");
  EXPECT_EQ(rows, 2u);
}

TEST(BadCfi, TruncatedCie) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  b.AddCie(X86CieInstructions());
  std::vector<uint8_t> bytes = b.bytes();
  bytes.resize(bytes.size() - 3);  // the length now runs past the end
  unwind::CfiSectionInfo info;
  info.data = bytes;
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  EXPECT_TRUE(entries.cies.empty());
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("past the end"), std::string::npos);

  std::shared_ptr<ElfFile> elf = ElfWithCfi(bytes, {});
  ASSERT_TRUE(elf);
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(*elf);
  ASSERT_FALSE(table.ok()) << "nothing usable must be an error";
  EXPECT_NE(table.error().message.find("past the end"), std::string::npos) << table.error().message;
}

TEST(BadCfi, CieFieldsTruncatedInsideItsLength) {
  // A CIE whose length covers only the version byte and part of the augmentation string.
  std::vector<uint8_t> bytes = Bytes({6, 0, 0, 0, 0, 0, 0, 0, 1, 'z'});
  unwind::CfiSectionInfo info;
  info.data = bytes;
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  EXPECT_TRUE(entries.cies.empty());
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("augmentation string"), std::string::npos)
      << entries.problems[0].message;
}

TEST(BadCfi, FdeWithMissingCieIsSkippedOthersKept) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x10, {});
  size_t bad = b.AddFde(cie, 0x1010, 0x10, {});
  b.AddFde(cie, 0x1020, 0x10, {});
  std::vector<uint8_t> bytes = b.bytes();
  // Point the middle FDE's CIE pointer at itself + 2: no CIE there.
  bytes[bad + 4] = 2;
  bytes[bad + 5] = bytes[bad + 6] = bytes[bad + 7] = 0;
  std::shared_ptr<ElfFile> elf = ElfWithCfi(bytes, {});
  ASSERT_TRUE(elf);
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(*elf);
  ASSERT_TRUE(table.ok()) << table.error().ToString();
  const UnwindTable& t = **table;
  EXPECT_EQ(t.stats().fdes, 2u);
  EXPECT_GE(t.stats().fdes_skipped, 1u);
  EXPECT_NE(t.stats().first_problem.find("CIE"), std::string::npos) << t.stats().first_problem;
  ASSERT_NE(t.Find(0x1000), nullptr);
  EXPECT_EQ(t.Find(0x1000)->cfa_rule, CfaRule::kRspOffset);
  ASSERT_NE(t.Find(0x1018), nullptr);
  EXPECT_EQ(t.Find(0x1018)->cfa_rule, CfaRule::kUndefined) << "no row may be invented";
  ASSERT_NE(t.Find(0x1020), nullptr);
  EXPECT_EQ(t.Find(0x1020)->cfa_rule, CfaRule::kRspOffset);
}

TEST(BadCfi, RememberStateMillionDeep) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  std::vector<uint8_t> program(1000000, unwind::DW_CFA_remember_state);
  b.AddFde(cie, 0x1000, 0x10, program);
  EXPECT_NE(RunOnlyFde(b).find("remember_state nested deeper"), std::string::npos);

  std::shared_ptr<ElfFile> elf = ElfWithCfi(b.bytes(), {});
  ASSERT_TRUE(elf);
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(*elf);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.error().message.find("remember_state"), std::string::npos);
}

TEST(BadCfi, RestoreStateWithNothingRemembered) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x10, Bytes({unwind::DW_CFA_restore_state}));
  EXPECT_NE(RunOnlyFde(b).find("no remembered state"), std::string::npos);
}

TEST(BadCfi, AdvancePastTheEndAndOverflow) {
  {
    CfiBytes b(CfiSectionKind::kEhFrame);
    size_t cie = b.AddCie(X86CieInstructions());
    b.AddFde(cie, 0x1000, 0x10, Bytes({unwind::DW_CFA_advance_loc4, 0xff, 0xff, 0xff, 0x7f}));
    EXPECT_NE(RunOnlyFde(b).find("past the FDE's end"), std::string::npos);
  }
  {
    CfiBytes b(CfiSectionKind::kEhFrame);
    size_t cie = b.AddCie(X86CieInstructions());
    b.AddFde(cie, 0xfffffffffffff000, 0xfff,
             Bytes({unwind::DW_CFA_advance_loc4, 0xff, 0xff, 0xff, 0xff}));
    EXPECT_NE(RunOnlyFde(b).find("overflows"), std::string::npos);
  }
  {
    // set_loc backwards.
    CfiBytes b(CfiSectionKind::kEhFrame);
    size_t cie = b.AddCie(X86CieInstructions());
    b.AddFde(cie, 0x1000, 0x10, Bytes({unwind::DW_CFA_set_loc, 0, 0x0f, 0, 0, 0, 0, 0, 0}));
    EXPECT_NE(RunOnlyFde(b).find("backwards"), std::string::npos);
  }
}

TEST(BadCfi, UnknownOpcodeDropsTheWholeFde) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  // Good rows first, then an op nobody defines: none of the rows may survive.
  b.AddFde(cie, 0x1000, 0x10,
           Bytes({unwind::DW_CFA_advance_loc | 1, unwind::DW_CFA_def_cfa_offset, 16, 0x3c}));
  b.AddFde(cie, 0x1010, 0x10, {});
  std::shared_ptr<ElfFile> elf = ElfWithCfi(b.bytes(), {});
  ASSERT_TRUE(elf);
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(*elf);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)->Find(0x1000), nullptr);
  EXPECT_EQ((*table)->Find(0x1001), nullptr);
  ASSERT_NE((*table)->Find(0x1010), nullptr);
  EXPECT_EQ((*table)->stats().fdes_skipped, 1u);
  EXPECT_NE((*table)->stats().first_problem.find("unknown call frame instruction 0x3c"),
            std::string::npos)
      << (*table)->stats().first_problem;
}

TEST(BadCfi, TruncatedOperand) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x10, Bytes({unwind::DW_CFA_def_cfa_expression, 0x20, 0x77}));
  EXPECT_NE(RunOnlyFde(b).find("truncated"), std::string::npos);
}

TEST(BadCfi, RegisterColumnOutOfRange) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  std::vector<uint8_t> program = {unwind::DW_CFA_offset_extended};
  AppendUleb(program, 1u << 30);
  AppendUleb(program, 2);
  b.AddFde(cie, 0x1000, 0x10, program);
  EXPECT_NE(RunOnlyFde(b).find("out of range"), std::string::npos);
}

TEST(BadCfi, SixtyFourBitLengthPastTheEnd) {
  std::vector<uint8_t> bytes = Bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0});
  unwind::CfiSectionInfo info;
  info.data = bytes;
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("past the end"), std::string::npos);
  // A 64-bit length that itself is cut short.
  bytes.resize(7);
  info.data = bytes;
  entries = unwind::ReadCfiSection(info);
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("truncated"), std::string::npos);
}

TEST(BadCfi, HugeAugmentationLength) {
  // CIE "zR" whose augmentation data length claims 2^32 bytes.
  std::vector<uint8_t> body = Bytes({0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16});
  AppendUleb(body, 0xffffffffu);
  body.push_back(unwind::DW_EH_PE_udata8);
  std::vector<uint8_t> bytes = {static_cast<uint8_t>(body.size()), 0, 0, 0};
  bytes.insert(bytes.end(), body.begin(), body.end());
  unwind::CfiSectionInfo info;
  info.data = bytes;
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  EXPECT_TRUE(entries.cies.empty());
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("augmentation data length"), std::string::npos)
      << entries.problems[0].message;
}

TEST(BadCfi, UnknownAugmentationWithoutZ) {
  std::vector<uint8_t> body = Bytes({0, 0, 0, 0, 1, 'q', 0, 1, 0x78, 16});
  std::vector<uint8_t> bytes = {static_cast<uint8_t>(body.size()), 0, 0, 0};
  bytes.insert(bytes.end(), body.begin(), body.end());
  unwind::CfiSectionInfo info;
  info.data = bytes;
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("not understood"), std::string::npos);
}

TEST(BadCfi, FdePcRangeWraps) {
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0xffffffffffffff00, 0x1000, {});
  unwind::CfiEntries entries = unwind::ReadCfiSection(b.Info());
  EXPECT_TRUE(entries.fdes.empty());
  ASSERT_EQ(entries.problems.size(), 1u);
  EXPECT_NE(entries.problems[0].message.find("wraps"), std::string::npos);
}

TEST(BadCfi, EveryTruncationOfAGoodSectionIsSafe) {
  // Every prefix of a well-formed section: parse, interpret, never crash, and every FDE that
  // comes out is one of the originals.
  CfiBytes b(CfiSectionKind::kEhFrame);
  size_t cie = b.AddCie(X86CieInstructions());
  b.AddFde(cie, 0x1000, 0x20,
           Bytes({unwind::DW_CFA_advance_loc | 1, unwind::DW_CFA_def_cfa_offset, 16,
                  unwind::DW_CFA_offset | 6, 2, unwind::DW_CFA_remember_state,
                  unwind::DW_CFA_advance_loc | 4, unwind::DW_CFA_def_cfa_offset, 8,
                  unwind::DW_CFA_restore_state}));
  b.AddFde(cie, 0x1020, 0x20, {});
  const std::vector<uint8_t>& whole = b.bytes();
  for (size_t n = 0; n <= whole.size(); ++n) {
    unwind::CfiSectionInfo info;
    info.data = std::span<const uint8_t>(whole.data(), n);
    unwind::CfiEntries entries = unwind::ReadCfiSection(info);
    for (const unwind::Fde& fde : entries.fdes) {
      EXPECT_TRUE(fde.pc_begin == 0x1000 || fde.pc_begin == 0x1020) << n;
      unwind::CfaInterpreter interpreter;
      (void)interpreter.Run(entries.cies[fde.cie_index], fde,
                            [](uint64_t, const unwind::CfaState&) {});
    }
    if (n < whole.size()) {
      EXPECT_LT(entries.fdes.size(), 2u) << n;
    }
  }
}

}  // namespace
}  // namespace stacksym::testing
