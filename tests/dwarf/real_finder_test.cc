// DebugFileFinder and DwpIndex on fixtures built by real_tests.cmake: separate debug files in
// every searched place (and rejected when their CRC or build ID is wrong), dwz supplementary
// files (GNU altlink and DWARF 5 .debug_sup), .dwo files and .dwp packages whose index is
// compared with llvm-dwarfdump's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "dwarf/debug_file_finder.h"
#include "dwarf/dwp_index.h"
#include "real_test_util.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::RealCopy;
using testing::RealFixture;
using testing::RealRun;
using testing::RealTempDir;
using testing::RealToolExists;
using testing::RealWriteFile;
using Outcome = dwarf::FinderCandidate::Outcome;

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << (elf ? "" : elf.error().ToString());
  return elf ? *elf : nullptr;
}

std::string Canonical(const std::string& path) {
  std::error_code ec;
  return std::filesystem::canonical(path, ec).string();
}

std::string BuildIdRelPath(std::span<const uint8_t> build_id) {
  std::string hex = ToHex(build_id);
  return ".build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
}

bool TraceHas(const dwarf::FinderTrace& trace, const std::string& path, Outcome outcome) {
  for (const dwarf::FinderCandidate& c : trace.candidates) {
    if (c.path == path && c.outcome == outcome) return true;
  }
  return false;
}

dwarf::DebugFileFinder Finder(std::vector<std::string> debug_dirs) {
  return dwarf::DebugFileFinder(std::move(debug_dirs));
}

std::string TraceText(const dwarf::FinderTrace& trace) {
  std::string out;
  for (const dwarf::FinderCandidate& c : trace.candidates) {
    out += "  " + c.path + ": " + dwarf::FinderOutcomeName(c.outcome) + " " + c.detail + "\n";
  }
  return out;
}

// The stripped fixture copied to <tmp>/bin/prog: its debuglink names "real_dbg.debug", and
// nothing sits next to it unless a test puts it there.
class RealFinderLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    binary_path_ = tmp_.Make("bin/prog");
    ASSERT_TRUE(RealCopy(RealFixture("real_dbg.stripped"), binary_path_));
    binary_ = OpenOrDie(binary_path_);
    ASSERT_NE(binary_, nullptr);
    ASSERT_TRUE(binary_->debuglink());
    ASSERT_EQ(binary_->debuglink()->name, "real_dbg.debug");
    ASSERT_FALSE(binary_->build_id().empty());
    ASSERT_EQ(binary_->FindSection(".debug_info"), nullptr);
    debug_fixture_ = RealFixture("real_dbg.debug");
  }

  RealTempDir tmp_;
  std::string binary_path_;
  std::string debug_fixture_;
  std::shared_ptr<ElfFile> binary_;
};

TEST_F(RealFinderLayoutTest, DebuglinkNextToBinary) {
  std::string debug = tmp_.Make("bin/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, debug));
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder({tmp_.path() + "/no-debug-dir"}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr) << TraceText(trace);
  EXPECT_EQ((*found)->path(), debug);
  EXPECT_NE((*found)->FindSection(".debug_info"), nullptr);
  EXPECT_TRUE(TraceHas(trace, debug, Outcome::kAccepted));
}

TEST_F(RealFinderLayoutTest, DebuglinkInDotDebugFolder) {
  std::string debug = tmp_.Make("bin/.debug/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, debug));
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr) << TraceText(trace);
  EXPECT_EQ((*found)->path(), debug);
  // It looked next to the binary first.
  EXPECT_TRUE(TraceHas(trace, tmp_.path() + "/bin/real_dbg.debug", Outcome::kMissing))
      << TraceText(trace);
}

TEST_F(RealFinderLayoutTest, DebuglinkUnderDebugDirMirroringBinaryDir) {
  std::string debug_dir = tmp_.path() + "/dbg";
  // <debug dir>/<absolute directory of the binary>/<debuglink name>
  std::string debug = tmp_.Make("dbg" + Canonical(tmp_.path() + "/bin") + "/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, debug));
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder({tmp_.path() + "/elsewhere", debug_dir}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr) << TraceText(trace);
  EXPECT_EQ(Canonical((*found)->path()), Canonical(debug));
}

// The binary opened through a path that says nothing of where it lives (as a
// /proc/PID/map_files link): the path it is known by, under its root, is searched too — next
// to it, in its .debug/, and mirrored under each debug dir.
TEST_F(RealFinderLayoutTest, DebuglinkNextToKnownPathUnderItsRoot) {
  std::string root = tmp_.path() + "/root";
  std::string known = "/opt/app/prog";
  for (std::string place : {"root/opt/app/real_dbg.debug", "root/opt/app/.debug/real_dbg.debug",
                            "root/usr/lib/debug/opt/app/real_dbg.debug"}) {
    SCOPED_TRACE(place);
    std::string debug = tmp_.Make(place);
    ASSERT_TRUE(RealCopy(debug_fixture_, debug));
    dwarf::FinderTrace trace;
    dwarf::DebugFileFinder finder({root + "/usr/lib/debug"}, known, root);
    Result<std::shared_ptr<ElfFile>> found = finder.FindSeparateDebugFile(*binary_, &trace);
    ASSERT_TRUE(found) << found.error().ToString();
    ASSERT_NE(*found, nullptr) << TraceText(trace);
    EXPECT_EQ(Canonical((*found)->path()), Canonical(debug));
    // Without the known path the file is not found.
    Result<std::shared_ptr<ElfFile>> unknown =
        Finder({root + "/usr/lib/debug"}).FindSeparateDebugFile(*binary_);
    ASSERT_TRUE(unknown);
    EXPECT_EQ(*unknown, nullptr);
    ASSERT_EQ(unlink(debug.c_str()), 0);
  }
  // With no root, the known path is taken as is.
  std::string debug = tmp_.Make("plain/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, debug));
  Result<std::shared_ptr<ElfFile>> found =
      dwarf::DebugFileFinder({}, tmp_.path() + "/plain/prog", "").FindSeparateDebugFile(*binary_);
  ASSERT_TRUE(found && *found);
  EXPECT_EQ(Canonical((*found)->path()), Canonical(debug));
}

TEST_F(RealFinderLayoutTest, BuildIdDirectoryComesFirst) {
  std::string debug_dir = tmp_.path() + "/dbg";
  std::string by_id = tmp_.Make("dbg/" + BuildIdRelPath(binary_->build_id()));
  ASSERT_TRUE(RealCopy(debug_fixture_, by_id));
  // A valid debuglink target exists too; the build-id directory must win.
  ASSERT_TRUE(RealCopy(debug_fixture_, tmp_.Make("bin/real_dbg.debug")));
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder({tmp_.path() + "/empty", debug_dir}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr) << TraceText(trace);
  EXPECT_EQ((*found)->path(), by_id);
  EXPECT_EQ((*found)->build_id_hex(), binary_->build_id_hex());
  // The first debug dir was tried and had nothing.
  EXPECT_TRUE(TraceHas(trace, tmp_.path() + "/empty/" + BuildIdRelPath(binary_->build_id()),
                       Outcome::kMissing))
      << TraceText(trace);
}

// The finder's build-ID candidates are BuildIdPaths' debug files, a debug dir written with a
// trailing slash naming the same file.
TEST_F(RealFinderLayoutTest, BuildIdCandidatesAreBuildIdPaths) {
  std::string by_id = tmp_.Make("dbg/" + BuildIdRelPath(binary_->build_id()));
  ASSERT_TRUE(RealCopy(debug_fixture_, by_id));
  const std::vector<std::string> dirs = {tmp_.path() + "/empty/", tmp_.path() + "/dbg/"};
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found = Finder(dirs).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr) << TraceText(trace);
  EXPECT_EQ((*found)->path(), by_id);
  EXPECT_EQ(BuildIdPaths(dirs[1], binary_->build_id())[1], by_id);
  EXPECT_TRUE(TraceHas(trace, BuildIdPaths(dirs[0], binary_->build_id())[1], Outcome::kMissing))
      << TraceText(trace);
  EXPECT_TRUE(TraceHas(trace, by_id, Outcome::kAccepted)) << TraceText(trace);
}

TEST_F(RealFinderLayoutTest, WrongBuildIdRejected) {
  std::string by_id = tmp_.Make("dbg/" + BuildIdRelPath(binary_->build_id()));
  ASSERT_TRUE(RealCopy(RealFixture("real_other.debug"), by_id));
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder({tmp_.path() + "/dbg"}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, nullptr) << (*found)->path();
  EXPECT_TRUE(TraceHas(trace, by_id, Outcome::kWrongBuildId)) << TraceText(trace);
}

TEST_F(RealFinderLayoutTest, WrongCrcRejectedAndSearchGoesOn) {
  // Same debug file with one byte appended: still valid ELF, but the CRC differs.
  std::ifstream in(debug_fixture_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  std::string bad = tmp_.Make("bin/real_dbg.debug");
  ASSERT_TRUE(RealWriteFile(bad, bytes + "x"));
  ASSERT_TRUE(ElfFile::Open(bad)) << "the modified file must still parse as ELF";

  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_, &trace);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, nullptr);
  EXPECT_TRUE(TraceHas(trace, bad, Outcome::kWrongCrc)) << TraceText(trace);

  // With the right file in .debug/, that one is returned.
  std::string good = tmp_.Make("bin/.debug/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, good));
  found = Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_);
  ASSERT_TRUE(found);
  ASSERT_NE(*found, nullptr);
  EXPECT_EQ((*found)->path(), good);
}

TEST_F(RealFinderLayoutTest, DebugFileOfAnotherBuildRejectedByCrc) {
  ASSERT_TRUE(RealCopy(RealFixture("real_other.debug"), tmp_.Make("bin/real_dbg.debug")));
  Result<std::shared_ptr<ElfFile>> found =
      Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, nullptr);
}

TEST_F(RealFinderLayoutTest, CorruptCandidateIsReportedOnlyWhenNothingElseMatches) {
  std::string junk = tmp_.Make("bin/real_dbg.debug");
  ASSERT_TRUE(RealWriteFile(junk, "this is not an ELF file\n"));
  Result<std::shared_ptr<ElfFile>> found =
      Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_);
  ASSERT_FALSE(found) << "a corrupt candidate and no match must be reported";
  EXPECT_NE(found.error().ToString().find(junk), std::string::npos) << found.error().ToString();

  std::string good = tmp_.Make("bin/.debug/real_dbg.debug");
  ASSERT_TRUE(RealCopy(debug_fixture_, good));
  found = Finder(std::vector<std::string>{}).FindSeparateDebugFile(*binary_);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr);
  EXPECT_EQ((*found)->path(), good);
}

TEST_F(RealFinderLayoutTest, BinaryIsNotItsOwnDebugFile) {
  // A binary whose debuglink names the binary itself.
  std::string self = tmp_.Make("bin/real_dbg.debug");
  ASSERT_TRUE(RealCopy(binary_path_, self));
  std::shared_ptr<ElfFile> elf = OpenOrDie(self);
  ASSERT_NE(elf, nullptr);
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> found =
      Finder(std::vector<std::string>{}).FindSeparateDebugFile(*elf, &trace);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, nullptr);
  EXPECT_TRUE(TraceHas(trace, self, Outcome::kSameFile)) << TraceText(trace);
}

TEST(RealFinderTest, NothingFoundIsNullNotError) {
  std::shared_ptr<ElfFile> binary = OpenOrDie(RealFixture("real_dbg"));  // not stripped
  ASSERT_NE(binary, nullptr);
  RealTempDir tmp;
  Result<std::shared_ptr<ElfFile>> found = Finder({tmp.path()}).FindSeparateDebugFile(*binary);
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, nullptr);
}

TEST(RealFinderTest, InstalledLibcDebugFileByBuildId) {
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  std::shared_ptr<ElfFile> binary = OpenOrDie(libc);
  ASSERT_NE(binary, nullptr);
  std::string expected = "/usr/lib/debug/" + BuildIdRelPath(binary->build_id());
  if (access(expected.c_str(), R_OK) != 0) GTEST_SKIP() << "libc6-dbg is not installed";
  Result<std::shared_ptr<ElfFile>> found = dwarf::DebugFileFinder().FindSeparateDebugFile(*binary);
  ASSERT_TRUE(found) << found.error().ToString();
  ASSERT_NE(*found, nullptr);
  EXPECT_EQ((*found)->path(), expected);
  EXPECT_EQ((*found)->build_id_hex(), binary->build_id_hex());
}

// --- dwz supplementary files -------------------------------------------------------------

TEST(RealSupplementaryTest, GnuAltlinkRelativeToDebugFile) {
  std::shared_ptr<ElfFile> debug = OpenOrDie(RealFixture("real_dwz_gnu_a.debug"));
  ASSERT_NE(debug, nullptr);
  ASSERT_TRUE(debug->debugaltlink()) << "dwz did not write .gnu_debugaltlink";
  EXPECT_EQ(debug->debugaltlink()->name, "real_dwz_gnu_common.debug");
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> alt =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug, &trace);
  ASSERT_TRUE(alt) << alt.error().ToString();
  ASSERT_NE(*alt, nullptr) << TraceText(trace);
  EXPECT_EQ(Canonical((*alt)->path()), Canonical(RealFixture("real_dwz_gnu_common.debug")));
  EXPECT_EQ((*alt)->build_id_hex(), ToHex(debug->debugaltlink()->build_id));
  // Both programs share the one supplementary file.
  std::shared_ptr<ElfFile> debug_b = OpenOrDie(RealFixture("real_dwz_gnu_b.debug"));
  ASSERT_NE(debug_b, nullptr);
  Result<std::shared_ptr<ElfFile>> alt_b =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug_b);
  ASSERT_TRUE(alt_b);
  ASSERT_NE(*alt_b, nullptr);
  EXPECT_EQ((*alt_b)->build_id_hex(), (*alt)->build_id_hex());
}

TEST(RealSupplementaryTest, ByBuildIdWhenNotNextToDebugFile) {
  RealTempDir tmp;
  std::string copy = tmp.Make("lonely/a.debug");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_gnu_a.debug"), copy));
  std::shared_ptr<ElfFile> debug = OpenOrDie(copy);
  ASSERT_NE(debug, nullptr);
  ASSERT_TRUE(debug->debugaltlink());
  Result<std::shared_ptr<ElfFile>> alt =
      Finder({tmp.path() + "/dbg"}).FindSupplementaryFile(*debug);
  ASSERT_TRUE(alt);
  EXPECT_EQ(*alt, nullptr) << "nothing should be found yet";

  std::string by_id = tmp.Make("dbg/" + BuildIdRelPath(debug->debugaltlink()->build_id));
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_gnu_common.debug"), by_id));
  alt = Finder({tmp.path() + "/dbg"}).FindSupplementaryFile(*debug);
  ASSERT_TRUE(alt) << alt.error().ToString();
  ASSERT_NE(*alt, nullptr);
  EXPECT_EQ((*alt)->path(), by_id);
}

TEST(RealSupplementaryTest, RelativeNameResolvedFromRealLocationOfSymlinkedDebugFile) {
  // Distributions install debug files under .build-id/ as symlinks to the real file; the dwz
  // name is relative to where the file really is.
  RealTempDir tmp;
  std::string real = tmp.Make("real/dir/a.debug");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_gnu_a.debug"), real));
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_gnu_common.debug"),
                       tmp.Make("real/dir/real_dwz_gnu_common.debug")));
  std::string link = tmp.Make("dbg/.build-id/ab/cdef.debug");
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  std::shared_ptr<ElfFile> debug = OpenOrDie(link);
  ASSERT_NE(debug, nullptr);
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> alt =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug, &trace);
  ASSERT_TRUE(alt) << alt.error().ToString();
  ASSERT_NE(*alt, nullptr) << TraceText(trace);
  EXPECT_EQ(Canonical((*alt)->path()),
            Canonical(tmp.path() + "/real/dir/real_dwz_gnu_common.debug"));
}

TEST(RealSupplementaryTest, WrongBuildIdRejected) {
  RealTempDir tmp;
  std::string copy = tmp.Make("d/a.debug");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_gnu_a.debug"), copy));
  // Another dwz run's supplementary file under the expected name.
  std::string impostor = tmp.Make("d/real_dwz_gnu_common.debug");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwz_d5_common.debug"), impostor));
  std::shared_ptr<ElfFile> debug = OpenOrDie(copy);
  ASSERT_NE(debug, nullptr);
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> alt =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug, &trace);
  ASSERT_TRUE(alt);
  EXPECT_EQ(*alt, nullptr);
  EXPECT_TRUE(TraceHas(trace, impostor, Outcome::kWrongBuildId)) << TraceText(trace);
}

TEST(RealSupplementaryTest, Dwarf5DebugSup) {
  std::shared_ptr<ElfFile> debug = OpenOrDie(RealFixture("real_dwz_d5_a.debug"));
  ASSERT_NE(debug, nullptr);
  Result<std::span<const uint8_t>> section = debug->SectionData(".debug_sup");
  ASSERT_TRUE(section);
  ASSERT_FALSE(section->empty()) << "dwz --dwarf-5 did not write .debug_sup";
  Result<dwarf::DebugSup> sup = dwarf::ParseDebugSup(*section);
  ASSERT_TRUE(sup) << sup.error().ToString();
  EXPECT_FALSE(sup->is_supplementary);
  EXPECT_EQ(sup->filename, "real_dwz_d5_common.debug");
  EXPECT_FALSE(sup->checksum.empty());

  Result<std::shared_ptr<ElfFile>> alt =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug);
  ASSERT_TRUE(alt) << alt.error().ToString();
  ASSERT_NE(*alt, nullptr);
  EXPECT_EQ(Canonical((*alt)->path()), Canonical(RealFixture("real_dwz_d5_common.debug")));
  // The supplementary file says so about itself, with the same checksum.
  Result<std::span<const uint8_t>> own = (*alt)->SectionData(".debug_sup");
  ASSERT_TRUE(own);
  Result<dwarf::DebugSup> own_sup = dwarf::ParseDebugSup(*own);
  ASSERT_TRUE(own_sup);
  EXPECT_TRUE(own_sup->is_supplementary);
  EXPECT_EQ(own_sup->checksum, sup->checksum);
  // A supplementary file has no supplementary file of its own.
  Result<std::shared_ptr<ElfFile>> none =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(**alt);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, nullptr);
}

TEST(RealSupplementaryTest, MalformedDebugSup) {
  const uint8_t truncated[] = {5, 0, 0, 'a', 'b'};  // no NUL, no checksum
  EXPECT_FALSE(dwarf::ParseDebugSup(truncated));
  const uint8_t wrong_version[] = {4, 0, 0, 0, 0};
  Result<dwarf::DebugSup> r = dwarf::ParseDebugSup(wrong_version);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  const uint8_t huge_checksum[] = {5, 0, 0, 0, 0xff, 0xff, 0x03, 1, 2};
  EXPECT_FALSE(dwarf::ParseDebugSup(huge_checksum));
}

TEST(RealSupplementaryTest, NoReferenceMeansNull) {
  std::shared_ptr<ElfFile> debug = OpenOrDie(RealFixture("real_dbg.debug"));
  ASSERT_NE(debug, nullptr);
  Result<std::shared_ptr<ElfFile>> alt =
      Finder(std::vector<std::string>{}).FindSupplementaryFile(*debug);
  ASSERT_TRUE(alt);
  EXPECT_EQ(*alt, nullptr);
}

// --- split DWARF -------------------------------------------------------------------------

struct Skeleton {
  std::string dwo_name;
  std::string comp_dir;
  uint64_t dwo_id = 0;
};

// Skeleton units as llvm-dwarfdump sees them (DWARF 4 GNU attributes or DWARF 5 skeleton units).
std::vector<Skeleton> SkeletonsOf(const std::string& path) {
  int code = 0;
  std::string out = RealRun("llvm-dwarfdump --debug-info " + path + " 2>/dev/null", "", &code);
  std::vector<Skeleton> skeletons;
  std::istringstream lines(out);
  std::string line;
  std::smatch m;
  static const std::regex kUnitId(R"re(DWO_id = (0x[0-9a-f]+))re");
  static const std::regex kAttrId(R"re(DW_AT_GNU_dwo_id\s+\((0x[0-9a-f]+)\))re");
  static const std::regex kName(R"re(DW_AT_(?:GNU_)?dwo_name\s+\("([^"]*)"\))re");
  static const std::regex kCompDir(R"re(DW_AT_comp_dir\s+\("([^"]*)"\))re");
  while (std::getline(lines, line)) {
    if (line.find("Compile Unit:") != std::string::npos) {
      skeletons.emplace_back();
      if (std::regex_search(line, m, kUnitId))
        skeletons.back().dwo_id = std::stoull(m[1], nullptr, 16);
    }
    if (skeletons.empty()) continue;
    if (std::regex_search(line, m, kAttrId))
      skeletons.back().dwo_id = std::stoull(m[1], nullptr, 16);
    if (std::regex_search(line, m, kName)) skeletons.back().dwo_name = m[1];
    if (std::regex_search(line, m, kCompDir)) skeletons.back().comp_dir = m[1];
  }
  return skeletons;
}

class RealDwoTest : public ::testing::TestWithParam<int> {};

TEST_P(RealDwoTest, FoundRelativeToCompDir) {
  if (!RealToolExists("llvm-dwarfdump")) GTEST_SKIP() << "llvm-dwarfdump is not installed";
  std::string path = RealFixture("real_split" + std::to_string(GetParam()) + ".split");
  std::shared_ptr<ElfFile> binary = OpenOrDie(path);
  ASSERT_NE(binary, nullptr);
  std::vector<Skeleton> skeletons = SkeletonsOf(path);
  ASSERT_EQ(skeletons.size(), 2u);
  for (const Skeleton& s : skeletons) {
    ASSERT_FALSE(s.dwo_name.empty());
    ASSERT_NE(s.dwo_name.front(), '/') << "fixture should use relative .dwo names";
    ASSERT_NE(s.dwo_id, 0u);
    Result<std::shared_ptr<ElfFile>> dwo =
        Finder(std::vector<std::string>{}).FindDwo(*binary, s.comp_dir, s.dwo_name);
    ASSERT_TRUE(dwo) << dwo.error().ToString();
    ASSERT_NE(*dwo, nullptr) << s.comp_dir << " / " << s.dwo_name;
    EXPECT_EQ((*dwo)->path(), s.comp_dir + "/" + s.dwo_name);
    EXPECT_NE((*dwo)->FindSection(".debug_info.dwo"), nullptr);
  }
}

TEST_P(RealDwoTest, FoundNextToBinaryWhenCompDirIsGone) {
  std::string name = "real_split" + std::to_string(GetParam());
  RealTempDir tmp;
  std::string copy = tmp.Make("moved/" + name + ".split");
  ASSERT_TRUE(RealCopy(RealFixture(name + ".split"), copy));
  ASSERT_TRUE(RealCopy(RealFixture(name + "_lib.dwo"), tmp.Make("moved/" + name + "_lib.dwo")));
  std::shared_ptr<ElfFile> binary = OpenOrDie(copy);
  ASSERT_NE(binary, nullptr);
  dwarf::FinderTrace trace;
  Result<std::shared_ptr<ElfFile>> dwo =
      Finder(std::vector<std::string>{})
          .FindDwo(*binary, tmp.path() + "/gone", name + "_lib.dwo", &trace);
  ASSERT_TRUE(dwo) << dwo.error().ToString();
  ASSERT_NE(*dwo, nullptr) << TraceText(trace);
  EXPECT_EQ((*dwo)->path(), tmp.path() + "/moved/" + name + "_lib.dwo");
  EXPECT_TRUE(TraceHas(trace, tmp.path() + "/gone/" + name + "_lib.dwo", Outcome::kMissing));
  // An absolute name whose directory is gone also falls back to the binary's directory.
  dwo = Finder(std::vector<std::string>{}).FindDwo(*binary, "", "/gone/build/" + name + "_lib.dwo");
  ASSERT_TRUE(dwo);
  ASSERT_NE(*dwo, nullptr);
  // Not there at all: null, not an error.
  dwo = Finder(std::vector<std::string>{}).FindDwo(*binary, tmp.path(), name + "_main.dwo");
  ASSERT_TRUE(dwo);
  EXPECT_EQ(*dwo, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Dwarf, RealDwoTest, ::testing::Values(4, 5));

TEST(RealDwpTest, FindsPackageNextToBinary) {
  std::shared_ptr<ElfFile> binary = OpenOrDie(RealFixture("real_dwp_gnu4"));
  ASSERT_NE(binary, nullptr);
  Result<std::shared_ptr<ElfFile>> dwp = Finder(std::vector<std::string>{}).FindDwp(*binary);
  ASSERT_TRUE(dwp);
  ASSERT_NE(*dwp, nullptr);
  EXPECT_EQ((*dwp)->path(), RealFixture("real_dwp_gnu4.dwp"));
  std::shared_ptr<ElfFile> plain = OpenOrDie(RealFixture("real_split4.split"));
  ASSERT_NE(plain, nullptr);
  dwp = Finder(std::vector<std::string>{}).FindDwp(*plain);
  ASSERT_TRUE(dwp);
  EXPECT_EQ(*dwp, nullptr);
}

// A named package (llvm-symbolizer --dwp) is the only one looked for, for every file: the
// binary's own "<binary>.dwp" is passed over, and a named one that is missing is nothing.
TEST(RealDwpTest, NamedPackageReplacesTheUsualNames) {
  RealTempDir tmp;
  std::string named = tmp.Make("elsewhere/named");
  ASSERT_TRUE(RealCopy(RealFixture("real_dwp_gnu4.dwp"), named));
  std::shared_ptr<ElfFile> plain = OpenOrDie(RealFixture("real_split4.split"));
  std::shared_ptr<ElfFile> with_own = OpenOrDie(RealFixture("real_dwp_gnu4"));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(with_own, nullptr);
  dwarf::DebugFileFinder finder(std::vector<std::string>{});
  finder.set_dwp_path(named);
  for (const ElfFile* file : {plain.get(), with_own.get()}) {
    Result<std::shared_ptr<ElfFile>> dwp = finder.FindDwp(*file);
    ASSERT_TRUE(dwp) << dwp.error().ToString();
    ASSERT_NE(*dwp, nullptr) << file->path();
    EXPECT_EQ((*dwp)->path(), named);
  }
  finder.set_dwp_path(tmp.path() + "/missing.dwp");
  Result<std::shared_ptr<ElfFile>> dwp = finder.FindDwp(*with_own);
  ASSERT_TRUE(dwp);
  EXPECT_EQ(*dwp, nullptr);
}

// llvm-dwarfdump --debug-cu-index: DWO id -> column name -> [begin, end).
using DumpedIndex = std::map<uint64_t, std::map<std::string, std::pair<uint64_t, uint64_t>>>;

DumpedIndex DumpCuIndex(const std::string& path, int* version) {
  int code = 0;
  std::string out = RealRun("llvm-dwarfdump --debug-cu-index " + path + " 2>/dev/null", "", &code);
  DumpedIndex index;
  std::istringstream lines(out);
  std::string line;
  std::vector<std::string> columns;
  std::smatch m;
  static const std::regex kVersion(R"re(version = (\d+), units = (\d+), slots = (\d+))re");
  static const std::regex kRange(R"re(\[(0x[0-9a-f]+), (0x[0-9a-f]+)\))re");
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, kVersion)) *version = std::stoi(m[1]);
    if (line.rfind("Index Signature", 0) == 0) {
      std::istringstream words(line.substr(std::string("Index Signature").size()));
      std::string w;
      while (words >> w) columns.push_back(w);
      continue;
    }
    std::istringstream words(line);
    std::string slot, signature;
    if (!(words >> slot >> signature) || signature.rfind("0x", 0) != 0) continue;
    auto& row = index[std::stoull(signature, nullptr, 16)];
    std::string rest = line;
    size_t col = 0;
    while (std::regex_search(rest, m, kRange) && col < columns.size()) {
      row[columns[col++]] = {std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16)};
      rest = m.suffix();
    }
  }
  return index;
}

class RealDwpIndexTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RealDwpIndexTest, MatchesLlvmDwarfdump) {
  if (!RealToolExists("llvm-dwarfdump")) GTEST_SKIP() << "llvm-dwarfdump is not installed";
  std::string path = RealFixture(GetParam() + ".dwp");
  std::shared_ptr<ElfFile> dwp = OpenOrDie(path);
  ASSERT_NE(dwp, nullptr);
  Result<std::span<const uint8_t>> bytes = dwp->SectionData(".debug_cu_index");
  ASSERT_TRUE(bytes);
  ASSERT_FALSE(bytes->empty());
  Result<dwarf::DwpIndex> index = dwarf::DwpIndex::Parse(*bytes);
  ASSERT_TRUE(index) << index.error().ToString();

  int version = 0;
  DumpedIndex expected = DumpCuIndex(path, &version);
  ASSERT_EQ(expected.size(), 2u) << "llvm-dwarfdump output not understood";
  EXPECT_EQ(index->version(), static_cast<uint32_t>(version));
  EXPECT_EQ(index->unit_count(), expected.size());

  auto check = [](const std::map<std::string, std::pair<uint64_t, uint64_t>>& row,
                  const std::string& column, const dwarf::DwpContribution& c) {
    auto it = row.find(column);
    if (it == row.end()) {
      EXPECT_EQ(c.size, 0u) << column << " has no column but a contribution";
      return;
    }
    EXPECT_EQ(c.offset, it->second.first) << column;
    EXPECT_EQ(c.offset + c.size, it->second.second) << column;
  };
  for (const auto& [signature, row] : expected) {
    SCOPED_TRACE(ToHex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&signature), 8)));
    std::optional<dwarf::DwpUnitSections> unit = index->Find(signature);
    ASSERT_TRUE(unit);
    check(row, "INFO", unit->info);
    check(row, "ABBREV", unit->abbrev);
    check(row, "LINE", unit->line);
    check(row, "STR_OFFSETS", unit->str_offsets);
    check(row, "RNGLISTS", unit->rnglists);
    check(row, version == 5 ? "LOCLISTS" : "LOC", unit->loclists);
    check(row, "MACRO", unit->macro);
  }
  // Every skeleton of the binary finds its unit; an unknown id does not.
  for (const Skeleton& s : SkeletonsOf(RealFixture(GetParam()))) {
    EXPECT_TRUE(index->Find(s.dwo_id)) << std::hex << s.dwo_id;
  }
  EXPECT_FALSE(index->Find(0x0123456789abcdefULL));
  EXPECT_EQ(index->Entries().size(), expected.size());
}

INSTANTIATE_TEST_SUITE_P(Packages, RealDwpIndexTest,
                         ::testing::Values("real_dwp_gnu4", "real_dwp_llvm4", "real_dwp_clang5"));

// --- DwpIndex on crafted bytes -----------------------------------------------------------

class IndexBytes {
 public:
  void U16(uint16_t v) { Put(v, 2); }
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  std::span<const uint8_t> span() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void Put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

// A version 5 index with the given slots (signature, row) and `units` rows of INFO + ABBREV.
IndexBytes V5Index(uint32_t slot_count, const std::vector<std::pair<uint64_t, uint32_t>>& slots,
                   uint32_t units) {
  IndexBytes b;
  b.U16(5);
  b.U16(0);
  b.U32(2);
  b.U32(units);
  b.U32(slot_count);
  std::vector<std::pair<uint64_t, uint32_t>> table(slot_count);
  for (size_t i = 0; i < slots.size() && i < slot_count; ++i) table[i] = slots[i];
  for (auto& s : table) b.U64(s.first);
  for (auto& s : table) b.U32(s.second);
  b.U32(1);  // DW_SECT_INFO
  b.U32(3);  // DW_SECT_ABBREV
  for (uint32_t u = 0; u < units; ++u) {
    b.U32(0x100 * u);
    b.U32(0x10 * u);
  }
  for (uint32_t u = 0; u < units; ++u) {
    b.U32(0x100);
    b.U32(0x10);
  }
  return b;
}

TEST(RealDwpIndexBytesTest, EmptySpanIsEmptyIndex) {
  Result<dwarf::DwpIndex> index = dwarf::DwpIndex::Parse({});
  ASSERT_TRUE(index);
  EXPECT_EQ(index->unit_count(), 0u);
  EXPECT_FALSE(index->Find(1));
}

TEST(RealDwpIndexBytesTest, ProbesPastCollisions) {
  // Ids 0x...01 and 0x...05 both hash to slot 1 of 4; the second must be found by probing.
  const uint64_t a = 0x0000000200000001ULL, b = 0x0000000000000005ULL;
  // Slot for b: 5 & 3 = 1 (taken by a), step ((0 >> 32) & 3) | 1 = 1 -> slot 2.
  IndexBytes bytes = V5Index(4, {{0, 0}, {a, 1}, {b, 2}, {0, 0}}, 2);
  Result<dwarf::DwpIndex> index = dwarf::DwpIndex::Parse(bytes.span());
  ASSERT_TRUE(index) << index.error().ToString();
  std::optional<dwarf::DwpUnitSections> ua = index->Find(a), ub = index->Find(b);
  ASSERT_TRUE(ua);
  ASSERT_TRUE(ub);
  EXPECT_EQ(ua->info.offset, 0u);
  EXPECT_EQ(ub->info.offset, 0x100u);
  EXPECT_EQ(ub->abbrev.offset, 0x10u);
  EXPECT_EQ(ub->abbrev.size, 0x10u);
  EXPECT_FALSE(index->Find(9));
}

TEST(RealDwpIndexBytesTest, FullTableWithoutMatchTerminates) {
  IndexBytes bytes = V5Index(2, {{10, 1}, {11, 2}}, 2);
  Result<dwarf::DwpIndex> index = dwarf::DwpIndex::Parse(bytes.span());
  ASSERT_TRUE(index) << index.error().ToString();
  EXPECT_FALSE(index->Find(12));
  EXPECT_TRUE(index->Find(11));
}

TEST(RealDwpIndexBytesTest, MalformedTablesAreErrors) {
  IndexBytes good = V5Index(4, {{4, 1}}, 1);
  ASSERT_TRUE(dwarf::DwpIndex::Parse(good.span()));
  for (size_t cut = 1; cut < good.bytes().size(); ++cut) {
    EXPECT_FALSE(dwarf::DwpIndex::Parse(good.span().first(cut))) << "truncated at " << cut;
  }
  EXPECT_FALSE(dwarf::DwpIndex::Parse(V5Index(3, {{4, 1}}, 1).span()))
      << "3 slots: not a power of 2";
  EXPECT_FALSE(dwarf::DwpIndex::Parse(V5Index(4, {{4, 2}}, 1).span())) << "row past unit count";
  EXPECT_FALSE(dwarf::DwpIndex::Parse(V5Index(4, {{4, 1}, {4, 2}}, 2).span())) << "duplicate id";
  EXPECT_FALSE(dwarf::DwpIndex::Parse(V5Index(2, {{4, 1}}, 3).span())) << "more units than slots";
  // Id 4 hashes to slot 0 of 4, but sits in slot 1 behind an empty slot 0: unreachable.
  EXPECT_FALSE(dwarf::DwpIndex::Parse(V5Index(4, {{0, 0}, {4, 1}}, 1).span())) << "misplaced id";
  IndexBytes v3 = V5Index(4, {{4, 1}}, 1);
  v3.bytes()[0] = 3;
  Result<dwarf::DwpIndex> r = dwarf::DwpIndex::Parse(v3.span());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  // Absurd counts must be rejected before any allocation.
  IndexBytes huge;
  huge.U32(2);
  huge.U32(0xffffffff);
  huge.U32(0x80000000);
  huge.U32(0x80000000);
  EXPECT_FALSE(dwarf::DwpIndex::Parse(huge.span()));
}

}  // namespace
}  // namespace stacksym
