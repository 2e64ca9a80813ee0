// End-to-end differential tests of `stacksym symbolize elf --output-style=llvm` against
// `llvm-symbolizer --inlines` where the DWARF lives elsewhere than the binary: separate debug
// files (debuglink, build-id directory), dwz supplementary files, .dwo files and .dwp
// packages — and on real third-party debug info (Debian's libc6-dbg, python3.11-dbg).
//
// For the fixtures the reference is llvm-symbolizer on a twin whose DWARF sits in the binary
// itself (the unstripped original, or the same sources built without -gsplit-dwarf, whose
// .text is checked to be byte-identical): that isolates what these tests are about — finding
// and stitching the debug files — from llvm-symbolizer 14's own split-DWARF and dwz gaps
// (see docs/dwarf-differences.md). The output must match byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "real_test_util.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::RealCopy;
using testing::RealFixture;
using testing::RealRun;
using testing::RealTempDir;
using testing::RealToolExists;

const char* const kStacksym = STACKSYM_CLI_PATH;

std::string HexList(const std::vector<uint64_t>& addresses) {
  std::string out;
  char buf[32];
  for (uint64_t a : addresses) {
    std::snprintf(buf, sizeof buf, "0x%llx\n", static_cast<unsigned long long>(a));
    out += buf;
  }
  return out;
}

// One block of llvm-style output per address (the blank line that ends each block removed).
std::vector<std::string> SplitBlocks(const std::string& text) {
  std::vector<std::string> blocks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) {
      blocks.push_back(text.substr(start));
      break;
    }
    blocks.push_back(text.substr(start, end - start + 1));
    start = end + 2;
  }
  return blocks;
}

std::string RunStacksym(const std::string& file, const std::vector<uint64_t>& addresses,
                        const std::string& extra) {
  int code = 0;
  std::string out = RealRun(std::string(kStacksym) + " symbolize elf --output-style=llvm --file " +
                                file + " " + extra + " 2>/dev/null",
                            HexList(addresses), &code);
  EXPECT_EQ(code, 0) << "stacksym failed on " << file;
  return out;
}

// `tool` --inlines: llvm-symbolizer (14) for the fixtures' twins, whose compilation directories
// are absolute (14 and 16 answer alike there); llvm-symbolizer-16 for Debian's own builds,
// whose relative compilation directories 14 joined twice before DWARF 5's directory 0
// (./csu/./csu/version.c) where 16, and stacksym, do not.
std::string RunLlvm(const std::string& file, const std::vector<uint64_t>& addresses,
                    const std::string& extra, const std::string& tool = "llvm-symbolizer") {
  int code = 0;
  std::string out = RealRun(tool + " --inlines --obj=" + file + " " + extra + " 2>/dev/null",
                            HexList(addresses), &code);
  EXPECT_EQ(code, 0) << tool << " failed on " << file;
  return out;
}

// Every address inside every sized function symbol.
std::vector<uint64_t> AllFunctionAddresses(const ElfFile& elf) {
  std::vector<uint64_t> out;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if ((s.type != 2 /*STT_FUNC*/ && s.type != 10 /*STT_GNU_IFUNC*/) || s.sizeless) continue;
    for (uint64_t a = s.address; a < s.address + s.size && a - s.address < 4096; ++a)
      out.push_back(a);
  }
  return out;
}

// `count` addresses at pseudo-random offsets inside pseudo-random function symbols (fixed seed).
std::vector<uint64_t> SampleFunctionAddresses(const ElfFile& elf, size_t count) {
  std::vector<const ElfSymbol*> functions;
  for (const ElfSymbol& s : elf.symbols().symbols()) {
    if ((s.type == 2 || s.type == 10) && !s.sizeless && s.size > 0) functions.push_back(&s);
  }
  std::vector<uint64_t> out;
  if (functions.empty()) return out;
  std::mt19937_64 rng(20261121);
  for (size_t i = 0; i < count; ++i) {
    const ElfSymbol* s = functions[rng() % functions.size()];
    out.push_back(s->address + rng() % s->size);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string TextBytes(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  if (!elf) return {};
  Result<std::span<const uint8_t>> text = (*elf)->SectionData(".text");
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text->data()), text->size());
}

struct FixtureCase {
  std::string name;       // test name
  std::string subject;    // fixture stacksym symbolizes
  std::string reference;  // fixture llvm-symbolizer symbolizes (DWARF inside)
};

void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.name; }

class RealFixtureDiffTest : public ::testing::TestWithParam<FixtureCase> {};

// Byte-for-byte comparison over every address of every function.
void CompareAll(const std::string& subject, const std::string& reference,
                const std::string& stacksym_extra) {
  ASSERT_EQ(TextBytes(subject), TextBytes(reference))
      << subject << " and " << reference << " must have identical code";
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(reference);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = AllFunctionAddresses(**elf);
  ASSERT_GT(addresses.size(), 200u);
  std::vector<std::string> ours = SplitBlocks(RunStacksym(subject, addresses, stacksym_extra));
  std::vector<std::string> theirs = SplitBlocks(RunLlvm(reference, addresses, ""));
  ASSERT_EQ(theirs.size(), addresses.size());
  ASSERT_EQ(ours.size(), addresses.size());
  size_t differences = 0, inlined = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (std::count(theirs[i].begin(), theirs[i].end(), '\n') > 2) ++inlined;
    if (ours[i] == theirs[i]) continue;
    if (++differences <= 20) {
      ADD_FAILURE() << std::hex << "0x" << addresses[i] << "\n--- stacksym\n"
                    << ours[i] << "--- llvm-symbolizer\n"
                    << theirs[i];
    }
  }
  EXPECT_EQ(differences, 0u) << "of " << addresses.size() << " addresses";
  // The fixtures are built to have inline chains; a run without any would test too little.
  EXPECT_GT(inlined, 10u);
}

TEST_P(RealFixtureDiffTest, MatchesLlvmSymbolizerOnTwin) {
  if (!RealToolExists("llvm-symbolizer")) GTEST_SKIP() << "llvm-symbolizer is not installed";
  CompareAll(RealFixture(GetParam().subject), RealFixture(GetParam().reference), "");
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, RealFixtureDiffTest,
    ::testing::Values(FixtureCase{"debuglink", "real_dbg.stripped", "real_dbg"},
                      FixtureCase{"dwz_gnu_a", "real_dwz_gnu_a.stripped", "real_dwz_gnu_a"},
                      FixtureCase{"dwz_gnu_b", "real_dwz_gnu_b.stripped", "real_dwz_gnu_b"},
                      FixtureCase{"dwz_dwarf5_a", "real_dwz_d5_a.stripped", "real_dwz_d5_a"},
                      FixtureCase{"dwz_dwarf5_b", "real_dwz_d5_b.stripped", "real_dwz_d5_b"},
                      FixtureCase{"split_dwo_gcc_dwarf4", "real_split4.split", "real_split4"},
                      FixtureCase{"split_dwo_gcc_dwarf5", "real_split5.split", "real_split5"},
                      FixtureCase{"dwp_binutils_gcc_dwarf4", "real_dwp_gnu4", "real_split4"},
                      FixtureCase{"dwp_llvm_gcc_dwarf4", "real_dwp_llvm4", "real_split4"},
                      FixtureCase{"dwp_llvm_clang_dwarf5", "real_dwp_clang5", "real_clang5"}),
    [](const ::testing::TestParamInfo<FixtureCase>& info) { return info.param.name; });

TEST(RealFixtureDiffTest, BuildIdDirectoryGivenByDebugDir) {
  if (!RealToolExists("llvm-symbolizer")) GTEST_SKIP() << "llvm-symbolizer is not installed";
  RealTempDir tmp;
  std::string binary = tmp.Make("bin/prog");
  ASSERT_TRUE(RealCopy(RealFixture("real_dbg.stripped"), binary));
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(binary);
  ASSERT_TRUE(elf);
  std::string hex = (*elf)->build_id_hex();
  ASSERT_GE(hex.size(), 4u);
  ASSERT_TRUE(RealCopy(RealFixture("real_dbg.debug"), tmp.Make("dbg/.build-id/" + hex.substr(0, 2) +
                                                               "/" + hex.substr(2) + ".debug")));
  CompareAll(binary, RealFixture("real_dbg"), "--debug-dir " + tmp.path() + "/dbg");
  // Without the debug dir there is no DWARF: the answers must differ (no file:line).
  std::vector<uint64_t> one = {(*elf)->symbols().FindByName("real_walk")->address};
  EXPECT_NE(RunStacksym(binary, one, ""), RunLlvm(RealFixture("real_dbg"), one, ""));
}

// --- real third-party debug info ---------------------------------------------------------

struct Frame {
  std::string function;
  std::string file_line;  // "file:line" (column dropped)
};

std::vector<Frame> ParseBlock(const std::string& block) {
  std::vector<Frame> frames;
  std::istringstream in(block);
  std::string function, location;
  while (std::getline(in, function) && std::getline(in, location)) {
    size_t last = location.rfind(':');
    if (last != std::string::npos) location.resize(last);  // drop the column
    frames.push_back({function, location});
  }
  return frames;
}

// Kind of a disagreement, for the summary.
std::string Classify(const std::vector<Frame>& ours, const std::vector<Frame>& theirs) {
  if (ours.size() != theirs.size()) return "inline depth";
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].function == theirs[i].function) continue;
    // llvm-symbolizer names the outermost frame from the symbol table (docs/dwarf-differences.md).
    return i + 1 == ours.size() ? "function name (outermost frame)"
                                : "function name (inlined frame)";
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    std::string a = ours[i].file_line, b = theirs[i].file_line;
    std::string fa = a.substr(0, a.rfind(':')), fb = b.substr(0, b.rfind(':'));
    if (fa != fb) return "file";
    if (a != b) return i + 1 == ours.size() ? "line (outermost frame)" : "line (inlined frame)";
  }
  return "other";
}

// Names of every function symbol (.symtab and .dynsym, demangled, versions dropped) → the
// addresses they are defined at, from binutils' nm: the ground truth for "these two names are
// aliases of one function".
std::map<std::string, std::set<uint64_t>> SymbolAddressesByName(const std::string& path) {
  std::map<std::string, std::set<uint64_t>> out;
  for (const char* flags : {"-C", "-C -D"}) {
    std::string cmd = std::string("nm --defined-only ") + flags + " '" + path + "' 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) continue;
    char line[4096];
    while (fgets(line, sizeof line, pipe) != nullptr) {
      std::string l(line);
      if (!l.empty() && l.back() == '\n') l.pop_back();
      size_t sp1 = l.find(' ');
      if (sp1 == std::string::npos || l.size() < sp1 + 3) continue;
      std::string name = l.substr(sp1 + 3);
      name = name.substr(0, name.find('@'));
      out[name].insert(std::strtoull(l.substr(0, sp1).c_str(), nullptr, 16));
    }
    pclose(pipe);
  }
  return out;
}

// Two names of the outermost frame that nm defines at one address are aliases: stacksym picks
// among aliases global > weak > local (issue 2), llvm-symbolizer the largest and then the last
// in the table. Same function, a documented difference.
bool AreAliases(const std::map<std::string, std::set<uint64_t>>& by_name, const std::string& a,
                const std::string& b) {
  auto ia = by_name.find(a), ib = by_name.find(b);
  if (ia == by_name.end() || ib == by_name.end()) return false;
  for (uint64_t addr : ia->second) {
    if (ib->second.count(addr)) return true;
  }
  return false;
}

void CompareSampled(const std::string& path, const std::string& package, size_t count) {
  if (!RealToolExists("llvm-symbolizer-16")) {
    GTEST_SKIP() << "llvm-symbolizer-16 is not installed (Debian's llvm-16)";
  }
  if (access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " missing: install " << package;
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  std::vector<uint64_t> addresses = SampleFunctionAddresses(**elf, count);
  ASSERT_GE(addresses.size(), 2000u);
  std::vector<std::string> ours = SplitBlocks(RunStacksym(path, addresses, ""));
  std::vector<std::string> theirs = SplitBlocks(RunLlvm(path, addresses, "", "llvm-symbolizer-16"));
  ASSERT_EQ(ours.size(), addresses.size());
  ASSERT_EQ(theirs.size(), addresses.size());
  std::map<std::string, std::set<uint64_t>> by_name = SymbolAddressesByName(path);
  size_t with_lines = 0, agree = 0, aliases = 0;
  std::map<std::string, size_t> kinds;
  std::string report;
  for (size_t i = 0; i < addresses.size(); ++i) {
    std::vector<Frame> a = ParseBlock(ours[i]), b = ParseBlock(theirs[i]);
    if (!b.empty() && b.back().file_line.rfind("??", 0) != 0) ++with_lines;
    bool same = a.size() == b.size();
    bool alias = false;
    for (size_t f = 0; same && f < a.size(); ++f) {
      bool outermost = f + 1 == a.size();
      bool name_ok = a[f].function == b[f].function;
      if (!name_ok && outermost && AreAliases(by_name, a[f].function, b[f].function)) {
        name_ok = alias = true;
      }
      same = name_ok && a[f].file_line == b[f].file_line;
    }
    if (same) {
      ++agree;
      aliases += alias;
      continue;
    }
    std::string kind = Classify(a, b);
    ++kinds[kind];
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(addresses[i]));
    report += std::string(addr) + " [" + kind + "]\n--- stacksym\n" + ours[i] +
              "--- llvm-symbolizer\n" + theirs[i];
  }
  std::string summary;
  for (const auto& [kind, n] : kinds) summary += "  " + kind + ": " + std::to_string(n) + "\n";
  double rate = static_cast<double>(agree) / static_cast<double>(addresses.size());
  std::printf(
      "%s: %zu addresses, %zu with file:line, agreement %.3f%% (of which %zu only differ in "
      "the choice among aliases of the outermost function)\n%s%s",
      path.c_str(), addresses.size(), with_lines, 100.0 * rate, aliases, summary.c_str(),
      report.c_str());
  // Most sampled addresses must really have DWARF answers, or the comparison means little.
  EXPECT_GT(with_lines, addresses.size() * 9 / 10) << "debug info not found for " << path;
  EXPECT_GE(rate, 0.995) << "differences by kind:\n" << summary;
}

TEST(RealThirdPartyDiffTest, LibcFromLibc6Dbg) {
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(libc);
  ASSERT_TRUE(elf);
  std::string hex = (*elf)->build_id_hex();
  std::string debug =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  if (access(debug.c_str(), R_OK) != 0) GTEST_SKIP() << debug << " missing: install libc6-dbg";
  CompareSampled(libc, "libc6-dbg", 2500);
}

TEST(RealThirdPartyDiffTest, Python311DebugBuild) {
  CompareSampled("/usr/bin/python3.11d", "python3.11-dbg", 2500);
}

}  // namespace
}  // namespace stacksym
