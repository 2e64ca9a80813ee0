// Go functions' unwind rows from .gopclntab (a stripped Go binary has no CFI at all), against
// the .debug_frame Go's linker writes into an unstripped build of the same program: at every pc
// of .text, the CFA and the return address are found alike. Built at test time with golang-go.
#include <gtest/gtest.h>

#include <string>

#include "../symbolize/go_builds.h"
#include "elf/go_pclntab.h"
#include "stacksym/elf.h"
#include "stacksym/unwind.h"

namespace stacksym {
namespace {

std::shared_ptr<const UnwindTable> TableOf(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << path;
  if (!elf) return nullptr;
  Result<std::shared_ptr<const UnwindTable>> table = UnwindTable::Build(**elf);
  EXPECT_TRUE(table) << table.error().ToString();
  return table ? *table : nullptr;
}

TEST(GoUnwindTest, PclntabRowsFindTheCfaAsTheLinkersDebugFrame) {
  testing::GoBuilds& go = testing::GoBuilds::Get();
  if (!go.have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)";
  // The unstripped build's DWARF uncompressed, so that .debug_frame is the only CFI there.
  std::string stripped = go.Build("stripped", "CGO_ENABLED=0", "-ldflags='-s -w'");
  std::string plain =
      go.Build("plain_uncompressed", "CGO_ENABLED=0", "-ldflags=-compressdwarf=false");
  ASSERT_FALSE(stripped.empty() || plain.empty()) << go.error();

  std::shared_ptr<const UnwindTable> from_pclntab = TableOf(stripped);
  std::shared_ptr<const UnwindTable> from_dwarf = TableOf(plain);
  ASSERT_TRUE(from_pclntab && from_dwarf);
  EXPECT_GT(from_pclntab->stats().go_functions, 1000u);
  EXPECT_EQ(from_pclntab->stats().fdes, 0u) << "a stripped Go binary has no CFI";
  EXPECT_GT(from_dwarf->stats().fdes, 1000u) << "the unstripped build's .debug_frame";

  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(stripped);
  ASSERT_TRUE(elf);
  const ElfSection* text = (*elf)->FindSection(".text");
  ASSERT_NE(text, nullptr);
  uint64_t compared = 0, differ = 0;
  std::string first_difference;
  for (uint64_t pc = text->addr; pc < text->addr + text->size; ++pc) {
    const UnwindRow* dwarf = from_dwarf->Find(pc);
    if (!dwarf || dwarf->cfa_rule != CfaRule::kRspOffset) continue;  // padding, no FDE
    const UnwindRow* go_row = from_pclntab->Find(pc);
    ++compared;
    bool same = go_row && go_row->cfa_rule == dwarf->cfa_rule &&
                go_row->cfa_offset == dwarf->cfa_offset &&
                (go_row->ra_rule == RegRule::kUndefined ||
                 (go_row->ra_rule == dwarf->ra_rule && go_row->ra_offset == dwarf->ra_offset));
    if (!same && differ++ == 0) {
      first_difference = "pc 0x" + std::to_string(pc) + ": dwarf CFA RSP+" +
                         std::to_string(dwarf->cfa_offset) + ", pclntab " +
                         (go_row ? "RSP+" + std::to_string(go_row->cfa_offset) : "none");
    }
  }
  EXPECT_GT(compared, text->size / 2);
  EXPECT_EQ(differ, 0u) << "of " << compared << " pcs; first: " << first_difference;
}

// A frameless leaf keeps RBP; a function with a frame saved it at CFA - 16.
TEST(GoUnwindTest, FramePointerRuleFollowsTheStackDepth) {
  testing::GoBuilds& go = testing::GoBuilds::Get();
  if (!go.have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)";
  std::string stripped = go.Build("stripped", "CGO_ENABLED=0", "-ldflags='-s -w'");
  ASSERT_FALSE(stripped.empty()) << go.error();
  std::shared_ptr<const UnwindTable> table = TableOf(stripped);
  ASSERT_TRUE(table);
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(stripped);
  ASSERT_TRUE(elf);
  auto pclntab = elf::FindGoPclntab(**elf);
  ASSERT_TRUE(pclntab && *pclntab);
  const elf::GoPclntab& t = ***pclntab;
  std::vector<elf::GoStackDelta> runs;
  size_t checked = 0;
  for (size_t i = 0; i < t.function_count(); ++i) {
    std::optional<elf::GoFunction> f = t.FunctionAt(i);
    if (!f || !f->name.starts_with("main.") || !t.StackDeltas(i, &runs)) continue;
    for (const elf::GoStackDelta& run : runs) {
      const UnwindRow* row = table->Find(run.begin);
      ASSERT_NE(row, nullptr) << f->name;
      EXPECT_EQ(row->cfa_offset, run.sp_delta + 8) << f->name;
      EXPECT_EQ(row->rbp_rule, run.sp_delta > 0 ? RegRule::kAtCfa : RegRule::kSame) << f->name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
}

}  // namespace
}  // namespace stacksym
