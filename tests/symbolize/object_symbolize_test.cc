// Relocatable objects (.o): every instruction start of every text section, asked as
// llvm-symbolizer takes an object's address (an offset into the first text section, in header
// order, long enough to hold it), and answered as llvm-symbolizer 16 answers the same code
// once the object is linked (its "twin": `ld` alone on it, undefined symbols left at 0, so the
// linker applies the relocations and places every section):
// - the llvm-symbolizer drop-in: whole answers (names, inline chains, file:line:column) equal
//   to its own on the twin, and every frame's location equal to llvm-symbolizer 14's there;
// - `stacksym symbolize elf --output-style=llvm`: every frame's file:line:column (its names
//   are demangled as libiberty spells them), and the innermost one equal to llvm-symbolizer
//   16's on the object itself (which finds lines by section, but function names by offset
//   alone: docs/dwarf-differences.md);
// - eu-addr2line on the twin: the innermost file:line:column (gcc's objects: elfutils 0.188
//   finds no line in clang 14's line tables, linked or not).
// Fixtures: gcc and clang, -O0 and -O2, DWARF 4 and 5, C and C++ (COMDAT sections, inlining),
// -ffunction-sections, and -gz (relocations applied after decompression).
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"
#include "symbolize/narrow_options.h"
#include "test_util.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using testing::FixturePath;
using testing::Hex;
using testing::RunCommand;

const char* const kObjects[] = {
    "object_gcc_c_o0_d5.o",     "object_gcc_c_o2_d4.o",       "object_clang_c_o2_d5.o",
    "object_gcc_cxx_o2_d5.o",   "object_gcc_cxx_o0_d4.o",     "object_clang_cxx_o2_d4.o",
    "object_clang_cxx_o2_d5.o", "object_gcc_c_o2_sections.o", "object_clang_cxx_o2_sections.o",
    "object_gcc_cxx_o2_gz.o",   "object_clang_c_o2_gz.o",
};

bool HaveTool(const std::string& name) {
  int code = -1;
  RunCommand("command -v " + name + " >/dev/null 2>&1", &code);
  return code == 0;
}

std::string LlvmSymbolizer16() {
  for (const char* name : {"llvm-symbolizer-16", "/usr/lib/llvm-16/bin/llvm-symbolizer"}) {
    if (HaveTool(name)) return name;
  }
  return "";
}

struct Probe {
  std::string section;
  uint64_t offset;
  uint64_t twin_address;  // the same instruction in the linked twin
};

// The object's function symbols by name: section index and value (readelf, not the reader
// under test). Names defined twice are left out.
std::map<std::string, std::pair<uint32_t, uint64_t>> ObjectFunctions(const std::string& path) {
  std::istringstream lines(RunCommand("readelf -sW '" + path + "'"));
  std::map<std::string, std::pair<uint32_t, uint64_t>> functions;
  std::map<std::string, int> seen;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (type != "FUNC" || ndx.find_first_not_of("0123456789") != std::string::npos) continue;
    if (++seen[name] > 1) continue;
    functions[name] = {static_cast<uint32_t>(std::stoul(ndx)), std::stoull(value, nullptr, 16)};
  }
  for (const auto& [name, count] : seen) {
    if (count > 1) functions.erase(name);
  }
  return functions;
}

// Where each text section of the object went in the twin: a function symbol's address there
// less its value in the object.
std::map<uint32_t, uint64_t> TwinBases(const std::string& object, const std::string& twin) {
  std::map<uint32_t, uint64_t> bases;
  const auto functions = ObjectFunctions(object);
  for (const testing::NmSymbol& s : testing::RunNm(twin, "")) {
    auto it = functions.find(s.name);
    if (it != functions.end()) bases.emplace(it->second.first, s.address - it->second.second);
  }
  return bases;
}

// Every instruction start (objdump) of every text section that llvm-symbolizer's reading of
// an object's address reaches: those of a section whose offsets an earlier text section also
// holds stand for that earlier section's code.
// With `every_section`, every instruction start of every text section instead.
std::vector<Probe> Probes(const std::string& path, size_t* sections_reached,
                          bool every_section = false) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  if (!elf.ok()) return {};
  const std::map<uint32_t, uint64_t> bases = TwinBases(path, path + ".twin");
  // Instruction starts per section, from one objdump run.
  std::map<std::string, std::vector<uint64_t>> starts;
  {
    std::istringstream lines(
        RunCommand("objdump -d --no-show-raw-insn '" + path +
                   "' | awk '/^Disassembly of section / { s = $4; sub(\":$\", \"\", s) } "
                   "/^ +[0-9a-f]+:/ { sub(\":\", \"\", $1); print s, $1 }'"));
    std::string section, hex;
    while (lines >> section >> hex) starts[section].push_back(std::stoull(hex, nullptr, 16));
  }
  std::vector<Probe> probes;
  uint64_t shadowed = 0;  // offsets below this are an earlier text section's
  *sections_reached = 0;
  for (const ElfSection& s : (*elf)->sections()) {
    if ((s.flags & SHF_EXECINSTR) == 0 || s.type == SHT_NOBITS || s.size == 0) continue;
    auto base = bases.find(s.index);
    EXPECT_NE(base, bases.end()) << "no function of " << s.name << " found in the twin";
    EXPECT_FALSE(starts[std::string(s.name)].empty()) << s.name;
    size_t before = probes.size();
    for (uint64_t offset : starts[std::string(s.name)]) {
      if ((every_section || offset >= shadowed) && base != bases.end()) {
        probes.push_back({std::string(s.name), offset, base->second + offset});
      }
    }
    if (probes.size() > before) ++*sections_reached;
    shadowed = std::max(shadowed, s.size);
  }
  return probes;
}

// llvm-style answers: blocks of "function\nfile:line:column\n" lines, one block per address.
std::vector<std::vector<std::string>> Blocks(const std::string& text) {
  std::vector<std::vector<std::string>> blocks(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      if (!blocks.back().empty()) blocks.emplace_back();
      continue;
    }
    blocks.back().push_back(line);
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

// The location lines of a block (every second line).
std::vector<std::string> Locations(const std::vector<std::string>& block) {
  std::vector<std::string> locations;
  for (size_t i = 1; i < block.size(); i += 2) locations.push_back(block[i]);
  return locations;
}

class ObjectSymbolizeTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = FixturePath(GetParam());
    twin_ = path_ + ".twin";
    probes_ = Probes(path_, &sections_reached_);
    ASSERT_GT(probes_.size(), 100u);
    dir_ = ::testing::TempDir() + "/object-" + std::to_string(getpid());
    fs::create_directories(dir_);
    offsets_ = dir_ + "/offsets";
    twin_addresses_ = dir_ + "/twin";
    std::ofstream offsets(offsets_), twin(twin_addresses_);
    for (const Probe& p : probes_) {
      offsets << Hex(p.offset) << "\n";
      twin << Hex(p.twin_address) << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An llvm-symbolizer's answers on the twin.
  std::vector<std::vector<std::string>> OnTwin(const std::string& llvm) {
    return Blocks(RunCommand(llvm + " --inlines --obj='" + twin_ + "' < " + twin_addresses_));
  }

  std::string path_, twin_, dir_, offsets_, twin_addresses_;
  std::string llvm_ = LlvmSymbolizer16();
  std::vector<Probe> probes_;
  size_t sections_reached_ = 0;
};

// The drop-in answers the object as it answers the linked twin, whole; and as
// llvm-symbolizer 14 (its reference for CODE answers) answers the twin, up to the demangler:
// the drop-in spells names as libiberty does ("{lambda(int)#1}" for LLVM's "'lambda'(int)",
// docs/dwarf-differences.md), so there names are counted, locations compared.
TEST_P(ObjectSymbolizeTest, DropInAnswersAsOnTheLinkedTwin) {
  if (!HaveTool("llvm-symbolizer")) GTEST_SKIP() << "needs llvm-symbolizer (14)";
  const std::string dropin_path = dir_ + "/llvm-symbolizer";
  fs::create_symlink(STACKSYM_CLI, dropin_path);
  auto dropin = Blocks(RunCommand(dropin_path + " --inlines --obj='" + path_ + "' < " + offsets_));
  auto dropin_on_twin = OnTwin(dropin_path);
  auto theirs = OnTwin("llvm-symbolizer");
  ASSERT_EQ(dropin.size(), probes_.size());
  ASSERT_EQ(dropin_on_twin.size(), probes_.size());
  ASSERT_EQ(theirs.size(), probes_.size());
  size_t equal = 0, inlined = 0;
  for (size_t i = 0; i < probes_.size(); ++i) {
    SCOPED_TRACE(probes_[i].section + "+" + Hex(probes_[i].offset));
    EXPECT_EQ(dropin[i], dropin_on_twin[i]);
    EXPECT_EQ(Locations(dropin[i]), Locations(theirs[i]));
    equal += dropin[i] == theirs[i];
    inlined += theirs[i].size() > 2;
  }
  std::printf(
      "%s: drop-in on the object = drop-in on the twin at %zu addresses in %zu text "
      "sections (%zu with inlined frames); = llvm-symbolizer 14 on the twin, names too, "
      "at %zu\n",
      GetParam(), probes_.size(), sections_reached_, inlined, equal);
}

TEST_P(ObjectSymbolizeTest, SymbolizeElfLinesAreLlvmSymbolizers) {
  if (llvm_.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  auto ours =
      Blocks(RunCommand(std::string(STACKSYM_CLI) + " symbolize elf --output-style=llvm --file '" +
                        path_ + "' < " + offsets_));
  auto on_object = Blocks(RunCommand(llvm_ + " --inlines --obj='" + path_ + "' < " + offsets_));
  auto on_twin = OnTwin(llvm_);
  ASSERT_EQ(ours.size(), probes_.size());
  ASSERT_EQ(on_object.size(), probes_.size());
  ASSERT_EQ(on_twin.size(), probes_.size());
  size_t frames = 0;
  for (size_t i = 0; i < probes_.size(); ++i) {
    SCOPED_TRACE(probes_[i].section + "+" + Hex(probes_[i].offset));
    ASSERT_GE(ours[i].size(), 2u);
    ASSERT_GE(on_object[i].size(), 2u);
    EXPECT_EQ(ours[i][1], on_object[i][1]);  // the innermost file:line:column
    EXPECT_EQ(Locations(ours[i]), Locations(on_twin[i]));
    frames += ours[i].size() / 2;
  }
  std::printf(
      "%s: symbolize elf's %zu addresses (%zu frames) have llvm-symbolizer-16's "
      "locations\n",
      GetParam(), probes_.size(), frames);
}

// eu-addr2line -f on the twin: "function\nfile:line[:column]" per address.
TEST_P(ObjectSymbolizeTest, InnermostLinesAreEuAddr2linesOnTheLinkedTwin) {
  if (!HaveTool("eu-addr2line")) GTEST_SKIP() << "needs eu-addr2line (elfutils)";
  if (std::string(GetParam()).find("clang") != std::string::npos) {
    GTEST_SKIP() << "eu-addr2line 0.188 finds no line in clang 14's line tables";
  }
  std::istringstream lines(RunCommand("eu-addr2line -e '" + twin_ + "' < " + twin_addresses_));
  SymbolizeOptions options;
  options.debug_dirs = {};
  auto symbolizer = ElfSymbolizer::Open(path_, options);
  ASSERT_TRUE(symbolizer.ok()) << symbolizer.error().ToString();
  std::vector<uint64_t> offsets;
  for (const Probe& p : probes_) offsets.push_back(p.offset);
  std::vector<SymbolizedAddress> ours =
      (*symbolizer)->SymbolizeBatch(offsets, AddressKind::kVirtual);
  size_t equal = 0;
  for (size_t i = 0; i < probes_.size(); ++i) {
    SCOPED_TRACE(probes_[i].section + "+" + Hex(probes_[i].offset));
    std::string theirs;
    ASSERT_TRUE(std::getline(lines, theirs));
    ASSERT_FALSE(ours[i].frames.empty());
    const SourceFrame& f = ours[i].frames.front();
    std::string location = f.file + ":" + std::to_string(f.line);
    if (f.column != 0) location += ":" + std::to_string(f.column);
    EXPECT_EQ(location, theirs);
    equal += location == theirs;
  }
  std::printf("%s: innermost file:line:column equal to eu-addr2line on the twin at %zu of %zu\n",
              GetParam(), equal, probes_.size());
}

// JSON answers carry addresses (the input, each frame's StartAddress): on the object they are
// offsets into the section, the twin's less where that section went.
TEST_P(ObjectSymbolizeTest, DropInJsonAddressesAreSectionOffsets) {
  const std::string dropin_path = dir_ + "/llvm-symbolizer";
  fs::create_symlink(STACKSYM_CLI, dropin_path);
  const std::string json = " --output-style=JSON --inlines --obj='";
  std::istringstream object(RunCommand(dropin_path + json + path_ + "' < " + offsets_));
  std::istringstream twin(RunCommand(dropin_path + json + twin_ + "' < " + twin_addresses_));
  const std::regex address("\"(Address|StartAddress)\":\"0x([0-9a-f]+)\"");
  size_t starts = 0;
  for (const Probe& p : probes_) {
    SCOPED_TRACE(p.section + "+" + Hex(p.offset));
    std::string ours, theirs, rebased;
    ASSERT_TRUE(std::getline(object, ours));
    ASSERT_TRUE(std::getline(twin, theirs));
    const uint64_t base = p.twin_address - p.offset;
    size_t last = 0;
    for (std::sregex_iterator it(theirs.begin(), theirs.end(), address), end; it != end; ++it) {
      rebased += theirs.substr(last, it->position() - last);
      rebased += "\"" + (*it)[1].str() + "\":\"" +
                 Hex(std::stoull((*it)[2].str(), nullptr, 16) - base) + "\"";
      last = it->position() + it->length();
      starts += (*it)[1] == "StartAddress";
    }
    rebased += theirs.substr(last);
    // The module's name differs: the twin's path has ".twin" after the object's.
    const std::string twin_name = fs::path(twin_).filename().string();
    const std::string object_name = fs::path(path_).filename().string();
    rebased.replace(rebased.find(twin_name), twin_name.size(), object_name);
    EXPECT_EQ(ours, rebased);
  }
  EXPECT_GT(starts, probes_.size());
}

// Below the symbolizer, whose addresses reach only the first text section long enough for
// them: the DWARF of every text section, at the address ElfFile placed it, has the frames
// (and every frame's file:line:column) llvm-symbolizer 16 gives its code in the twin.
TEST_P(ObjectSymbolizeTest, EveryTextSectionsDwarfIsAsInTheLinkedTwin) {
  if (llvm_.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  size_t sections = 0;
  const std::vector<Probe> probes = Probes(path_, &sections, /*every_section=*/true);
  auto elf = ElfFile::Open(path_);
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  SymbolizeOptions options;
  options.debug_dirs = {};
  auto source = dwarf::DebugInfoSource::Open(*elf, symbolize::ToDwarfOptions(options));
  ASSERT_TRUE(source.ok() && *source) << (source.ok() ? "no DWARF" : source.error().ToString());
  std::map<std::string, uint64_t> placed;
  for (const ElfSection& s : (*elf)->sections()) placed[std::string(s.name)] = s.addr;
  const std::string twin_list = dir_ + "/every";
  {
    std::ofstream out(twin_list);
    for (const Probe& p : probes) out << Hex(p.twin_address) << "\n";
  }
  auto theirs = Blocks(RunCommand(llvm_ + " --inlines --obj='" + twin_ + "' < " + twin_list));
  ASSERT_EQ(theirs.size(), probes.size());
  size_t frames = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    SCOPED_TRACE(probes[i].section + "+" + Hex(probes[i].offset));
    std::vector<SourceFrame> chain;
    (*source)->Lookup(placed[probes[i].section] + probes[i].offset, &chain);
    std::vector<std::string> locations;
    for (const SourceFrame& f : chain) {
      locations.push_back((f.file.empty() ? "??" : f.file) + ":" + std::to_string(f.line) + ":" +
                          std::to_string(f.column));
    }
    if (locations.empty()) locations.push_back("??:0:0");  // no DWARF: llvm-symbolizer's "??"
    EXPECT_EQ(locations, Locations(theirs[i]));
    frames += chain.size();
  }
  std::printf(
      "%s: every text section's DWARF (%zu sections, %zu addresses, %zu frames) has "
      "llvm-symbolizer-16's locations on the twin\n",
      GetParam(), sections, probes.size(), frames);
}

INSTANTIATE_TEST_SUITE_P(Objects, ObjectSymbolizeTest, ::testing::ValuesIn(kObjects),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(7, name.size() - 9);  // "object_" ... ".o"
                           return name;
                         });

// -gz: the debug sections are compressed in the object (so their relocations are applied to
// the decompressed bytes, which the differential tests above check).
TEST(ObjectFixtureTest, GzObjectsHaveCompressedDebugSections) {
  for (const char* name : {"object_gcc_cxx_o2_gz.o", "object_clang_c_o2_gz.o"}) {
    auto elf = ElfFile::Open(FixturePath(name));
    ASSERT_TRUE(elf.ok()) << elf.error().ToString();
    const ElfSection* info = (*elf)->FindSection(".debug_info");
    ASSERT_NE(info, nullptr) << name;
    EXPECT_NE(info->flags & SHF_COMPRESSED, 0u) << name;
    EXPECT_NE((*elf)->FindSection(".rela.debug_info"), nullptr) << name;
  }
}

}  // namespace
}  // namespace stacksym
