// ElfFile on real binaries: sections, segments, build IDs, debug links, compressed sections
// and address translation, each compared with what readelf says about the same file.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "elf/section_stream.h"
#include "stacksym/elf.h"
#include "tool_runner.h"

namespace stacksym {
namespace {

using testing::Fixture;
using testing::RunTool;
using testing::ShellQuote;
using testing::SplitLines;
using testing::SplitWhitespace;

const char* const kFixtures[] = {
    "elf_basic_pie",       "elf_basic_nopie",       "elf_basic_md5",
    "elf_basic_strip_all", "elf_basic_strip_debug", "elf_basic_zlib",
    "elf_basic_zlib_gnu",  "elf_basic_debuglink",   "elf_basic_debuglink.debug",
    "elf_basic_dwz",       "elf_basic_dwz.alt",     "elf_cxx",
#ifdef STACKSYM_ELF_HAVE_ZSTD_FIXTURE
    "elf_basic_zstd",
#endif
};

// Fixtures plus the two system binaries the issue names.
std::vector<std::string> AllFiles() {
  std::vector<std::string> files;
  for (const char* f : kFixtures) files.push_back(Fixture(f));
  for (const char* f : {"/usr/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    if (access(f, R_OK) == 0) files.push_back(f);
  }
  return files;
}

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

uint64_t ParseHex(const std::string& s) { return std::stoull(s, nullptr, 16); }

// readelf -n: "Build ID: <hex>" (empty when the file has none).
std::string ReadelfBuildId(const std::string& path) {
  for (const std::string& line : SplitLines(RunTool("readelf -n " + ShellQuote(path)))) {
    auto pos = line.find("Build ID: ");
    if (pos != std::string::npos) return line.substr(pos + 10);
  }
  return "";
}

TEST(ElfFileTest, BuildIdsMatchReadelf) {
  int checked_with_id = 0;
  for (const std::string& path : AllFiles()) {
    SCOPED_TRACE(path);
    auto elf = OpenOrDie(path);
    if (!elf) continue;
    std::string expected = ReadelfBuildId(path);
    if (path == Fixture("elf_basic_nopie")) {
      // ld writes this 7-byte ID's note without the trailing padding to 4, and readelf (and
      // eu-readelf) then refuse the note. The descriptor is complete, so we accept it; the
      // value is checked against the linker flag in BuildIdLengths.
      EXPECT_EQ(expected, "");
      expected = "0123456789abcd";
    }
    EXPECT_EQ(elf->build_id_hex(), expected);
    if (!expected.empty()) ++checked_with_id;

    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    Result<std::vector<uint8_t>> from_fd = ReadBuildIdFromFd(fd);
    close(fd);
    ASSERT_TRUE(from_fd.ok()) << from_fd.error().ToString();
    EXPECT_EQ(ToHex(*from_fd), expected);
  }
  EXPECT_GE(checked_with_id, 10);
}

TEST(ElfFileTest, BuildIdLengths) {
  // --build-id=0x... gives a 7-byte ID, md5 16 bytes, sha1 20 bytes.
  EXPECT_EQ(OpenOrDie(Fixture("elf_basic_nopie"))->build_id_hex(), "0123456789abcd");
  EXPECT_EQ(OpenOrDie(Fixture("elf_basic_md5"))->build_id().size(), 16u);
  EXPECT_EQ(OpenOrDie(Fixture("elf_basic_pie"))->build_id().size(), 20u);
}

TEST(ElfFileTest, SectionsMatchReadelf) {
  for (const std::string& path : AllFiles()) {
    SCOPED_TRACE(path);
    auto elf = OpenOrDie(path);
    if (!elf) continue;
    std::map<uint32_t, std::vector<std::string>> expected;  // index -> fields
    for (const std::string& line : SplitLines(RunTool("readelf -SW " + ShellQuote(path)))) {
      auto open = line.find('[');
      auto close = line.find(']');
      if (open == std::string::npos || close == std::string::npos || close < open) continue;
      std::string idx = line.substr(open + 1, close - open - 1);
      if (idx.find_first_not_of(" 0123456789") != std::string::npos) continue;
      expected[std::stoul(idx)] = SplitWhitespace(std::string_view(line).substr(close + 1));
    }
    ASSERT_EQ(elf->sections().size(), expected.size());
    for (const ElfSection& s : elf->sections()) {
      if (s.index == 0) continue;
      const std::vector<std::string>& f = expected[s.index];
      // Name Type Address Off Size ES [Flg] Lk Inf Al
      ASSERT_GE(f.size(), 9u);
      EXPECT_EQ(s.name, f[0]);
      EXPECT_EQ(s.addr, ParseHex(f[2])) << s.name;
      EXPECT_EQ(s.offset, ParseHex(f[3])) << s.name;
      EXPECT_EQ(s.size, ParseHex(f[4])) << s.name;
      EXPECT_EQ(s.entsize, ParseHex(f[5])) << s.name;
      EXPECT_EQ(s.link, std::stoul(f[f.size() - 3])) << s.name;
      EXPECT_EQ(s.info, std::stoul(f[f.size() - 3 + 1])) << s.name;
      EXPECT_EQ(s.addralign, std::stoul(f[f.size() - 1])) << s.name;
      EXPECT_EQ((s.flags & SHF_COMPRESSED) != 0,
                f.size() == 10 && f[6].find('C') != std::string::npos)
          << s.name;
    }
  }
}

struct ReadelfSegment {
  std::string type;
  uint64_t offset, vaddr, filesz, memsz;
};

std::vector<ReadelfSegment> ReadelfSegments(const std::string& path) {
  std::vector<ReadelfSegment> out;
  bool in_table = false;
  for (const std::string& line : SplitLines(RunTool("readelf -lW " + ShellQuote(path)))) {
    if (line.find("Program Headers:") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.empty()) break;
    std::vector<std::string> f = SplitWhitespace(line);
    if (f.size() < 7 || f[1].rfind("0x", 0) != 0) continue;  // title row, interpreter note
    out.push_back({f[0], ParseHex(f[1]), ParseHex(f[2]), ParseHex(f[4]), ParseHex(f[5])});
  }
  return out;
}

TEST(ElfFileTest, SegmentsMatchReadelf) {
  for (const std::string& path : AllFiles()) {
    SCOPED_TRACE(path);
    auto elf = OpenOrDie(path);
    if (!elf) continue;
    std::vector<ReadelfSegment> expected = ReadelfSegments(path);
    ASSERT_EQ(elf->segments().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const ElfSegment& s = elf->segments()[i];
      EXPECT_EQ(s.offset, expected[i].offset) << i;
      EXPECT_EQ(s.vaddr, expected[i].vaddr) << i;
      EXPECT_EQ(s.filesz, expected[i].filesz) << i;
      EXPECT_EQ(s.memsz, expected[i].memsz) << i;
      if (expected[i].type == "LOAD") {
        EXPECT_EQ(s.type, uint32_t{PT_LOAD}) << i;
      }
      if (expected[i].type == "NOTE") {
        EXPECT_EQ(s.type, uint32_t{PT_NOTE}) << i;
      }
    }
  }
}

// Every symbol address translated with readelf's PT_LOAD numbers, and back.
TEST(ElfFileTest, AddressTranslationMatchesReadelfSegments) {
  for (const std::string& path : AllFiles()) {
    SCOPED_TRACE(path);
    auto elf = OpenOrDie(path);
    if (!elf) continue;
    std::vector<ReadelfSegment> loads;
    for (const ReadelfSegment& s : ReadelfSegments(path)) {
      if (s.type == "LOAD") loads.push_back(s);
    }
    auto expected_offset = [&](uint64_t vaddr) -> std::optional<uint64_t> {
      for (const ReadelfSegment& s : loads) {
        if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return s.offset + (vaddr - s.vaddr);
      }
      return std::nullopt;
    };
    size_t translated = 0;
    for (const ElfSymbol& sym : elf->symbols().symbols()) {
      for (uint64_t addr : {sym.address, sym.address + sym.size / 2}) {
        std::optional<uint64_t> off = elf->VaddrToFileOffset(addr);
        ASSERT_EQ(off, expected_offset(addr)) << sym.name;
        if (!off) continue;
        ++translated;
        EXPECT_EQ(elf->FileOffsetToVaddr(*off), addr) << sym.name;
      }
    }
    if (!loads.empty() && !elf->symbols().empty()) {
      EXPECT_GT(translated, 0u);
    }
    // Below the first segment and far beyond the last one nothing is mapped.
    EXPECT_EQ(elf->VaddrToFileOffset(~uint64_t{0} - 1), std::nullopt);
    EXPECT_EQ(elf->FileOffsetToVaddr(elf->bytes().size() + 4096), std::nullopt);
  }
}

TEST(ElfFileTest, SymbolsAreFoundInPieAndNonPie) {
  auto pie = OpenOrDie(Fixture("elf_basic_pie"));
  auto nopie = OpenOrDie(Fixture("elf_basic_nopie"));
  EXPECT_EQ(pie->type(), ET_DYN);
  EXPECT_EQ(nopie->type(), ET_EXEC);
  EXPECT_EQ(pie->machine(), EM_X86_64);
  EXPECT_TRUE(pie->is_64bit());
  const ElfSymbol* a = pie->symbols().FindByName("global_function");
  const ElfSymbol* b = nopie->symbols().FindByName("global_function");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_LT(a->address, 0x100000u);  // PIE: linked at 0
  EXPECT_GE(b->address, 0x400000u);  // non-PIE: linked at 0x400000
  EXPECT_EQ(a->size, b->size);
}

TEST(ElfFileTest, StrippedFiles) {
  auto all = OpenOrDie(Fixture("elf_basic_strip_all"));
  EXPECT_FALSE(all->symbols().has_symtab());
  EXPECT_TRUE(all->symbols().has_dynsym());
  EXPECT_EQ(all->FindSection(".debug_info"), nullptr);
  EXPECT_EQ(all->symbols().FindByName("local_helper"), nullptr);
  EXPECT_FALSE(all->build_id().empty());

  auto debug = OpenOrDie(Fixture("elf_basic_strip_debug"));
  EXPECT_TRUE(debug->symbols().has_symtab());
  EXPECT_EQ(debug->FindSection(".debug_info"), nullptr);
  EXPECT_NE(debug->symbols().FindByName("local_helper"), nullptr);
}

// Compressed sections decompress to what objcopy --decompress-debug-sections produced.
void ExpectSameDebugSections(const std::string& compressed_path, bool expect_gabi) {
  SCOPED_TRACE(compressed_path);
  auto packed = OpenOrDie(compressed_path);
  auto plain = OpenOrDie(compressed_path + ".plain");
  ASSERT_TRUE(packed && plain);
  int compared = 0;
  int compressed = 0;
  for (const ElfSection& p : plain->sections()) {
    if (!p.name.starts_with(".debug_")) continue;
    const ElfSection* c = packed->FindSection(p.name);
    ASSERT_NE(c, nullptr) << p.name;
    bool is_compressed = (c->flags & SHF_COMPRESSED) != 0 || c->name.starts_with(".zdebug");
    if (is_compressed) {
      ++compressed;
      EXPECT_EQ((c->flags & SHF_COMPRESSED) != 0, expect_gabi);
    }
    auto a = packed->SectionData(*c);
    auto b = plain->SectionData(p);
    ASSERT_TRUE(a.ok()) << a.error().ToString();
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    ASSERT_EQ(a->size(), b->size()) << p.name;
    EXPECT_TRUE(std::equal(a->begin(), a->end(), b->begin())) << p.name;
    // Decompressed once: the second call hands back the same bytes.
    auto again = packed->SectionData(p.name);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data(), a->data());
    ++compared;
  }
  EXPECT_GE(compared, 4);
  EXPECT_GE(compressed, 2);
}

TEST(ElfFileTest, ZlibSectionsDecompress) {
  ExpectSameDebugSections(Fixture("elf_basic_zlib"), true);
}

TEST(ElfFileTest, LegacyZdebugSectionsDecompress) {
  ExpectSameDebugSections(Fixture("elf_basic_zlib_gnu"), false);
  auto elf = OpenOrDie(Fixture("elf_basic_zlib_gnu"));
  const ElfSection* s = elf->FindSection(".debug_info");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, ".zdebug_info");
}

TEST(ElfFileTest, ZstdSectionsDecompress) {
#ifdef STACKSYM_ELF_HAVE_ZSTD_FIXTURE
  ExpectSameDebugSections(Fixture("elf_basic_zstd"), true);
  auto elf = OpenOrDie(Fixture("elf_basic_zstd"));
  const ElfSection* s = elf->FindSection(".debug_info");
  ASSERT_NE(s, nullptr);
  auto raw = elf->bytes().subspan(s->offset, 4);
  EXPECT_EQ(raw[0], 2) << "expected ELFCOMPRESS_ZSTD in the compression header";
#else
  GTEST_SKIP() << "neither gcc -gz=zstd nor objcopy --compress-debug-sections=zstd is available";
#endif
}

TEST(ElfFileTest, ConcurrentSectionDataDecompressesOnce) {
  auto elf = OpenOrDie(Fixture("elf_basic_zlib"));
  const ElfSection* s = elf->FindSection(".debug_info");
  ASSERT_NE(s, nullptr);
  ASSERT_NE(s->flags & SHF_COMPRESSED, 0u);
  std::vector<const uint8_t*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      auto data = elf->SectionData(*s);
      seen[i] = data.ok() ? data->data() : nullptr;
    });
  }
  for (auto& t : threads) t.join();
  for (const uint8_t* p : seen) {
    EXPECT_NE(p, nullptr);
    EXPECT_EQ(p, seen[0]);
  }
}

// heap_bytes counts what the file holds beyond its mapping: each decompressed section once
// (however often it is asked for), and the symbol table once built.
TEST(ElfFileTest, HeapBytesCountDecompressedSectionsAndSymbols) {
  auto elf = OpenOrDie(Fixture("elf_basic_zlib"));
  EXPECT_EQ(elf->heap_bytes(), 0u);
  size_t expected = 0;
  for (const char* name : {".debug_info", ".debug_line"}) {
    auto data = elf->SectionData(name);
    ASSERT_TRUE(data.ok());
    ASSERT_FALSE(data->empty());
    expected += data->size();
    EXPECT_EQ(elf->heap_bytes(), expected) << name;
    ASSERT_TRUE(elf->SectionData(name).ok());
    EXPECT_EQ(elf->heap_bytes(), expected) << name << " asked for twice";
  }
  ASSERT_FALSE(elf->symbols().empty());
  EXPECT_EQ(elf->heap_bytes(), expected + elf->symbols().memory_bytes());
  EXPECT_GE(elf->symbols().memory_bytes(), elf->symbols().symbols().size() * sizeof(ElfSymbol));
  // An uncompressed file's sections are its mapping: no heap.
  auto plain = OpenOrDie(Fixture("elf_basic_zlib.plain"));
  ASSERT_TRUE(plain->SectionData(".debug_info").ok());
  EXPECT_EQ(plain->heap_bytes(), 0u);
}

// The stream of a compressed section (zlib and zstd) ends with the bytes SectionData gives, its
// progress never past them; an uncompressed section comes as a finished stream of its mapping,
// and a section of another file as a finished stream with SectionData's error.
TEST(ElfFileTest, StreamedSectionsEndAsSectionData) {
  for (const char* name : {"elf_basic_zlib", "elf_basic_zstd", "elf_basic_zlib.plain"}) {
    SCOPED_TRACE(name);
    auto streamed_file = OpenOrDie(Fixture(name));
    auto direct_file = OpenOrDie(Fixture(name));
    const ElfSection* info = streamed_file->FindSection(".debug_info");
    ASSERT_NE(info, nullptr);
    std::shared_ptr<const elf::SectionStream> stream =
        elf::StreamSectionData(*streamed_file, *info);
    ASSERT_NE(stream, nullptr);
    const size_t size = stream->buffer().size();
    EXPECT_LE(stream->WaitFor(size / 2), size);
    auto streamed = stream->Wait();
    ASSERT_TRUE(streamed.ok()) << streamed.error().ToString();
    EXPECT_TRUE(stream->done());
    EXPECT_EQ(stream->WaitFor(size), size);
    EXPECT_EQ(streamed->data(), stream->buffer().data());
    auto direct = direct_file->SectionData(".debug_info");
    ASSERT_TRUE(direct.ok());
    EXPECT_TRUE(std::equal(streamed->begin(), streamed->end(), direct->begin(), direct->end()));
    // SectionData afterwards waits for the same decoding: the same bytes, not a second copy.
    auto again = streamed_file->SectionData(*info);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data(), streamed->data());
    if (std::string_view(name).ends_with(".plain")) {
      EXPECT_EQ(streamed->data(), streamed_file->bytes().data() + info->offset);
    }
  }
  auto elf = OpenOrDie(Fixture("elf_basic_zlib"));
  ElfSection foreign;
  foreign.index = static_cast<uint32_t>(elf->sections().size());
  std::shared_ptr<const elf::SectionStream> stream = elf::StreamSectionData(*elf, foreign);
  EXPECT_TRUE(stream->done());
  EXPECT_FALSE(stream->Wait().ok());
}

// A discarded decompressed section gives its memory back and is decompressed anew when asked
// again, to the same bytes; an uncompressed section (a view of the mapping) is left alone.
TEST(ElfFileTest, DiscardedSectionIsDecompressedAgainWhenAsked) {
  auto elf = OpenOrDie(Fixture("elf_basic_zlib"));
  const ElfSection* info = elf->FindSection(".debug_info");
  ASSERT_NE(info, nullptr);
  auto first = elf->SectionData(*info);
  ASSERT_TRUE(first.ok());
  const std::vector<uint8_t> copy(first->begin(), first->end());
  ASSERT_FALSE(copy.empty());
  EXPECT_EQ(elf->heap_bytes(), copy.size());
  elf->DiscardDecompressed(*info);
  EXPECT_EQ(elf->heap_bytes(), 0u);
  elf->DiscardDecompressed(*info);  // twice: nothing more to give back
  EXPECT_EQ(elf->heap_bytes(), 0u);
  auto again = elf->SectionData(*info);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::equal(again->begin(), again->end(), copy.begin(), copy.end()));
  EXPECT_EQ(elf->heap_bytes(), copy.size());
  // Streamed after a discard as well.
  elf->DiscardDecompressed(*info);
  auto stream = elf::StreamSectionData(*elf, *info);
  auto streamed = stream->Wait();
  ASSERT_TRUE(streamed.ok());
  EXPECT_TRUE(std::equal(streamed->begin(), streamed->end(), copy.begin(), copy.end()));

  auto plain = OpenOrDie(Fixture("elf_basic_zlib.plain"));
  const ElfSection* plain_info = plain->FindSection(".debug_info");
  ASSERT_NE(plain_info, nullptr);
  auto view = plain->SectionData(*plain_info);
  ASSERT_TRUE(view.ok());
  plain->DiscardDecompressed(*plain_info);
  auto view_again = plain->SectionData(*plain_info);
  ASSERT_TRUE(view_again.ok());
  EXPECT_EQ(view->data(), view_again->data());
}

TEST(ElfFileTest, DebugLinkNameAndCrcMatchTheDebugFile) {
  auto elf = OpenOrDie(Fixture("elf_basic_debuglink"));
  ASSERT_TRUE(elf->debuglink().has_value());
  EXPECT_EQ(elf->debuglink()->name, "elf_basic_debuglink.debug");
  auto debug = OpenOrDie(Fixture("elf_basic_debuglink.debug"));
  EXPECT_EQ(elf->debuglink()->crc, DebugLinkCrc32(debug->bytes()));
  // The separate debug file carries the same build ID and the DWARF.
  EXPECT_EQ(debug->build_id_hex(), elf->build_id_hex());
  EXPECT_NE(debug->FindSection(".debug_info"), nullptr);
  EXPECT_TRUE(debug->symbols().has_symtab());
  // readelf agrees on the name.
  std::string dump =
      RunTool("readelf -p .gnu_debuglink " + ShellQuote(Fixture("elf_basic_debuglink")));
  EXPECT_NE(dump.find("elf_basic_debuglink.debug"), std::string::npos) << dump;
}

TEST(ElfFileTest, DebugAltLinkMatchesReadelf) {
  for (const char* name : {"elf_basic_dwz", "elf_basic_dwz2"}) {
    std::string path = Fixture(name);
    SCOPED_TRACE(path);
    auto elf = OpenOrDie(path);
    ASSERT_TRUE(elf->debugaltlink().has_value());
    EXPECT_EQ(elf->debugaltlink()->name, "elf_basic_dwz.alt");
    // readelf -wk prints the build ID as space-separated hex bytes after "Build-ID".
    std::vector<std::string> lines = SplitLines(RunTool("readelf -wk " + ShellQuote(path)));
    std::string expected;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i].find("Build-ID") != std::string::npos) {
        for (const std::string& b : SplitWhitespace(lines[i + 1])) expected += b;
      }
    }
    EXPECT_EQ(ToHex(elf->debugaltlink()->build_id), expected);
    auto alt = OpenOrDie(Fixture("elf_basic_dwz.alt"));
    EXPECT_EQ(alt->build_id_hex(), expected);
  }
}

TEST(ElfFileTest, HexRoundTrip) {
  std::vector<uint8_t> bytes{0x00, 0x01, 0xab, 0xff, 0x7f};
  EXPECT_EQ(ToHex(bytes), "0001abff7f");
  EXPECT_EQ(FromHex("0001abff7f"), bytes);
  EXPECT_EQ(FromHex("0001ABFF7F"), bytes);
  EXPECT_EQ(FromHex(""), std::vector<uint8_t>());
  EXPECT_EQ(FromHex("abc"), std::nullopt);
  EXPECT_EQ(FromHex("zz"), std::nullopt);
  EXPECT_EQ(FromHex("0x12"), std::nullopt);
}

TEST(ElfFileTest, DebugLinkCrcIsZlibCrc32) {
  // Check value of CRC-32/ISO-HDLC for "123456789".
  const std::string s = "123456789";
  EXPECT_EQ(DebugLinkCrc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xcbf43926u);
  EXPECT_EQ(DebugLinkCrc32({}), 0u);
}

TEST(ElfFileTest, FromBytesMatchesOpen) {
  auto opened = OpenOrDie(Fixture("elf_basic_pie"));
  auto copy = ElfFile::FromBytes(opened->bytes(), "in-memory");
  ASSERT_TRUE(copy.ok()) << copy.error().ToString();
  EXPECT_EQ((*copy)->path(), "in-memory");
  EXPECT_EQ((*copy)->build_id_hex(), opened->build_id_hex());
  EXPECT_EQ((*copy)->symbols().symbols().size(), opened->symbols().symbols().size());
}

}  // namespace
}  // namespace stacksym
