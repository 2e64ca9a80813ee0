// Debug files as the distributions make them, differential against eu-addr2line (elfutils) on
// files made at test time from one program (fixtures/distro_prog.c):
// - eu-strip -f (rpm's find-debuginfo on Fedora/RHEL): a debug file whose program headers
//   still describe the original file (its PT_NOTE offsets point elsewhere), found in each place
//   gdb looks — next to the binary, its .debug/, DEBUGDIR plus the binary's absolute directory,
//   the build-ID tree — and eu-strip --reloc-debug-sections' output alike;
// - MiniDebugInfo (.gnu_debugdata), made as Fedora makes it (make_minidebuginfo.sh): a symbol
//   source after .symtab and DWARF, directly and from the persisted index alike, and left out
//   where llvm-symbolizer leaves it out (its drop-in: symbols_from_debug_file off).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "elf/mini_debug_info.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"
#include "test_util.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using testing::FixturePath;
using testing::Hex;
using testing::RunCommand;

void Shell(const std::string& command) {
  int code = -1;
  std::string out = RunCommand(command + " 2>&1", &code);
  ASSERT_EQ(code, 0) << command << "\n" << out;
}

bool HaveTool(const std::string& name) {
  int code = -1;
  RunCommand("command -v " + name + " >/dev/null 2>&1", &code);
  return code == 0;
}

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

struct Probe {
  uint64_t vaddr;
  std::string symbol;  // the symbol it lies in, per nm
};

// The start and the middle of every defined function (FUNC and NOTYPE, text) of the
// unstripped program, per nm.
std::vector<Probe> FunctionProbes(const std::string& unstripped) {
  std::vector<Probe> probes;
  for (const testing::NmSymbol& s : testing::RunNm(unstripped, "")) {
    if (s.type != 'T' && s.type != 't') continue;
    probes.push_back({s.address, s.name});
    if (s.size > 2) probes.push_back({s.address + s.size / 2, s.name});
  }
  return probes;
}

struct Answer {
  std::string function;  // "??" when none
  std::string location;  // "basename:line", or "??:0" when DWARF gives none
};

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// eu-addr2line -f (no inlines: the address's innermost function, its line).
std::vector<Answer> EuAddr2line(const std::string& file, const std::vector<Probe>& probes) {
  std::string command = "eu-addr2line -f -e '" + file + "'";
  for (const Probe& p : probes) command += " " + Hex(p.vaddr);
  std::istringstream lines(RunCommand(command + " 2>/dev/null"));
  std::vector<Answer> answers;
  for (std::string function, location;
       std::getline(lines, function) && std::getline(lines, location);) {
    // "path:line:column" when the column is known: the column is left out.
    size_t last = location.rfind(':');
    if (last != std::string::npos && last > 0) {
      size_t before = location.rfind(':', last - 1);
      if (before != std::string::npos &&
          location.find_first_not_of("0123456789", before + 1) == last) {
        location.resize(last);
      }
    }
    std::string line_of = location.substr(location.rfind(':') + 1);
    std::string file_of = location.substr(0, location.rfind(':'));
    if (file_of == "??" || line_of == "0") {
      location = "??:0";
    } else {
      location = BaseName(file_of) + ":" + line_of;
    }
    answers.push_back({function, location});
  }
  return answers;
}

Answer OurAnswer(const SymbolizedAddress& a) {
  Answer answer{"??", "??:0"};
  if (!a.frames.empty()) {
    answer.function = a.frames.front().function.empty() ? "??" : a.frames.front().function;
    if (!a.frames.front().file.empty() && a.frames.front().line != 0) {
      answer.location =
          BaseName(a.frames.front().file) + ":" + std::to_string(a.frames.front().line);
    }
  } else if (!a.symbol.empty()) {
    answer.function = a.symbol;
  }
  return answer;
}

std::vector<Answer> Ours(const std::string& binary, const std::vector<Probe>& probes,
                         SymbolizeOptions options) {
  options.inlines = false;
  auto symbolizer = ElfSymbolizer::Open(binary, options);
  EXPECT_TRUE(symbolizer.ok()) << symbolizer.error().ToString();
  if (!symbolizer.ok()) return {};
  std::vector<uint64_t> addresses;
  for (const Probe& p : probes) addresses.push_back(p.vaddr);
  std::vector<Answer> answers;
  for (const SymbolizedAddress& a :
       (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual)) {
    answers.push_back(OurAnswer(a));
  }
  return answers;
}

void ExpectSameAnswers(const std::vector<Probe>& probes, const std::vector<Answer>& expected,
                       const std::vector<Answer>& actual, bool compare_lines) {
  ASSERT_EQ(expected.size(), probes.size());
  ASSERT_EQ(actual.size(), probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    SCOPED_TRACE(Hex(probes[i].vaddr) + " in " + probes[i].symbol);
    EXPECT_EQ(actual[i].function, expected[i].function);
    if (compare_lines) {
      EXPECT_EQ(actual[i].location, expected[i].location);
    }
  }
}

class DistroDebugTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveTool("eu-strip") || !HaveTool("eu-addr2line")) {
      GTEST_SKIP() << "needs elfutils (eu-strip, eu-addr2line)";
    }
    work_ = fs::weakly_canonical(::testing::TempDir()).string() + "/distro-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
            std::to_string(getpid());
    fs::remove_all(work_);
    fs::create_directories(work_ + "/bin");
    fixture_ = FixturePath("distro_prog");
    probes_ = FunctionProbes(fixture_);
    ASSERT_GT(probes_.size(), 8u);
    std::shared_ptr<ElfFile> elf = OpenOrDie(fixture_);
    ASSERT_NE(elf, nullptr);
    build_id_ = elf->build_id_hex();
    ASSERT_GT(build_id_.size(), 2u);
  }
  void TearDown() override {
    if (!HasFailure() && !work_.empty()) fs::remove_all(work_);
  }

  SymbolizeOptions OnlyDebugDir(const std::string& dir) const {
    SymbolizeOptions options;
    options.debug_dirs = {dir};
    return options;
  }

  std::string work_, fixture_, build_id_;
  std::vector<Probe> probes_;
};

// eu-strip -f's debug file opens (its stale PT_NOTE skipped, the notes read from its sections)
// with the binary's build ID, and in each place gdb looks it gives the stripped binary the
// names and lines eu-addr2line gives the unstripped one.
TEST_F(DistroDebugTest, EuStripDebugFileInEveryPlace) {
  const std::string binary = work_ + "/bin/prog";
  Shell("eu-strip -f " + work_ + "/prog.debug -o " + binary + " " + fixture_);
  std::shared_ptr<ElfFile> debug = OpenOrDie(work_ + "/prog.debug");
  ASSERT_NE(debug, nullptr);
  EXPECT_EQ(debug->build_id_hex(), build_id_);
  // The few-reads path (the normalizer's) finds the same ID despite the stale PT_NOTE.
  int fd = ::open((work_ + "/prog.debug").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Result<std::vector<uint8_t>> from_fd = ReadBuildIdFromFd(fd);
  ::close(fd);
  ASSERT_TRUE(from_fd.ok()) << from_fd.error().ToString();
  EXPECT_EQ(ToHex(*from_fd), build_id_);
  std::shared_ptr<ElfFile> stripped = OpenOrDie(binary);
  ASSERT_NE(stripped, nullptr);
  ASSERT_TRUE(stripped->debuglink());
  EXPECT_EQ(stripped->debuglink()->name, "prog.debug");
  ASSERT_EQ(stripped->FindSection(".symtab"), nullptr);

  const std::vector<Answer> expected = EuAddr2line(fixture_, probes_);
  ASSERT_EQ(expected.size(), probes_.size());
  // Without the debug file the static functions go unnamed: the places below are what names
  // them.
  std::vector<Answer> bare = Ours(binary, probes_, OnlyDebugDir(work_ + "/none"));
  size_t unnamed = 0;
  for (const Answer& a : bare) unnamed += a.function == "??";
  EXPECT_GT(unnamed, 0u);

  const std::string debug_dir = work_ + "/dbg";
  const std::string places[] = {
      work_ + "/bin/prog.debug",
      work_ + "/bin/.debug/prog.debug",
      debug_dir + work_ + "/bin/prog.debug",
      debug_dir + "/.build-id/" + build_id_.substr(0, 2) + "/" + build_id_.substr(2) + ".debug",
  };
  for (const std::string& place : places) {
    SCOPED_TRACE(place);
    fs::create_directories(fs::path(place).parent_path());
    fs::copy_file(work_ + "/prog.debug", place);
    ExpectSameAnswers(probes_, expected, Ours(binary, probes_, OnlyDebugDir(debug_dir)), true);
    // And from the persisted index, built then read back.
    SymbolizeOptions cached = OnlyDebugDir(debug_dir);
    cached.cache_dir = work_ + "/cache";
    for (int round = 0; round < 2; ++round) {
      ExpectSameAnswers(probes_, expected, Ours(binary, probes_, cached), true);
    }
    fs::remove_all(work_ + "/cache");
    fs::remove(place);
  }
  // eu-addr2line itself reads the layout next to the binary alike.
  fs::copy_file(work_ + "/prog.debug", places[0]);
  ExpectSameAnswers(probes_, expected, EuAddr2line(binary, probes_), true);
}

// eu-strip --reloc-debug-sections (its relocations between debug sections resolved) works as
// objcopy --only-keep-debug's file does.
TEST_F(DistroDebugTest, EuStripRelocDebugSectionsLikeObjcopy) {
  const std::string binary = work_ + "/bin/prog";
  Shell("eu-strip --reloc-debug-sections -f " + work_ + "/bin/prog.debug -o " + binary + " " +
        fixture_);
  const std::vector<Answer> expected = EuAddr2line(fixture_, probes_);
  std::vector<Answer> eu = Ours(binary, probes_, OnlyDebugDir(work_ + "/none"));
  ExpectSameAnswers(probes_, expected, eu, true);

  Shell("cd " + work_ + " && objcopy --only-keep-debug " + fixture_ +
        " objcopy.debug && objcopy --strip-debug --strip-unneeded "
        "--add-gnu-debuglink=objcopy.debug " +
        fixture_ + " objcopy_prog");
  std::vector<Answer> objcopy = Ours(work_ + "/objcopy_prog", probes_, OnlyDebugDir(work_));
  ExpectSameAnswers(probes_, expected, objcopy, true);
}

// MiniDebugInfo names what .dynsym does not (static functions, _start), as eu-addr2line does,
// directly and from the index; a debug file's .symtab, when there is one, comes first.
TEST_F(DistroDebugTest, MiniDebugInfoNamesStaticFunctions) {
  if (!HaveTool("xz")) GTEST_SKIP() << "needs xz (package xz-utils)";
  const std::string binary = work_ + "/bin/prog";
  Shell(std::string("sh ") + STACKSYM_TEST_SOURCE_DIR + "/make_minidebuginfo.sh " + fixture_ + " " +
        binary);
  std::shared_ptr<ElfFile> elf = OpenOrDie(binary);
  ASSERT_NE(elf, nullptr);
  ASSERT_EQ(elf->FindSection(".symtab"), nullptr);
  ASSERT_NE(elf->FindSection(".gnu_debugdata"), nullptr);
  const ElfFile* mini = elf->mini_debug_info();
  ASSERT_NE(mini, nullptr) << (elf->mini_debug_info_problem()
                                   ? elf->mini_debug_info_problem()->ToString()
                                   : std::string("no problem recorded"));
  EXPECT_NE(mini->symbols().FindByName("static_leaf"), nullptr);
  EXPECT_GT(elf->heap_bytes(), mini->bytes().size() - 1);

  const std::vector<Answer> expected = EuAddr2line(binary, probes_);
  size_t named = 0;
  for (const Answer& a : expected) named += a.function != "??";
  ASSERT_GT(named, probes_.size() / 2) << "eu-addr2line did not read .gnu_debugdata";
  ExpectSameAnswers(probes_, expected, Ours(binary, probes_, OnlyDebugDir(work_ + "/none")), false);
  SymbolizeOptions cached = OnlyDebugDir(work_ + "/none");
  cached.cache_dir = work_ + "/cache";
  for (int round = 0; round < 2; ++round) {
    ExpectSameAnswers(probes_, expected, Ours(binary, probes_, cached), false);
  }
  // llvm-symbolizer reads no .gnu_debugdata: its drop-in (symbols_from_debug_file off) answers
  // as it does.
  if (HaveTool("llvm-symbolizer-16")) {
    SymbolizeOptions drop_in = OnlyDebugDir(work_ + "/none");
    drop_in.symbols_from_debug_file = false;
    std::vector<Answer> ours = Ours(binary, probes_, drop_in);
    std::string command = "llvm-symbolizer-16 --obj='" + binary + "'";
    for (const Probe& p : probes_) command += " " + Hex(p.vaddr);
    std::istringstream lines(RunCommand(command));
    size_t i = 0;
    for (std::string function, location, blank;
         std::getline(lines, function) && std::getline(lines, location) &&
         std::getline(lines, blank);
         ++i) {
      ASSERT_LT(i, ours.size());
      EXPECT_EQ(ours[i].function, function) << Hex(probes_[i].vaddr);
    }
    EXPECT_EQ(i, probes_.size());
  }
}

// Assembly without .type (STT_NOTYPE) and absolute (SHN_ABS) symbols: the profile path names
// addresses from them as eu-addr2line does (untyped, sized: its range; sizeless: up to the next
// symbol; absolute and sizeless: its exact address, only where nothing else names it), and the
// llvm-symbolizer drop-in answers byte for byte as llvm-symbolizer 14 and 16 (which names
// nothing from absolute symbols), with the binary's DWARF and without.
TEST_F(DistroDebugTest, NotypeSymbolsAsTheReferenceTools) {
  std::shared_ptr<ElfFile> elf = OpenOrDie(fixture_);
  ASSERT_NE(elf, nullptr);
  const ElfSymbol* sizeless = elf->symbols().FindByName("asm_notype");
  const ElfSymbol* sized = elf->symbols().FindByName("asm_sized_notype");
  ASSERT_NE(sizeless, nullptr);
  ASSERT_NE(sized, nullptr);
  EXPECT_EQ(sized->size, 5u);
  const ElfSymbol* leaf = elf->symbols().FindByName("static_leaf");
  const ElfSection* text = elf->FindSection(".text");
  ASSERT_NE(leaf, nullptr);
  ASSERT_NE(text, nullptr);
  std::vector<Probe> probes;
  for (uint64_t a :
       {sizeless->address, sizeless->address + 4, sizeless->address + 8, sized->address,
        sized->address + 4, sized->address + 5, sized->address + 20, sized->address + 22,
        sized->address + 40, sized->address + 41, leaf->address, leaf->address + 4}) {
    probes.push_back({a, "asm"});
  }
  const std::string nodebug = work_ + "/nodebug";
  Shell("strip --strip-debug -o " + nodebug + " " + fixture_);
  // A global untyped marker at a local function's address does not rename it.
  const std::string marked = work_ + "/marked";
  Shell("objcopy --add-symbol marker=.text:" + Hex(leaf->address - text->addr) + ",global " +
        fixture_ + " " + marked);
  // Absolute symbols (SHN_ABS) in the padding after asm_sized_notype, which no other symbol
  // covers: eu-addr2line names each one's exact address from it, llvm-symbolizer nothing.
  const std::string absolute = work_ + "/absolute";
  Shell("objcopy --add-symbol abs_global=" + Hex(sized->address + 20) +
        ",global --add-symbol abs_local=" + Hex(sized->address + 40) + ",local " + fixture_ + " " +
        absolute);
  std::vector<Answer> eu_absolute = EuAddr2line(absolute, probes);
  ASSERT_EQ(eu_absolute.size(), probes.size());
  EXPECT_EQ(eu_absolute[6].function, "abs_global");
  EXPECT_EQ(eu_absolute[7].function, "??");
  EXPECT_EQ(eu_absolute[8].function, "abs_local");
  SymbolizeOptions cached = OnlyDebugDir(work_ + "/none");
  cached.cache_dir = work_ + "/cache";
  for (int round = 0; round < 2; ++round) {  // the index answers alike, built and read back
    ExpectSameAnswers(probes, eu_absolute, Ours(absolute, probes, cached), false);
  }
  for (const std::string& file : {fixture_, nodebug, marked, absolute}) {
    SCOPED_TRACE(file);
    std::vector<Answer> expected = EuAddr2line(file, probes);
    EXPECT_EQ(expected[0].function, "asm_notype");
    ExpectSameAnswers(probes, expected, Ours(file, probes, OnlyDebugDir(work_ + "/none")), false);
    std::string list;
    for (const Probe& p : probes) list += " " + Hex(p.vaddr);
    const std::string drop_in = work_ + "/llvm-symbolizer";
    fs::remove(drop_in);
    fs::create_symlink(STACKSYM_CLI, drop_in);
    std::string ours = RunCommand(drop_in + " --obj='" + file + "'" + list);
    for (const char* tool : {"llvm-symbolizer-14", "llvm-symbolizer-16"}) {
      if (!HaveTool(tool)) continue;
      EXPECT_EQ(ours, RunCommand(std::string(tool) + " --obj='" + file + "'" + list)) << tool;
    }
  }
}

// Decoding is bounded, and bad bytes get a clear error, never a crash.
TEST(MiniDebugInfoDecode, BoundsAndErrors) {
  if (!HaveTool("xz")) GTEST_SKIP() << "needs xz (package xz-utils)";
  std::string dir = ::testing::TempDir() + "/xz-" + std::to_string(getpid());
  fs::create_directories(dir);
  Shell("head -c 100000 /dev/zero > " + dir + "/zeros && xz -k " + dir + "/zeros");
  std::ifstream in(dir + "/zeros.xz", std::ios::binary);
  std::vector<uint8_t> xz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  ASSERT_GT(xz.size(), 32u);

  auto whole = elf::DecompressXz(xz, elf::kMaxMiniDebugInfoBytes);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_EQ(whole->size(), 100000u);
  EXPECT_EQ(std::count(whole->begin(), whole->end(), 0), 100000);

  auto over = elf::DecompressXz(xz, 4096);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("4096-byte limit"), std::string::npos)
      << over.error().message;

  std::vector<uint8_t> truncated(xz.begin(), xz.end() - 20);
  auto cut = elf::DecompressXz(truncated, elf::kMaxMiniDebugInfoBytes);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("xz"), std::string::npos) << cut.error().message;

  std::vector<uint8_t> corrupt = xz;
  corrupt[xz.size() / 2] ^= 0x55;
  EXPECT_FALSE(elf::DecompressXz(corrupt, elf::kMaxMiniDebugInfoBytes).ok());

  std::vector<uint8_t> not_xz = {'n', 'o', 't', ' ', 'x', 'z'};
  auto bad = elf::DecompressXz(not_xz, elf::kMaxMiniDebugInfoBytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not xz data"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace stacksym
