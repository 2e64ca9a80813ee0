// Split-DWARF packages (.dwp) in DebugInfoSource: the package is searched for, opened and
// indexed once per source however many split units need it (also when it is missing or
// broken), and it is found next to a separate debug file as well as next to the binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "real_test_util.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::RealCopy;
using testing::RealFixture;
using testing::RealRun;
using testing::RealTempDir;
using testing::RealToolExists;
using testing::RealWriteFile;

std::shared_ptr<ElfFile> OpenElf(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << path << ": " << (elf ? "" : elf.error().ToString());
  return elf ? *elf : nullptr;
}

// DebugInfoSource for `path`, searching no system debug directories.
std::unique_ptr<dwarf::DebugInfoSource> OpenSource(const std::string& path) {
  std::shared_ptr<ElfFile> elf = OpenElf(path);
  if (!elf) return nullptr;
  dwarf::DwarfOptions options;
  options.search.debug_dirs = {};
  Result<std::unique_ptr<dwarf::DebugInfoSource>> source =
      dwarf::DebugInfoSource::Open(elf, options);
  EXPECT_TRUE(source) << path << ": " << (source ? "" : source.error().ToString());
  return source ? std::move(*source) : nullptr;
}

// Start, middle and last byte of every sized function symbol.
std::vector<uint64_t> FunctionAddresses(const ElfFile& elf) {
  std::vector<uint64_t> out;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if ((s.type != 2 /*STT_FUNC*/ && s.type != 10 /*STT_GNU_IFUNC*/) || s.sizeless || s.size == 0) {
      continue;
    }
    out.push_back(s.address);
    out.push_back(s.address + s.size / 2);
    out.push_back(s.address + s.size - 1);
  }
  return out;
}

// One line per address: its frames as "function file:line:column", '|'-separated.
std::vector<std::string> Describe(dwarf::DebugInfoSource& source,
                                  const std::vector<uint64_t>& addrs) {
  std::vector<std::string> out;
  std::vector<SourceFrame> frames;
  for (uint64_t a : addrs) {
    std::string line;
    if (source.Lookup(a, &frames)) {
      for (const SourceFrame& f : frames) {
        line += f.function + " " + f.file + ":" + std::to_string(f.line) + ":" +
                std::to_string(f.column) + "|";
      }
    }
    out.push_back(line);
  }
  return out;
}

// How many lookups named the function (a split unit names functions only from its .dwo/.dwp).
size_t NamedCount(dwarf::DebugInfoSource& source, const std::vector<uint64_t>& addrs) {
  size_t named = 0;
  std::vector<SourceFrame> frames;
  for (uint64_t a : addrs) {
    if (source.Lookup(a, &frames) && !frames.empty() && !frames.back().function.empty()) ++named;
  }
  return named;
}

size_t ErrorsMentioning(dwarf::DebugInfoSource& source, const std::string& text) {
  size_t n = 0;
  for (const Error& e : source.units().unit_errors())
    n += e.ToString().find(text) != std::string::npos;
  return n;
}

class DwpOnceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DwpOnceTest, EveryFunctionOfEverySplitUnitUsesOnePackage) {
  const std::string binary = RealFixture(GetParam());
  std::unique_ptr<dwarf::DebugInfoSource> source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  std::shared_ptr<ElfFile> elf = OpenElf(binary);
  ASSERT_NE(elf, nullptr);
  std::vector<uint64_t> addrs = FunctionAddresses(*elf);
  ASSERT_FALSE(addrs.empty());
  EXPECT_EQ(source->files().dwp_search_count(), 0u) << "the package is opened lazily";

  size_t named = NamedCount(*source, addrs);
  // Both split units (real_main.c, real_lib.c) were needed, and their functions were named
  // from the package: so both went through it.
  EXPECT_GE(source->units().parsed_unit_count(), 2u);
  EXPECT_GE(named, 6u);
  EXPECT_EQ(source->files().dwp_search_count(), 1u);
  EXPECT_EQ(source->files().dwp_open_count(), 1u);
  EXPECT_EQ(source->files().dwp_path(), binary + ".dwp");
  for (const Error& e : source->units().unit_errors()) ADD_FAILURE() << e.ToString();

  // A second pass (cached units) and a second source each keep to their single package.
  EXPECT_EQ(NamedCount(*source, addrs), named);
  EXPECT_EQ(source->files().dwp_open_count(), 1u);
  std::unique_ptr<dwarf::DebugInfoSource> other = OpenSource(binary);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(Describe(*other, addrs), Describe(*source, addrs));
  EXPECT_EQ(other->files().dwp_open_count(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Packages, DwpOnceTest,
                         ::testing::Values("real_dwp_gnu4", "real_dwp_llvm4", "real_dwp_clang5"));

TEST(DwpOnceMissTest, MissingPackageIsSearchedForOnce) {
  // .dwo files, no package: every split unit falls back to its .dwo, and the package search
  // that found nothing is not repeated for the second unit.
  const std::string binary = RealFixture("real_split4.split");
  std::unique_ptr<dwarf::DebugInfoSource> source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  std::shared_ptr<ElfFile> elf = OpenElf(binary);
  ASSERT_NE(elf, nullptr);
  std::vector<uint64_t> addrs = FunctionAddresses(*elf);
  EXPECT_GE(NamedCount(*source, addrs), 6u);
  EXPECT_GE(source->units().parsed_unit_count(), 2u);
  EXPECT_EQ(source->files().dwp_search_count(), 1u);
  EXPECT_EQ(source->files().dwp_open_count(), 0u);
  EXPECT_EQ(source->files().dwp_path(), "");
}

TEST(DwpOnceMissTest, BrokenPackageIsTriedOnceAndReportedOnce) {
  RealTempDir dir;
  const std::string binary = dir.Make("prog");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwp_gnu4"), binary));
  std::shared_ptr<ElfFile> elf = OpenElf(binary);
  ASSERT_NE(elf, nullptr);
  std::vector<uint64_t> addrs = FunctionAddresses(*elf);

  // Not ELF at all: the finder reports it; nothing is opened.
  ASSERT_TRUE(RealWriteFile(binary + ".dwp", "this is not a package"));
  std::unique_ptr<dwarf::DebugInfoSource> source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(NamedCount(*source, addrs), 0u);  // the .dwo files were deleted too
  EXPECT_GE(source->units().parsed_unit_count(), 2u);
  EXPECT_EQ(source->files().dwp_search_count(), 1u);
  EXPECT_EQ(source->files().dwp_open_count(), 0u);
  EXPECT_EQ(ErrorsMentioning(*source, "prog.dwp"), 1u);

  // ELF without .debug_cu_index: opened once, its failure kept for the other units.
  ASSERT_TRUE(RealCopy(RealFixture("real_dbg"), binary + ".dwp"));
  source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(NamedCount(*source, addrs), 0u);
  EXPECT_GE(source->units().parsed_unit_count(), 2u);
  EXPECT_EQ(source->files().dwp_search_count(), 1u);
  EXPECT_EQ(source->files().dwp_open_count(), 1u);
  EXPECT_EQ(source->files().dwp_path(), "");
  EXPECT_EQ(ErrorsMentioning(*source, "prog.dwp"), 1u);
}

TEST(DwpNextToDebugFileTest, PackageBesideSeparateDebugFileIsUsed) {
  if (!RealToolExists("objcopy")) GTEST_SKIP() << "objcopy (binutils) is not installed";
  // bin/prog: stripped, .gnu_debuglink to bin/.debug/prog.debug; the package is only at
  // bin/.debug/prog.debug.dwp (not at bin/prog.dwp).
  const std::string fixture = RealFixture("real_dwp_gnu4");
  RealTempDir dir;
  const std::string bin_dir = dir.path() + "/bin";
  const std::string debug_dir = bin_dir + "/.debug";
  std::error_code ec;
  ASSERT_TRUE(std::filesystem::create_directories(debug_dir, ec)) << ec.message();
  int exit_code = -1;
  std::string out =
      RealRun("cd '" + bin_dir + "' && objcopy --only-keep-debug '" + fixture +
                  "' prog.debug && objcopy --strip-debug" + " --add-gnu-debuglink=prog.debug '" +
                  fixture + "' prog && mv prog.debug .debug/prog.debug 2>&1",
              "", &exit_code);
  ASSERT_EQ(exit_code, 0) << out;
  const std::string binary = bin_dir + "/prog";
  const std::string debug_file = debug_dir + "/prog.debug";

  std::shared_ptr<ElfFile> elf = OpenElf(binary);
  ASSERT_NE(elf, nullptr);
  ASSERT_EQ(elf->FindSection(".debug_info"), nullptr) << "prog should be stripped";
  std::vector<uint64_t> addrs = FunctionAddresses(*elf);
  ASSERT_FALSE(addrs.empty());

  // Without the package the split units have lines but no function names.
  std::unique_ptr<dwarf::DebugInfoSource> source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->path(), debug_file);
  EXPECT_EQ(NamedCount(*source, addrs), 0u);
  EXPECT_EQ(source->files().dwp_path(), "");

  // With it: the same answers as the original binary with its package next to it.
  ASSERT_TRUE(RealCopy(fixture + ".dwp", debug_file + ".dwp"));
  source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  std::unique_ptr<dwarf::DebugInfoSource> reference = OpenSource(fixture);
  ASSERT_NE(reference, nullptr);
  EXPECT_GE(NamedCount(*source, addrs), 6u);
  EXPECT_EQ(source->files().dwp_path(), debug_file + ".dwp");
  EXPECT_EQ(source->files().dwp_open_count(), 1u);
  EXPECT_EQ(Describe(*source, addrs), Describe(*reference, addrs));

  // A package next to the binary wins over the debug file's.
  ASSERT_TRUE(RealCopy(fixture + ".dwp", binary + ".dwp"));
  source = OpenSource(binary);
  ASSERT_NE(source, nullptr);
  EXPECT_GE(NamedCount(*source, addrs), 6u);
  EXPECT_EQ(source->files().dwp_path(), binary + ".dwp");
  EXPECT_EQ(source->files().dwp_search_count(), 1u);
  EXPECT_EQ(source->files().dwp_open_count(), 1u);
}

}  // namespace
}  // namespace stacksym
