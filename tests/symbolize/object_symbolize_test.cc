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

// The object's symbols as readelf lists them: type, value (an offset into its section),
// size, section index.
struct ObjectSymbol {
  std::string type;
  uint64_t value, size;
  uint32_t section;
};
std::vector<ObjectSymbol> ObjectSymbols(const std::string& path) {
  std::vector<ObjectSymbol> symbols;
  std::istringstream lines(RunCommand("readelf -sW '" + path + "'"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx)) continue;
    if (ndx.find_first_not_of("0123456789") != std::string::npos) continue;
    symbols.push_back({type, std::stoull(value, nullptr, 16), std::stoull(size, nullptr, 0),
                       static_cast<uint32_t>(std::stoul(ndx))});
  }
  return symbols;
}

// Offsets that name no section (elf/object_layout.h): DATA requests (at, inside and just
// past every data symbol), and code addresses past every text section. llvm-symbolizer 16
// looks them up in every section at that offset, and so does the drop-in: whole answers equal
// (names not demangled: the drop-in spells them as libiberty does).
TEST_P(ObjectSymbolizeTest, DropInAnswersOffsetsInNoSectionAsLlvmSymbolizer16) {
  if (llvm_.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  auto elf = ElfFile::Open(path_);
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  uint64_t text_end = 0;
  for (const ElfSection& s : (*elf)->sections()) {
    if ((s.flags & SHF_EXECINSTR) != 0) text_end = std::max(text_end, s.size);
  }
  std::vector<std::string> requests;
  size_t data = 0;
  for (const ObjectSymbol& s : ObjectSymbols(path_)) {
    if (s.type != "OBJECT") continue;
    ++data;
    for (uint64_t at : {s.value, s.value + s.size / 2, s.value + s.size})
      requests.push_back("DATA " + Hex(at));
  }
  for (uint64_t past : {0, 1, 7, 64}) requests.push_back("CODE " + Hex(text_end + past));
  const std::string list = dir_ + "/nosection";
  {
    std::ofstream out(list);
    for (const std::string& r : requests) out << r << "\n";
  }
  const std::string dropin_path = dir_ + "/llvm-symbolizer";
  fs::create_symlink(STACKSYM_CLI, dropin_path);
  const std::string args = " --no-demangle --obj='" + path_ + "' < " + list;
  auto ours = Blocks(RunCommand(dropin_path + args));
  auto theirs = Blocks(RunCommand(llvm_ + args));
  ASSERT_EQ(ours.size(), requests.size());
  ASSERT_EQ(theirs.size(), requests.size());
  size_t named = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(ours[i], theirs[i]) << requests[i];
    named += theirs[i][0] != "??";
  }
  std::printf(
      "%s: %zu DATA and CODE requests in no section (%zu data symbols, %zu named) "
      "answered as llvm-symbolizer-16 answers them\n",
      GetParam(), requests.size(), data, named);
}

INSTANTIATE_TEST_SUITE_P(Objects, ObjectSymbolizeTest, ::testing::ValuesIn(kObjects),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(7, name.size() - 9);  // "object_" ... ".o"
                           return name;
                         });

// AArch64 objects built with clang -O3 (DWARF 4's .debug_loc, DWARF 5's DW_FORM_loclistx):
// the frame base is DW_OP_reg29 and a local's location list has DW_OP_breg29 N entries, which
// llvm-symbolizer 16 reads as frame offset N. FRAME at every instruction, and DATA at every
// byte of every data symbol (offsets into .data, .bss, .rodata: no section named, the
// declarations found in any), equal to its answers.
TEST(ObjectFrameTest, LocationListFramesAndDataAreLlvmSymbolizer16s) {
  const std::string llvm = LlvmSymbolizer16();
  if (llvm.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  const std::string dir = ::testing::TempDir() + "/object-frames-" + std::to_string(getpid());
  fs::create_directories(dir);
  const std::string dropin_path = dir + "/llvm-symbolizer";
  fs::create_symlink(STACKSYM_CLI, dropin_path);
  for (const char* name : {"object_aarch64_frames_d4.o", "object_aarch64_frames_d5.o"}) {
    SCOPED_TRACE(name);
    const std::string path = FixturePath(name);
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf.ok()) << elf.error().ToString();
    const ElfSection* text = (*elf)->FindSection(".text");
    ASSERT_NE(text, nullptr);
    const std::string list = dir + "/frames";
    {
      std::ofstream out(list);
      for (uint64_t a = 0; a < text->size; a += 4) out << "FRAME " << Hex(a) << "\n";
      for (const ObjectSymbol& s : ObjectSymbols(path)) {
        if (s.type != "OBJECT") continue;
        for (uint64_t a = s.value; a <= s.value + s.size; ++a) out << "DATA " << Hex(a) << "\n";
      }
    }
    const std::string args = " --obj='" + path + "' < " + list;
    const std::string ours = RunCommand(dropin_path + args);
    const std::string theirs = RunCommand(llvm + args);
    EXPECT_EQ(ours, theirs);
    // Offsets read from DW_OP_breg29 entries of location lists (and DW_OP_fbreg).
    size_t offsets = 0;
    for (size_t at = theirs.find("\n-4 4 ??\n"); at != std::string::npos;
         at = theirs.find("\n-4 4 ??\n", at + 1))
      ++offsets;
    EXPECT_GE(offsets, 5u);
    // Declarations of the globals, found in the object's DWARF: at offset 0 of .data, .bss and
    // .rodata alike the last variable DIE (table); past its 32 bytes none (LLVM's one
    // variable per start: zeroes, longer, is not reached).
    for (const char* decl : {"frame_locals.c:8\n", "\n??:?\n"})
      EXPECT_NE(theirs.find(decl), std::string::npos) << decl;
    std::printf(
        "%s: %zu FRAME answers (%zu locals at frame offset -4) equal to "
        "llvm-symbolizer-16's\n",
        name, static_cast<size_t>(text->size / 4), offsets);
  }
  fs::remove_all(dir);
}

// FRAME answers on the objects with one text section (with several, llvm-symbolizer 16 takes
// the subprogram of whichever section's code lies at the offset; the drop-in that of the
// section the offset was read in): at every instruction start, equal to llvm-symbolizer 16's.
TEST(ObjectFrameTest, FramesOnObjectsWithOneTextSectionAreLlvmSymbolizer16s) {
  const std::string llvm = LlvmSymbolizer16();
  if (llvm.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  const std::string dir = ::testing::TempDir() + "/object-x86-frames-" + std::to_string(getpid());
  fs::create_directories(dir);
  const std::string dropin_path = dir + "/llvm-symbolizer";
  fs::create_symlink(STACKSYM_CLI, dropin_path);
  size_t objects = 0;
  for (const char* name : kObjects) {
    SCOPED_TRACE(name);
    const std::string path = FixturePath(name);
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf.ok()) << elf.error().ToString();
    size_t text_sections = 0;
    for (const ElfSection& s : (*elf)->sections())
      text_sections += (s.flags & SHF_EXECINSTR) != 0 && s.size != 0;
    if (text_sections != 1) continue;
    ++objects;
    size_t sections = 0;
    const std::vector<Probe> probes = Probes(path, &sections);
    ASSERT_GT(probes.size(), 100u);
    const std::string list = dir + "/frames";
    {
      std::ofstream out(list);
      for (const Probe& p : probes) out << "FRAME " << Hex(p.offset) << "\n";
    }
    const std::string args = " --obj='" + path + "' < " + list;
    auto ours = Blocks(RunCommand(dropin_path + args));
    auto theirs = Blocks(RunCommand(llvm + args));
    ASSERT_EQ(ours.size(), probes.size());
    ASSERT_EQ(theirs.size(), probes.size());
    size_t locals = 0;
    for (size_t i = 0; i < probes.size(); ++i) {
      EXPECT_EQ(ours[i], theirs[i]) << "FRAME " << Hex(probes[i].offset);
      locals += theirs[i].size() / 4;
    }
    EXPECT_GT(locals, probes.size());
    std::printf("%s: %zu FRAME answers (%zu locals) equal to llvm-symbolizer-16's\n", name,
                probes.size(), locals);
  }
  EXPECT_GE(objects, 3u);
  fs::remove_all(dir);
}

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

// A kernel module (kmod.ko: two objects linked by `ld -r --build-id`): addresses relative to
// its .text, as the kernel's module frames are, get llvm-symbolizer 16's functions, inline
// chains and file:line:column on every byte of .text; and so does the module stripped by
// `eu-strip -f`, with its debug file found by build ID in a debug directory or through its
// .gnu_debuglink beside it.
TEST(KernelModuleTest, TextOffsetsAnswerAsLlvmSymbolizer16WithTheDebugFileApartToo) {
  const std::string llvm = LlvmSymbolizer16();
  if (llvm.empty()) GTEST_SKIP() << "needs llvm-symbolizer-16 (Debian's llvm-16)";
  const std::string module = FixturePath("kmod.ko");
  auto elf = ElfFile::Open(module);
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  ASSERT_EQ((*elf)->type(), ET_REL);
  const ElfSection* text = (*elf)->FindSection(".text");
  ASSERT_NE(text, nullptr);
  ASSERT_GT(text->size, 16u);
  const std::string hex = (*elf)->build_id_hex();
  ASSERT_FALSE(hex.empty()) << "ld -r --build-id wrote no build ID";

  const std::string dir = ::testing::TempDir() + "/kmod-" + std::to_string(getpid());
  fs::create_directories(dir + "/alone");
  fs::create_directories(dir + "/beside");
  fs::create_directories(dir + "/debug/.build-id/" + hex.substr(0, 2));
  const std::string stripped = FixturePath("kmod_stripped.ko");
  const std::string debug = FixturePath("kmod_stripped.ko.debug");
  fs::copy_file(stripped, dir + "/alone/kmod.ko");
  fs::copy_file(debug,
                dir + "/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
  fs::copy_file(stripped, dir + "/beside/kmod_stripped.ko");
  fs::copy_file(debug, dir + "/beside/kmod_stripped.ko.debug");
  const std::string offsets = dir + "/offsets";
  {
    std::ofstream out(offsets);
    for (uint64_t o = 0; o < text->size; ++o) out << Hex(o) << "\n";
  }
  auto ours = [&](const std::string& file, const std::string& extra) {
    return Blocks(RunCommand(std::string(STACKSYM_CLI) +
                             " symbolize elf --output-style=llvm --no-default-debug-dir " + extra +
                             " --file '" + file + "' < " + offsets));
  };
  auto theirs = Blocks(RunCommand(llvm + " --inlines --obj='" + module + "' < " + offsets));
  auto full = ours(module, "");
  auto by_build_id = ours(dir + "/alone/kmod.ko", "--debug-dir '" + dir + "/debug'");
  auto by_debuglink = ours(dir + "/beside/kmod_stripped.ko", "");
  ASSERT_EQ(theirs.size(), text->size);
  ASSERT_EQ(full.size(), text->size);
  size_t inlined = 0, named = 0;
  for (size_t o = 0; o < text->size; ++o) {
    SCOPED_TRACE(".text+" + Hex(o));
    EXPECT_EQ(full[o], theirs[o]);
    EXPECT_EQ(by_build_id[o], full[o]);
    EXPECT_EQ(by_debuglink[o], full[o]);
    inlined += full[o].size() > 2;
    named += !full[o].empty() && full[o][0] != "??";
  }
  EXPECT_GT(named * 4, text->size * 3);  // all but the padding between functions
  EXPECT_GT(inlined, 0u) << "no inlined frame: the fixture no longer inlines kmod_scale";
  std::printf(
      "kmod.ko: %zu offsets of .text as llvm-symbolizer 16 (%zu with inlined frames), "
      "alike stripped with the debug file by build ID and by debuglink\n",
      static_cast<size_t>(text->size), inlined);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stacksym
