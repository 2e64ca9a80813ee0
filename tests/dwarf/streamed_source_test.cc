// DebugInfoSource on a .debug_info that is decompressed in the background while a batch is
// parsed (forced on a small zlib fixture): a stream that turns out corrupt or shorter than
// declared half-way makes the source answer nothing — each address then falls back to the
// symbol table — and says why; nothing crashes or hangs, whichever point the batch reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "stacksym/elf.h"
#include "symbolizer_reference.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_zlib";

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A copy of the fixture with `mutate` applied to the bytes of its compressed .debug_info
// (after the 24-byte Elf64_Chdr).
template <class Mutate>
std::string MutatedCopy(const std::string& name, Mutate mutate) {
  auto elf = ElfFile::Open(kFixture);
  EXPECT_TRUE(elf);
  const ElfSection* info = (*elf)->FindSection(".debug_info");
  EXPECT_NE(info, nullptr);
  std::vector<char> bytes = ReadAll(kFixture);
  mutate(bytes, static_cast<size_t>(info->offset), static_cast<size_t>(info->size));
  std::string path = std::string(STACKSYM_BINARY_DIR) + "/streamed_source_test_" + name;
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// `why`: one of the texts the reason may contain ('|' between them).
void ExpectNoAnswersAndAReason(const std::string& path, const std::string& why) {
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  dwarf::DebugInfoSource::OpenTuning tuning;
  tuning.stream_info_from = 0;
  auto source = dwarf::DebugInfoSource::Open(*elf, dwarf::DwarfOptions{}, tuning);
  ASSERT_TRUE(source && *source) << "Open must return before the stream is checked";
  std::vector<uint64_t> addresses = testing::FunctionAddresses(kFixture, 3000);
  ASSERT_GT(addresses.size(), 100u);
  std::vector<std::vector<SourceFrame>> frames(addresses.size());
  (*source)->LookupBatch(
      addresses, [&](size_t i) { return &frames[i]; }, 2);
  for (const auto& f : frames) EXPECT_TRUE(f.empty());
  std::vector<SourceFrame> one;
  EXPECT_FALSE((*source)->Lookup(addresses[0], &one));
  const std::vector<Error>& errors = (*source)->units().unit_errors();
  ASSERT_FALSE(errors.empty());
  std::string reason = errors.front().ToString();
  bool named = false;
  for (size_t from = 0; from <= why.size();) {
    size_t bar = std::min(why.find('|', from), why.size());
    named |= reason.find(why.substr(from, bar - from)) != std::string::npos;
    from = bar + 1;
  }
  EXPECT_TRUE(named) << reason << " (expected: " << why << ")";
}

TEST(StreamedDebugInfo, CorruptHalfWayAnswersNothingAndSaysWhy) {
  std::string path = MutatedCopy("corrupt", [](std::vector<char>& b, size_t at, size_t size) {
    for (size_t i = at + size / 2; i < at + size / 2 + 64 && i < at + size; ++i) b[i] ^= 0x5a;
  });
  // Garbled deflate data fails its checks, or (depending on the bytes, which hold the build
  // directory's path) decodes into more or less than the header declares.
  ExpectNoAnswersAndAReason(path, "zlib stream is corrupt|not the declared|more than the declared");
  std::filesystem::remove(path);
}

TEST(StreamedDebugInfo, DeclaredSizeTooLargeAnswersNothingAndSaysWhy) {
  std::string path = MutatedCopy("too_large", [](std::vector<char>& b, size_t at, size_t) {
    uint64_t declared;
    std::memcpy(&declared, &b[at + 8], 8);  // Elf64_Chdr.ch_size
    declared += 4096;
    std::memcpy(&b[at + 8], &declared, 8);
  });
  ExpectNoAnswersAndAReason(path, "not the declared");
  std::filesystem::remove(path);
}

// The fixture's DWARF twice: decompressed in the background while it is parsed (as a big
// compressed .debug_info is), and decompressed at once.
std::pair<std::unique_ptr<dwarf::DebugInfoSource>, std::unique_ptr<dwarf::DebugInfoSource>>
OpenStreamedAndDirect() {
  auto elf_streamed = ElfFile::Open(kFixture);
  auto elf_direct = ElfFile::Open(kFixture);
  if (!elf_streamed || !elf_direct) return {};
  dwarf::DebugInfoSource::OpenTuning streamed;
  streamed.stream_info_from = 0;
  dwarf::DebugInfoSource::OpenTuning direct;
  direct.stream_info_from = ~uint64_t{0};
  auto a = dwarf::DebugInfoSource::Open(*elf_streamed, dwarf::DwarfOptions{}, streamed);
  auto b = dwarf::DebugInfoSource::Open(*elf_direct, dwarf::DwarfOptions{}, direct);
  if (!a || !b) return {};
  return {std::move(*a), std::move(*b)};
}

TEST(StreamedDebugInfo, IntactStreamAnswersLikeTheSynchronousPath) {
  auto [a, b] = OpenStreamedAndDirect();
  ASSERT_TRUE(a && b);
  std::vector<uint64_t> addresses = testing::FunctionAddresses(kFixture, 3000);
  std::vector<std::vector<SourceFrame>> fa(addresses.size()), fb(addresses.size());
  a->LookupBatch(
      addresses, [&](size_t i) { return &fa[i]; }, 2);
  b->LookupBatch(
      addresses, [&](size_t i) { return &fb[i]; }, 2);
  EXPECT_GT(a->units().prebuilt_unit_count(), 0u);
  EXPECT_EQ(b->units().prebuilt_unit_count(), 0u);
  for (size_t i = 0; i < addresses.size(); ++i) {
    ASSERT_EQ(fa[i].size(), fb[i].size()) << std::hex << addresses[i];
    for (size_t k = 0; k < fa[i].size(); ++k) {
      EXPECT_EQ(fa[i][k].function, fb[i][k].function);
      EXPECT_EQ(fa[i][k].file, fb[i][k].file);
      EXPECT_EQ(fa[i][k].line, fb[i][k].line);
      EXPECT_EQ(fa[i][k].column, fb[i][k].column);
    }
  }
}

// The index build's way (PrebuildEveryUnit while the section streams in, then ExportUnit of
// every unit): the same tables, names, starts and paths as the synchronous source exports.
TEST(StreamedDebugInfo, EveryUnitPrebuiltExportsLikeTheSynchronousPath) {
  auto [a, b] = OpenStreamedAndDirect();
  ASSERT_TRUE(a && b);
  a->units().PrebuildEveryUnit(2);
  b->units().PrebuildEveryUnit(2);  // loaded already: nothing to do
  ASSERT_EQ(a->units().unit_count(), b->units().unit_count());
  EXPECT_GT(a->units().prebuilt_unit_count(), 0u);
  EXPECT_EQ(b->units().prebuilt_unit_count(), 0u);
  size_t nodes = 0;
  for (size_t i = 0; i < a->units().unit_count(); ++i) {
    dwarf::UnitTables ta = a->units().ExportUnit(i), tb = b->units().ExportUnit(i);
    ASSERT_EQ(ta.ok, tb.ok) << "unit " << i;
    ASSERT_EQ(ta.segments.size(), tb.segments.size()) << "unit " << i;
    for (size_t k = 0; k < ta.segments.size(); ++k) {
      EXPECT_EQ(ta.segments[k].start, tb.segments[k].start);
      EXPECT_EQ(ta.segments[k].id, tb.segments[k].id);
    }
    ASSERT_EQ(ta.nodes.size(), tb.nodes.size()) << "unit " << i;
    for (size_t n = 0; n < ta.nodes.size(); ++n) {
      EXPECT_EQ(ta.nodes[n].parent, tb.nodes[n].parent);
      EXPECT_EQ(ta.nodes[n].inlined, tb.nodes[n].inlined);
      EXPECT_EQ(ta.nodes[n].call_file, tb.nodes[n].call_file);
      EXPECT_EQ(ta.nodes[n].call_line, tb.nodes[n].call_line);
      EXPECT_EQ(ta.raw_names[n], tb.raw_names[n]);
      EXPECT_EQ(ta.pretty_names[n], tb.pretty_names[n]);
      EXPECT_EQ(ta.starts[n].file, tb.starts[n].file);
      EXPECT_EQ(ta.starts[n].line, tb.starts[n].line);
    }
    nodes += ta.nodes.size();
    ASSERT_EQ(ta.line == nullptr, tb.line == nullptr);
    if (ta.line != nullptr) {
      EXPECT_EQ(ta.line->rows().size(), tb.line->rows().size());
    }
    EXPECT_EQ(ta.paths, tb.paths);
  }
  EXPECT_GT(nodes, 100u);
}

// An index build frees each unit's function table once encoded (ReleaseUnitFunctions); the
// source must still answer every address as before (rebuilding the tables it needs), and
// export the same tables again.
TEST(StreamedDebugInfo, ReleasedUnitsAnswerAndExportAsBefore) {
  auto [a, b] = OpenStreamedAndDirect();
  ASSERT_TRUE(a && b);
  a->units().PrebuildEveryUnit(2);
  std::vector<size_t> node_counts;
  for (size_t i = 0; i < a->units().unit_count(); ++i) {
    node_counts.push_back(a->units().ExportUnit(i).nodes.size());
    a->units().ReleaseUnitFunctions(i);
  }
  a->units().ReleaseUnitFunctions(a->units().unit_count());  // past the last: nothing
  std::vector<uint64_t> addresses = testing::FunctionAddresses(kFixture, 3000);
  ASSERT_GT(addresses.size(), 100u);
  std::vector<std::vector<SourceFrame>> fa(addresses.size()), fb(addresses.size());
  a->LookupBatch(
      addresses, [&](size_t i) { return &fa[i]; }, 2);
  b->LookupBatch(
      addresses, [&](size_t i) { return &fb[i]; }, 2);
  size_t frames = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    ASSERT_EQ(fa[i].size(), fb[i].size()) << std::hex << addresses[i];
    frames += fa[i].size();
    for (size_t k = 0; k < fa[i].size(); ++k) {
      EXPECT_EQ(fa[i][k].function, fb[i][k].function);
      EXPECT_EQ(fa[i][k].file, fb[i][k].file);
      EXPECT_EQ(fa[i][k].line, fb[i][k].line);
      EXPECT_EQ(fa[i][k].column, fb[i][k].column);
    }
  }
  EXPECT_GT(frames, addresses.size() / 2);
  for (size_t i = 0; i < a->units().unit_count(); ++i) {
    a->units().ReleaseUnitFunctions(i);
    dwarf::UnitTables again = a->units().ExportUnit(i), direct = b->units().ExportUnit(i);
    EXPECT_EQ(again.nodes.size(), node_counts[i]) << "unit " << i;
    EXPECT_EQ(again.nodes.size(), direct.nodes.size()) << "unit " << i;
    EXPECT_EQ(again.segments.size(), direct.segments.size()) << "unit " << i;
    EXPECT_EQ(again.pretty_names, direct.pretty_names) << "unit " << i;
  }
}

// An inlined instance of a function its unit has named already is named from what the
// function-table walk saw of its DIE, without reading the DIE again; with start addresses
// asked for, every DIE is read. Both must give every frame the same name, start, call-site
// discriminator and location: on gcc's DWARF, and on clang's with -fdebug-info-for-profiling
// (inlined call sites with discriminators).
TEST(StreamedDebugInfo, InstancesNamedFromTheWalkAsFromTheirDies) {
  const std::string profiling = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_clang_cxx_o2_profiling";
  for (const std::string& path : {kFixture, profiling}) {
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf) << path;
    dwarf::DwarfOptions shortcut, dies;
    dies.start_addresses = true;
    auto a = dwarf::DebugInfoSource::Open(*elf, shortcut);
    auto b = dwarf::DebugInfoSource::Open(*elf, dies);
    ASSERT_TRUE(a && *a && b && *b);
    std::vector<uint64_t> addresses = testing::FunctionAddresses(path, 3000);
    ASSERT_GT(addresses.size(), 100u) << path;
    std::vector<std::vector<SourceFrame>> fa(addresses.size()), fb(addresses.size());
    (*a)->LookupBatch(
        addresses, [&](size_t i) { return &fa[i]; }, 2);
    (*b)->LookupBatch(
        addresses, [&](size_t i) { return &fb[i]; }, 2);
    size_t inlined = 0, call_discriminators = 0;
    for (size_t i = 0; i < addresses.size(); ++i) {
      ASSERT_EQ(fa[i].size(), fb[i].size()) << path << " " << std::hex << addresses[i];
      for (size_t k = 0; k < fa[i].size(); ++k) {
        const SourceFrame &x = fa[i][k], &y = fb[i][k];
        EXPECT_EQ(x.function, y.function) << path << " " << std::hex << addresses[i];
        EXPECT_EQ(x.raw_function, y.raw_function);
        EXPECT_EQ(x.start_file, y.start_file);
        EXPECT_EQ(x.start_line, y.start_line);
        EXPECT_EQ(x.discriminator, y.discriminator) << path << " " << std::hex << addresses[i];
        EXPECT_EQ(x.file, y.file);
        EXPECT_EQ(x.line, y.line);
        EXPECT_FALSE(x.has_start_address);
        EXPECT_EQ(x.start_address, 0u);
        inlined += x.inlined;
        // An inlined frame's caller (the next frame) carries the call site's discriminator.
        if (k > 0 && fa[i][k - 1].inlined && x.discriminator != 0) ++call_discriminators;
      }
    }
    EXPECT_GT(inlined, 100u) << path << " should inline";
    if (path == profiling) {
      EXPECT_GT(call_discriminators, 10u) << "no call-site discriminators";
    }
  }
}

// A stream that breaks half-way while every unit is being prebuilt: no unit answers, the
// source says why, and nothing crashes or hangs.
TEST(StreamedDebugInfo, CorruptWhileEveryUnitIsPrebuiltExportsNothing) {
  std::string path = MutatedCopy("corrupt_every", [](std::vector<char>& b, size_t at, size_t size) {
    for (size_t i = at + size / 2; i < at + size / 2 + 64 && i < at + size; ++i) b[i] ^= 0x5a;
  });
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  dwarf::DebugInfoSource::OpenTuning tuning;
  tuning.stream_info_from = 0;
  auto source = dwarf::DebugInfoSource::Open(*elf, dwarf::DwarfOptions{}, tuning);
  ASSERT_TRUE(source && *source);
  (*source)->units().PrebuildEveryUnit(2);
  for (size_t i = 0; i < (*source)->units().unit_count(); ++i)
    EXPECT_FALSE((*source)->units().ExportUnit(i).ok);
  EXPECT_FALSE((*source)->units().unit_errors().empty());
  std::filesystem::remove(path);
}

// Once an index build has exported every unit it gives back the sections only the export
// read (ReleaseExportedSections) -- of a separate, compressed debug file the source opened
// itself: everything exported stays readable (names that lay in .debug_info itself were
// copied), the debug file's memory goes, and the source is retired. DWARF inside the binary,
// which the symbolizer may be reading too, is left alone and still answers.
TEST(ReleaseExportedSections, GivesBackOnlyTheSectionsOfItsOwnDebugFile) {
  const std::string dbglink = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_dbglink";
  auto elf = ElfFile::Open(dbglink);
  ASSERT_TRUE(elf) << elf.error().ToString();
  auto opened = dwarf::DebugInfoSource::Open(*elf, dwarf::DwarfOptions{});
  ASSERT_TRUE(opened && *opened);
  dwarf::DebugInfoSource& source = **opened;
  ASSERT_NE(source.path(), dbglink) << "the fixture's DWARF is in its separate debug file";
  struct Copy {
    std::vector<std::string> raw, pretty, start_files, paths;
  };
  std::vector<dwarf::UnitTables> tables;
  std::vector<Copy> copies;
  for (size_t i = 0; i < source.units().unit_count(); ++i) {
    tables.push_back(source.units().ExportUnit(i));
    const dwarf::UnitTables& t = tables.back();
    Copy& c = copies.emplace_back();
    c.raw.assign(t.raw_names.begin(), t.raw_names.end());
    c.pretty.assign(t.pretty_names.begin(), t.pretty_names.end());
    for (const auto& start : t.starts) c.start_files.emplace_back(start.file);
    c.paths.assign(t.paths.begin(), t.paths.end());
  }
  ASSERT_GT(tables.size(), 1u);
  const size_t held = source.file_heap_bytes();
  ASSERT_GT(held, 0u) << "the debug file's sections are compressed";
  EXPECT_TRUE(source.units().ReleaseExportedSections());
  EXPECT_TRUE(source.retired());
  EXPECT_LT(source.file_heap_bytes(), held / 2) << ".debug_info and .debug_line are given back";
  size_t names = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const dwarf::UnitTables& t = tables[i];
    ASSERT_EQ(t.raw_names.size(), copies[i].raw.size());
    for (size_t n = 0; n < t.raw_names.size(); ++n) {
      EXPECT_EQ(t.raw_names[n], copies[i].raw[n]) << "unit " << i << " node " << n;
      EXPECT_EQ(t.pretty_names[n], copies[i].pretty[n]) << "unit " << i << " node " << n;
      EXPECT_EQ(t.starts[n].file, copies[i].start_files[n]) << "unit " << i << " node " << n;
      names += !t.raw_names[n].empty();
    }
    for (size_t f = 0; f < t.paths.size(); ++f) EXPECT_EQ(t.paths[f], copies[i].paths[f]);
    if (t.line != nullptr) {
      EXPECT_GT(t.line->rows().size(), 0u);
    }
  }
  EXPECT_GT(names, 100u);
  // Once what was built is written, the strings go too (ReleaseStrings).
  const size_t before_strings = source.file_heap_bytes();
  EXPECT_TRUE(source.files().ReleaseStrings());
  EXPECT_LT(source.file_heap_bytes(), before_strings) << ".debug_str is given back";

  // DWARF in the binary: shared with whoever else reads the binary's sections.
  auto in_binary = ElfFile::Open(kFixture);
  ASSERT_TRUE(in_binary);
  auto whole = dwarf::DebugInfoSource::Open(*in_binary, dwarf::DwarfOptions{});
  ASSERT_TRUE(whole && *whole);
  for (size_t i = 0; i < (*whole)->units().unit_count(); ++i) (*whole)->units().ExportUnit(i);
  EXPECT_FALSE((*whole)->units().ReleaseExportedSections());
  EXPECT_FALSE((*whole)->retired());
  EXPECT_FALSE((*whole)->files().ReleaseStrings()) << "not retired, not its own file";
  std::vector<uint64_t> addresses = testing::FunctionAddresses(kFixture, 300);
  std::vector<std::vector<SourceFrame>> frames(addresses.size());
  (*whole)->LookupBatch(
      addresses, [&](size_t i) { return &frames[i]; }, 2);
  size_t answered = 0;
  for (const auto& f : frames) answered += !f.empty();
  EXPECT_GT(answered, addresses.size() / 2);
}

}  // namespace
}  // namespace stacksym
