// dwarf::DebugFiles on its own: a skeleton unit's split unit is opened from its .dwo file or
// from the .dwp package with the skeleton's addresses, and it becomes one of the files read
// (and its skeleton known) only once the caller keeps it; an unused one leaves no trace.
#include "dwarf/debug_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dwarf/unit_cache.h"
#include "real_test_util.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::RealFixture;

std::unique_ptr<dwarf::DebugFiles> OpenFiles(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << path;
  if (!elf) return nullptr;
  dwarf::DebugFileSearch search;
  search.debug_dirs = {};
  auto files = dwarf::DebugFiles::Open(*elf, search, /*stream_info_from=*/UINT64_MAX);
  EXPECT_TRUE(files) << path << ": " << (files ? "" : files.error().ToString());
  return files ? std::move(*files) : nullptr;
}

// The skeleton units of the DWARF file, their unit DIEs read.
std::vector<const dwarf::UnitInfo*> Skeletons(dwarf::DwarfFile& main) {
  (void)main.ScanUnits();
  std::vector<const dwarf::UnitInfo*> out;
  for (dwarf::UnitInfo& unit : main.units()) {
    if (main.ReadUnitDie(unit) && dwarf::UnitCache::IsSplit(unit)) out.push_back(&unit);
  }
  return out;
}

std::vector<std::string> PathsRead(const dwarf::DebugFiles& files) {
  std::vector<std::string> out;
  for (const auto& f : files.files_read()) out.push_back(f->path());
  return out;
}

struct SplitCase {
  const char* name;
  const char* fixture;
  bool package;  // split units in <binary>.dwp (else in .dwo files)
};

class DebugFilesSplitTest : public ::testing::TestWithParam<SplitCase> {};

TEST_P(DebugFilesSplitTest, SplitUnitsAreKeptOnlyOnceInUse) {
  const std::string binary = RealFixture(GetParam().fixture);
  std::unique_ptr<dwarf::DebugFiles> files = OpenFiles(binary);
  ASSERT_NE(files, nullptr);
  ASSERT_NE(files->main(), nullptr);
  EXPECT_EQ(files->path(), binary);
  std::vector<const dwarf::UnitInfo*> skeletons = Skeletons(*files->main());
  ASSERT_EQ(skeletons.size(), 2u) << "real_main.c and real_lib.c";
  std::vector<std::string> kept_from;
  for (const dwarf::UnitInfo* skeleton : skeletons) {
    std::vector<Error> notes;
    Result<dwarf::DebugFiles::SplitObject> split = files->OpenSplitUnit(*skeleton, &notes);
    ASSERT_TRUE(split) << split.error().ToString();
    for (const Error& e : notes) ADD_FAILURE() << e.ToString();
    ASSERT_NE(split->unit, nullptr);
    ASSERT_NE(split->dwarf, nullptr);
    EXPECT_TRUE(split->unit->has_dwo_id);
    EXPECT_EQ(split->unit->dwo_id, skeleton->dwo_id);
    // Addresses of a split unit are the skeleton's.
    EXPECT_EQ(split->unit->addr_base, skeleton->addr_base);
    EXPECT_EQ(split->unit->low_pc, skeleton->low_pc);
    if (GetParam().package) {
      EXPECT_EQ(split->elf->path(), binary + ".dwp");
    } else {
      EXPECT_TRUE(split->elf->path().ends_with(".dwo")) << split->elf->path();
    }

    // Not yet kept: not among the files read, its skeleton unknown.
    EXPECT_EQ(files->SkeletonOf(split->dwarf.get()), nullptr);
    const std::string from = split->elf->path();
    if (!GetParam().package) {
      std::vector<std::string> read = PathsRead(*files);
      EXPECT_EQ(std::count(read.begin(), read.end(), from), 0);
    }
    dwarf::DwarfFile* kept = files->Keep(std::move(*split), *skeleton);
    EXPECT_EQ(files->SkeletonOf(kept), skeleton);
    kept_from.push_back(from);
  }
  std::vector<std::string> read = PathsRead(*files);
  if (GetParam().package) {
    // The package is read once, however many units it gave.
    EXPECT_EQ(read, std::vector<std::string>{binary + ".dwp"});
    EXPECT_EQ(files->dwp_search_count(), 1u);
    EXPECT_EQ(files->dwp_open_count(), 1u);
  } else {
    EXPECT_EQ(read, kept_from);
    EXPECT_NE(kept_from[0], kept_from[1]);
    EXPECT_EQ(files->dwp_open_count(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, DebugFilesSplitTest,
                         ::testing::Values(SplitCase{"dwo4", "real_split4.split", false},
                                           SplitCase{"dwo5", "real_split5.split", false},
                                           SplitCase{"dwp_gnu4", "real_dwp_gnu4", true},
                                           SplitCase{"dwp_clang5", "real_dwp_clang5", true}),
                         [](const ::testing::TestParamInfo<SplitCase>& info) {
                           return std::string(info.param.name);
                         });

// Raw sections (tests, fuzzing) have no file to find a split unit from.
TEST(DebugFilesTest, SectionsAloneOpenNoSplitUnit) {
  dwarf::DwarfSections none;
  std::unique_ptr<dwarf::DebugFiles> files = dwarf::DebugFiles::FromSections(none);
  EXPECT_EQ(files->path(), "<memory>");
  dwarf::UnitInfo skeleton;
  std::vector<Error> notes;
  Result<dwarf::DebugFiles::SplitObject> split = files->OpenSplitUnit(skeleton, &notes);
  ASSERT_FALSE(split);
  EXPECT_NE(split.error().message.find("without a file to search from"), std::string::npos);
  EXPECT_TRUE(files->files_read().empty());
}

// A separate debug file is what DWARF is read from, and one of the files read.
TEST(DebugFilesTest, SeparateDebugFileIsReadAndListed) {
  const std::string binary = RealFixture("real_dbg.stripped");
  std::unique_ptr<dwarf::DebugFiles> files = OpenFiles(binary);
  ASSERT_NE(files, nullptr);
  EXPECT_EQ(files->path(), RealFixture("real_dbg.debug"));
  EXPECT_EQ(PathsRead(*files), std::vector<std::string>{RealFixture("real_dbg.debug")});
}

}  // namespace
}  // namespace stacksym
