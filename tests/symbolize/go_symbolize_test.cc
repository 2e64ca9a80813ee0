// Go binaries, built at test time with Debian's golang-go from tests/elf/fixtures/go_prog:
// unstripped, stripped as Go services ship (-ldflags='-s -w'), and with cgo (linked by ld).
// For every function of the program (entry, middle) and every pc of package main:
//   - the stripped binary's answers (function, file:line of the innermost frame) equal
//     `go tool addr2line` on the same binary (not for cgo: addr2line takes .text's start, where
//     ld put C code, for the table's text start, and answers wrongly there);
//   - they equal stacksym's DWARF answers on the unstripped build, inline chains included;
//   - an index-cached run answers as the direct one;
//   - `record` of the running stripped program names >= 90 % of its user frames.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "elf/go_pclntab.h"
#include "go_builds.h"
#include "stacksym/elf.h"
#include "stacksym/hex.h"
#include "stacksym/symbolize.h"
#include "test_util.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;

// The builds the tests use: plain, stripped as services ship, and with cgo (linked by ld).
std::string BuildVariant(const std::string& variant) {
  testing::GoBuilds& go = testing::GoBuilds::Get();
  if (variant == "plain") return go.Build(variant, "CGO_ENABLED=0", "");
  if (variant == "stripped") return go.Build(variant, "CGO_ENABLED=0", "-ldflags='-s -w'");
  if (variant == "cgo") return go.Build(variant, "CGO_ENABLED=1", "-tags stacksym_cgo");
  if (variant == "cgo_stripped") {
    return go.Build(variant, "CGO_ENABLED=1", "-tags stacksym_cgo -ldflags='-s -w'");
  }
  return "";
}

#define REQUIRE_GO_BUILD(path, variant)                                                           \
  if (!testing::GoBuilds::Get().have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)"; \
  const std::string path = BuildVariant(variant);                                                 \
  ASSERT_FALSE(path.empty()) << testing::GoBuilds::Get().error()

// The addresses asked: every function's entry and middle, and every pc of package main.
std::vector<uint64_t> AddressesOf(const std::string& binary) {
  std::vector<uint64_t> addresses;
  auto elf = ElfFile::Open(binary);
  if (!elf) return addresses;
  auto table = elf::FindGoPclntab(**elf);
  if (!table || !*table) return addresses;
  const elf::GoPclntab& t = ***table;
  for (size_t i = 0; i < t.function_count(); ++i) {
    std::optional<elf::GoFunction> f = t.FunctionAt(i);
    if (!f || f->end <= f->entry) continue;
    addresses.push_back(f->entry);
    addresses.push_back(f->entry + (f->end - f->entry) / 2);
    if (f->name.starts_with("main.")) {
      for (uint64_t pc = f->entry + 1; pc < f->end; ++pc) addresses.push_back(pc);
    }
  }
  return addresses;
}

std::vector<SymbolizedAddress> Symbolize(const std::string& binary,
                                         const std::vector<uint64_t>& addresses,
                                         const std::string& cache_dir = "") {
  SymbolizeOptions options;
  options.cache_dir = cache_dir;
  options.threads = 1;
  auto symbolizer = ElfSymbolizer::Open(binary, options);
  if (!symbolizer) return {};
  return (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual);
}

std::string Describe(const SymbolizedAddress& a) {
  std::ostringstream out;
  out << std::hex << "0x" << a.vaddr << std::dec << " " << a.symbol;
  for (const SourceFrame& f : a.frames) {
    out << " | " << (f.inlined ? "inlined " : "") << f.function << " " << f.file << ":" << f.line;
  }
  return out.str();
}

// `go tool addr2line BINARY` on the addresses: (function, "file:line") each.
std::vector<std::pair<std::string, std::string>> GoAddr2line(
    const std::string& binary, const std::vector<uint64_t>& addresses) {
  const std::string input = binary + ".addresses";
  {
    std::ofstream out(input);
    for (uint64_t a : addresses) out << "0x" << std::hex << a << "\n";
  }
  const std::string cache = fs::path(binary).parent_path().string() + "/cache";
  std::string text =
      RunCommand("GOCACHE=" + cache + " go tool addr2line " + binary + " < " + input);
  std::vector<std::pair<std::string, std::string>> answers;
  std::istringstream lines(text);
  for (std::string name, place; std::getline(lines, name) && std::getline(lines, place);) {
    answers.emplace_back(name, place);
  }
  return answers;
}

// The same function entries: the two builds were laid out alike, so their addresses compare.
void ExpectSameLayout(const std::string& a, const std::string& b) {
  std::vector<uint64_t> entries_a = AddressesOf(a);
  std::vector<uint64_t> entries_b = AddressesOf(b);
  ASSERT_FALSE(entries_a.empty());
  ASSERT_EQ(entries_a, entries_b) << a << " and " << b << " differ in layout";
}

TEST(GoSymbolize, StrippedAnswersEqualGoToolAddr2line) {
  REQUIRE_GO_BUILD(stripped, "stripped");
  std::vector<uint64_t> addresses = AddressesOf(stripped);
  ASSERT_GT(addresses.size(), 1000u);
  std::vector<SymbolizedAddress> ours = Symbolize(stripped, addresses);
  std::vector<std::pair<std::string, std::string>> theirs = GoAddr2line(stripped, addresses);
  ASSERT_EQ(ours.size(), addresses.size());
  ASSERT_EQ(theirs.size(), addresses.size());
  size_t differ = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const SymbolizedAddress& a = ours[i];
    // addr2line says line -1 where the table has none (padding after a function's last
    // instruction); stacksym leaves the line 0.
    std::string line =
        a.frames.empty() || a.frames[0].line == 0 ? "-1" : std::to_string(a.frames[0].line);
    std::string place = a.frames.empty() ? "?" : a.frames[0].file + ":" + line;
    if (a.symbol == theirs[i].first && place == theirs[i].second) continue;
    if (++differ <= 10) {
      ADD_FAILURE() << Describe(a) << "\n  go tool addr2line: " << theirs[i].first << " "
                    << theirs[i].second;
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << addresses.size();
}

// A DWARF (or .symtab) answer in the words of the pclntab, which names functions as Go's own
// tracebacks print them: assembly functions without their ABI suffix (".abi0"), array
// lengths in generated names shortened ("type..eq.[5]T" is "type..eq.[...]T"), and generated
// code's files ("<autogenerated>", "_cgo_gotypes.go") without DWARF's "./".
std::string AsPclntabNames(std::string text) {
  static const std::regex kAbi(R"(\.abi0\b)");
  static const std::regex kArrayLength(R"(\[[0-9]+\])");
  text = std::regex_replace(text, kAbi, "");
  text = std::regex_replace(text, kArrayLength, "[...]");
  return std::regex_replace(text, std::regex(R"( \./)"), " ");
}

// Go's DWARF leaves out the call that a generated pointer-receiver wrapper inlines
// (runtime.(*waitReason).String at <autogenerated>:1 calling runtime.waitReason.String): it
// places the wrapper's pcs at the callee's line directly. The pclntab keeps the inline frame.
bool DwarfOmitsWrapperInline(const SymbolizedAddress& ours, const SymbolizedAddress& dwarf) {
  return ours.frames.size() == 2 && ours.frames.back().file == "<autogenerated>" &&
         dwarf.frames.size() == 1 && dwarf.symbol == ours.symbol &&
         dwarf.frames[0].file == ours.frames[0].file && dwarf.frames[0].line == ours.frames[0].line;
}

// The stripped build's answers (pclntab only) against the unstripped one's (.symtab, DWARF).
void ExpectSameAsDwarf(const std::string& stripped, const std::string& unstripped) {
  ASSERT_NO_FATAL_FAILURE(ExpectSameLayout(stripped, unstripped));
  std::vector<uint64_t> addresses = AddressesOf(stripped);
  std::vector<SymbolizedAddress> ours = Symbolize(stripped, addresses);
  std::vector<SymbolizedAddress> dwarf = Symbolize(unstripped, addresses);
  ASSERT_EQ(ours.size(), addresses.size());
  ASSERT_EQ(dwarf.size(), addresses.size());
  size_t differ = 0, inlined = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    std::string a = Describe(ours[i]);
    std::string b = AsPclntabNames(Describe(dwarf[i]));
    if (ours[i].frames.size() > 1) ++inlined;
    if (a == b || DwarfOmitsWrapperInline(ours[i], dwarf[i])) continue;
    if (++differ <= 10) ADD_FAILURE() << "pclntab: " << a << "\n  DWARF:   " << b;
  }
  EXPECT_EQ(differ, 0u) << "of " << addresses.size();
  EXPECT_GT(inlined, 10u) << "no inline chains compared";
}

TEST(GoSymbolize, StrippedAnswersEqualDwarfOfTheUnstrippedBuild) {
  REQUIRE_GO_BUILD(stripped, "stripped");
  REQUIRE_GO_BUILD(plain, "plain");
  ExpectSameAsDwarf(stripped, plain);
}

TEST(GoSymbolize, CgoStrippedAnswersEqualDwarfOfTheUnstrippedBuild) {
  REQUIRE_GO_BUILD(stripped, "cgo_stripped");
  REQUIRE_GO_BUILD(plain, "cgo");
  auto elf = ElfFile::Open(stripped);
  ASSERT_TRUE(elf);
  EXPECT_NE((*elf)->FindSection(".dynsym"), nullptr) << "not linked by ld: no cgo";
  ExpectSameAsDwarf(stripped, plain);
}

TEST(GoSymbolize, IndexedAnswersEqualDirectOnes) {
  REQUIRE_GO_BUILD(stripped, "stripped");
  std::vector<uint64_t> addresses = AddressesOf(stripped);
  const std::string cache = fs::path(stripped).parent_path().string() + "/index-cache";
  std::vector<SymbolizedAddress> direct = Symbolize(stripped, addresses);
  std::vector<SymbolizedAddress> built = Symbolize(stripped, addresses, cache);   // builds
  std::vector<SymbolizedAddress> cached = Symbolize(stripped, addresses, cache);  // opens
  ASSERT_EQ(direct.size(), addresses.size());
  ASSERT_EQ(built.size(), addresses.size());
  ASSERT_EQ(cached.size(), addresses.size());
  EXPECT_FALSE(fs::is_empty(cache)) << "no index written";
  for (size_t i = 0; i < addresses.size(); ++i) {
    ASSERT_EQ(Describe(built[i]), Describe(direct[i]));
    ASSERT_EQ(Describe(cached[i]), Describe(direct[i]));
  }
}

TEST(GoSymbolize, GoBuildIdIsReported) {
  REQUIRE_GO_BUILD(stripped, "stripped");
  auto elf = ElfFile::Open(stripped);
  ASSERT_TRUE(elf);
  std::string expected = RunCommand("go tool buildid " + stripped);
  while (!expected.empty() && expected.back() == '\n') expected.pop_back();
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ((*elf)->go_build_id(), expected);
  int code = -1;
  std::string out = RunCommand(std::string(STACKSYM_CLI) + " buildid " + stripped, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "- " + stripped + " go:" + expected + "\n");
}

// The release the table is told (it picks a 1.2-magic table's inline layout) is the one
// `go version` reads from the binary: from .go.buildinfo, and without it (removed here) from
// the unstripped build's runtime.buildVersion symbol.
TEST(GoSymbolize, ReleaseIsTheOneGoVersionReads) {
  REQUIRE_GO_BUILD(plain, "plain");
  const std::string stripped = BuildVariant("stripped");
  const std::string said = RunCommand("go version " + plain);  // "PATH: go1.19.8"
  std::smatch match;
  ASSERT_TRUE(std::regex_search(said, match, std::regex(": go1\\.([0-9]+)"))) << said;
  const uint32_t expected = static_cast<uint32_t>(std::stoul(match[1].str()));
  auto minor_of = [](const std::string& path) -> int64_t {
    auto elf = ElfFile::Open(path);
    if (!elf) return -1;
    auto table = elf::FindGoPclntab(**elf);
    return table && *table ? int64_t{(**table)->go_minor()} : -1;
  };
  EXPECT_EQ(minor_of(plain), expected);
  EXPECT_EQ(minor_of(stripped), expected);
  const std::string without = plain + ".without-buildinfo";
  int code = -1;
  std::string out =
      RunCommand("objcopy --remove-section .go.buildinfo " + plain + " " + without, &code);
  ASSERT_EQ(code, 0) << out;
  auto elf = ElfFile::Open(without);
  ASSERT_TRUE(elf);
  ASSERT_EQ((*elf)->FindSection(".go.buildinfo"), nullptr);
  EXPECT_EQ(minor_of(without), expected);
}

// Samples of `record`'s folded output whose frames of the program (not the kernel's) are all
// named, weighted by their counts.
TEST(GoSymbolize, RecordNamesTheStrippedProgramsFrames) {
  REQUIRE_GO_BUILD(stripped, "stripped");
  const std::string folded = stripped + ".folded";
  int code = -1;
  std::string out = RunCommand(std::string(STACKSYM_CLI) + " record -F 999 --no-cache -o " +
                                   folded + " -- " + stripped + " 1 2>&1",
                               &code);
  if (code != 0 && (out.find("Operation not permitted") != std::string::npos ||
                    out.find("permission") != std::string::npos)) {
    GTEST_SKIP() << "recording needs BPF or perf events (root): " << out;
  }
  ASSERT_EQ(code, 0) << out;
  std::ifstream in(folded);
  uint64_t frames = 0, named = 0;
  bool hot_named = false, caller_of_leaf = false;
  for (std::string line; std::getline(in, line);) {
    uint64_t count = std::stoull(line.substr(line.rfind(' ') + 1));
    std::istringstream parts(line.substr(0, line.rfind(' ')));
    std::string frame;
    std::getline(parts, frame, ';');  // the command
    while (std::getline(parts, frame, ';')) {
      if (frame.ends_with("_[k]")) continue;
      frames += count;
      if (frame.find("+0x") == std::string::npos && frame.find("??") == std::string::npos &&
          frame.find("[unknown]") == std::string::npos) {
        named += count;
      }
      hot_named = hot_named || frame == "main.leafHot";
      // main.leafHot is a frameless leaf: walked by frame pointers, its caller is skipped.
      caller_of_leaf = caller_of_leaf || frame == "main.middle";
    }
  }
  ASSERT_GT(frames, 0u) << out;
  EXPECT_GE(named * 100, frames * 90) << named << " of " << frames << " frames named\n" << out;
  EXPECT_TRUE(hot_named) << "main.leafHot not named\n" << out;
  EXPECT_TRUE(caller_of_leaf) << "no stack through main.middle: unwound without .gopclntab's "
                              << "stack depths?\n"
                              << out;
}

// Go's linker writes .note.gnu.build-id (with -B) outside its one PT_NOTE, which covers only
// .note.go.buildid, so the kernel (PROCMAP_QUERY) finds no build ID: the file reader and the
// normalizer of a live process must still find the one ElfFile reads.
TEST(GoSymbolize, GnuBuildIdOutsideTheNoteSegmentIsFound) {
  if (!testing::GoBuilds::Get().have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)";
  const std::string binary = testing::GoBuilds::Get().Build(
      "with_gnu_build_id", "CGO_ENABLED=0", "-ldflags='-s -w -B 0x0123456789abcdef0123'");
  ASSERT_FALSE(binary.empty()) << testing::GoBuilds::Get().error();
  auto elf = ElfFile::Open(binary);
  ASSERT_TRUE(elf);
  EXPECT_EQ((*elf)->build_id_hex(), "0123456789abcdef0123");
  int fd = ::open(binary.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Result<std::vector<uint8_t>> from_fd = ReadBuildIdFromFd(fd);
  ::close(fd);
  ASSERT_TRUE(from_fd) << from_fd.error().ToString();
  EXPECT_EQ(ToHex(*from_fd), "0123456789abcdef0123");

  int code = -1;
  std::string out = RunCommand("sh -c '" + binary + " 2 >/dev/null & pid=$!; sleep 0.3; " +
                                   STACKSYM_CLI + " normalize --pid $pid 0x401000; kill $pid' 2>&1",
                               &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("0123456789abcdef0123"), std::string::npos) << out;
}

}  // namespace
}  // namespace stacksym
