// Broken input: every case must give an Error that names the problem (or, for damage that
// leaves the rest usable, a recorded problem) — never a crash, hang or made-up answer.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>

#include "elf_builder.h"
#include "stacksym/elf.h"
#include "tool_runner.h"

namespace stacksym {
namespace {

using testing::Append32;
using testing::Append64;
using testing::BuilderSection;
using testing::BuilderSegment;
using testing::ElfBuilder;
using testing::MakeNote;
using testing::Put16;
using testing::Put32;
using testing::Put64;
using testing::SymtabWriter;

// Opens from bytes and expects failure whose message contains `what`.
void ExpectOpenError(const std::vector<uint8_t>& bytes, const std::string& what,
                     ErrorCode code = ErrorCode::kMalformed) {
  auto elf = ElfFile::FromBytes(bytes, "bad.elf");
  ASSERT_FALSE(elf.ok()) << "expected an error mentioning: " << what;
  std::string msg = elf.error().ToString();
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.elf"), std::string::npos) << "error does not name the file: " << msg;
  EXPECT_EQ(elf.error().code, code) << msg;
}

Result<std::vector<uint8_t>> BuildIdViaFd(const std::vector<uint8_t>& bytes) {
  std::string path = testing::WriteTempFile(bytes, "bad");
  int fd = open(path.c_str(), O_RDONLY);
  auto id = ReadBuildIdFromFd(fd);
  close(fd);
  std::remove(path.c_str());
  return id;
}

std::vector<uint8_t> Minimal(bool is_64bit = true) {
  ElfBuilder b(is_64bit);
  b.AddSection({.name = ".text", .data = std::vector<uint8_t>(16)});
  return b.Build();
}

TEST(BadInputTest, EmptyFile) {
  ExpectOpenError({}, "empty");
  std::string path = testing::WriteTempFile({}, "empty");
  auto elf = ElfFile::Open(path);
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.error().ToString().find("empty"), std::string::npos);
  EXPECT_NE(elf.error().ToString().find(path), std::string::npos);
  std::remove(path.c_str());
  EXPECT_FALSE(BuildIdViaFd({}).ok());
}

TEST(BadInputTest, Directory) {
  auto elf = ElfFile::Open(::testing::TempDir());
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.error().ToString().find("directory"), std::string::npos) << elf.error().ToString();
}

TEST(BadInputTest, MissingFile) {
  auto elf = ElfFile::Open("/nonexistent/stacksym/file");
  ASSERT_FALSE(elf.ok());
  EXPECT_EQ(elf.error().code, ErrorCode::kNotFound);
}

TEST(BadInputTest, NotElf) {
  std::vector<uint8_t> text(200, 'x');
  ExpectOpenError(text, "not an ELF file");
  EXPECT_FALSE(BuildIdViaFd(text).ok());
  ExpectOpenError({0x7f, 'E', 'L'}, "not an ELF file");
}

TEST(BadInputTest, TruncatedHeader) {
  std::vector<uint8_t> full = Minimal();
  ExpectOpenError({full.begin(), full.begin() + 10}, "truncated ELF header");
  ExpectOpenError({full.begin(), full.begin() + 40}, "truncated ELF header");
  auto id = BuildIdViaFd({full.begin(), full.begin() + 40});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().ToString().find("truncated ELF header"), std::string::npos);
}

TEST(BadInputTest, BadClassAndByteOrder) {
  std::vector<uint8_t> bytes = Minimal();
  bytes[EI_CLASS] = 7;
  ExpectOpenError(bytes, "bad ELF class 7");
  bytes = Minimal();
  bytes[EI_DATA] = ELFDATA2MSB;
  ExpectOpenError(bytes, "big-endian", ErrorCode::kUnsupported);
  auto id = BuildIdViaFd(bytes);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kUnsupported);
  bytes[EI_DATA] = 9;
  ExpectOpenError(bytes, "byte order");
}

TEST(BadInputTest, SectionHeaderTablePastEof) {
  std::vector<uint8_t> bytes = Minimal();
  Put64(bytes, 40, bytes.size() + 100);  // e_shoff
  ExpectOpenError(bytes, "section header table");
  bytes = Minimal(false);
  Put32(bytes, 32, static_cast<uint32_t>(bytes.size() - 8));
  ExpectOpenError(bytes, "past the end of the file");
}

TEST(BadInputTest, HugeSectionAndSegmentCounts) {
  std::vector<uint8_t> bytes = Minimal();
  Put16(bytes, 60, 0xff00);  // e_shnum
  ExpectOpenError(bytes, "section header table (65280 entries");
  bytes = Minimal();
  Put16(bytes, 56, 0xfff0);  // e_phnum
  Put64(bytes, 32, 64);      // e_phoff
  ExpectOpenError(bytes, "program header table (65520 entries");
  auto id = BuildIdViaFd(bytes);
  EXPECT_FALSE(id.ok());

  // Extended count in section 0 claiming 2^40 sections.
  ElfBuilder b;
  b.AddSection({.name = ".text"});
  b.extended_numbering = true;
  bytes = b.Build();
  Put64(bytes, b.section_header_offset(0) + 32, uint64_t{1} << 40);  // sh_size of section 0
  ExpectOpenError(bytes, "section header table (1099511627776 entries");
  // PN_XNUM with a huge sh_info.
  bytes = b.Build();
  Put32(bytes, b.section_header_offset(0) + 44, 0xffffffff);
  ExpectOpenError(bytes, "program header table (4294967295 entries");
}

TEST(BadInputTest, EntrySizesTooSmall) {
  std::vector<uint8_t> bytes = Minimal();
  Put16(bytes, 58, 10);  // e_shentsize
  ExpectOpenError(bytes, "section header entry size 10");
  ElfBuilder b;
  uint32_t s = b.AddSection({.name = ".text", .data = std::vector<uint8_t>(16)});
  b.AddSegment({.section = static_cast<int>(s)});
  bytes = b.Build();
  Put16(bytes, 54, 20);  // e_phentsize
  ExpectOpenError(bytes, "program header entry size 20");
}

TEST(BadInputTest, SectionNameProblems) {
  std::vector<uint8_t> bytes = Minimal();
  Put16(bytes, 62, 50);  // e_shstrndx beyond e_shnum
  ExpectOpenError(bytes, "section name table index 50 is out of range");

  ElfBuilder b;
  b.AddSection({.name = ".text", .name_override = 0x7fffffff});
  ExpectOpenError(b.Build(), "name offset 0x7fffffff of section 1");

  // The name table itself lies past EOF.
  ElfBuilder c;
  c.AddSection({.name = ".text"});
  bytes = c.Build();
  Put64(bytes, c.section_header_offset(2) + 24, 1u << 30);  // .shstrtab sh_offset
  ExpectOpenError(bytes, "section name table");
}

TEST(BadInputTest, NotesPastEofOrTruncated) {
  ElfBuilder b;
  b.AddSection({.name = ".note.gnu.build-id",
                .type = SHT_NOTE,
                .data = MakeNote("GNU", NT_GNU_BUILD_ID, std::vector<uint8_t>(20, 1)),
                .size_override = 1u << 20});
  ExpectOpenError(b.Build(), "note section");

  ElfBuilder seg;
  uint32_t text = seg.AddSection({.name = ".text", .data = std::vector<uint8_t>(16)});
  seg.AddSegment({.type = PT_NOTE,
                  .section = static_cast<int>(text),
                  .offset_override = 1u << 30,
                  .filesz_override = 64});
  std::vector<uint8_t> bytes = seg.Build();
  // A broken PT_NOTE is skipped, not fatal: the file opens, the problem is kept.
  auto opened = ElfFile::FromBytes(bytes, "bad_note_segment.elf");
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  EXPECT_TRUE((*opened)->build_id().empty());
  ASSERT_EQ((*opened)->problems().size(), 1u);
  EXPECT_NE((*opened)->problems()[0].ToString().find("PT_NOTE segment 0"), std::string::npos);
  EXPECT_NE((*opened)->problems()[0].ToString().find("past the end"), std::string::npos);
  auto id = BuildIdViaFd(bytes);
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  EXPECT_TRUE(id->empty());

  // descsz runs beyond the note area.
  std::vector<uint8_t> note = MakeNote("GNU", NT_GNU_BUILD_ID, std::vector<uint8_t>(20, 1));
  Put32(note, 4, 0x1000);
  ElfBuilder t;
  uint32_t n = t.AddSection({.name = ".note", .type = SHT_NOTE, .data = note});
  t.AddSegment({.type = PT_NOTE, .section = static_cast<int>(n)});
  bytes = t.Build();
  ExpectOpenError(bytes, "truncated note");
  EXPECT_FALSE(BuildIdViaFd(bytes).ok());
  // namesz near 2^32 must not wrap around.
  Put32(note, 0, 0xfffffffd);
  Put32(note, 4, 20);
  ElfBuilder w;
  w.AddSection({.name = ".note", .type = SHT_NOTE, .data = note});
  ExpectOpenError(w.Build(), "truncated note");
}

TEST(BadInputTest, SectionDataPastEof) {
  ElfBuilder b;
  b.AddSection(
      {.name = ".debug_info", .data = std::vector<uint8_t>(8), .offset_override = 1u << 30});
  auto elf = ElfFile::FromBytes(b.Build(), "bad.elf");
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  auto data = (*elf)->SectionData(".debug_info");
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.error().ToString().find("past the end of the file"), std::string::npos);
  EXPECT_NE(data.error().ToString().find(".debug_info"), std::string::npos);
}

std::vector<uint8_t> Compressed(uint32_t type, uint64_t declared, const std::vector<uint8_t>& s) {
  std::vector<uint8_t> out;
  Append32(out, type);
  Append32(out, 0);
  Append64(out, declared);
  Append64(out, 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

std::vector<uint8_t> Deflate(size_t n) {
  std::vector<uint8_t> in(n, 'q');
  uLongf size = compressBound(n);
  std::vector<uint8_t> out(size);
  compress2(out.data(), &size, in.data(), n, 9);
  out.resize(size);
  return out;
}

// SectionData of one .debug_info section with the given contents; returns the error text.
std::string SectionError(std::vector<uint8_t> contents, uint64_t flags = SHF_COMPRESSED,
                         const std::string& name = ".debug_info") {
  ElfBuilder b;
  b.AddSection({.name = name, .flags = flags, .data = std::move(contents), .addralign = 8});
  auto elf = ElfFile::FromBytes(b.Build(), "bad.elf");
  EXPECT_TRUE(elf.ok());
  if (!elf.ok()) return "";
  auto data = (*elf)->SectionData((*elf)->sections()[1]);
  EXPECT_FALSE(data.ok()) << "decompression unexpectedly succeeded";
  if (data.ok()) return "";
  // The failure is remembered, not retried.
  auto again = (*elf)->SectionData((*elf)->sections()[1]);
  EXPECT_FALSE(again.ok());
  return data.error().ToString();
}

TEST(BadInputTest, CompressedSectionDeclaredSizeLies) {
  std::vector<uint8_t> z = Deflate(1000);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, 2000, z)).find("not the declared 2000"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, 999, z)).find("more than the declared 999"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, uint64_t{1} << 50, z)).find("implausible"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, 0, z)).find("size of 0"), std::string::npos);
  // Truncated and garbage streams.
  std::vector<uint8_t> cut(z.begin(), z.begin() + z.size() / 2);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, 1000, cut)).find("zlib"), std::string::npos);
  EXPECT_NE(SectionError(Compressed(ELFCOMPRESS_ZLIB, 1000, std::vector<uint8_t>(50, 0xee)))
                .find("zlib stream is corrupt"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(2, 1000, std::vector<uint8_t>(50, 0xee))).find("zstd"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(77, 1000, z)).find("unknown section compression type 77"),
            std::string::npos);
  EXPECT_NE(SectionError({1, 0, 0}).find("too small for its header"), std::string::npos);
  // Legacy .zdebug: missing magic, and a size that lies.
  EXPECT_NE(
      SectionError({'Z', 'L', 'X', 'B', 0, 0, 0, 0, 0, 0, 0, 9}, 0, ".zdebug_info").find("ZLIB"),
      std::string::npos);
  std::vector<uint8_t> legacy{'Z', 'L', 'I', 'B', 0, 0, 0, 0, 0, 0, 0x10, 0};
  legacy.insert(legacy.end(), z.begin(), z.end());
  EXPECT_NE(SectionError(legacy, 0, ".zdebug_info").find("not the declared 4096"),
            std::string::npos);
}

TEST(BadInputTest, ZstdDeclaredSizeLies) {
  std::vector<uint8_t> payload(3000, 'z');
  for (size_t i = 0; i < payload.size(); i += 7) payload[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> stream(ZSTD_compressBound(payload.size()));
  stream.resize(ZSTD_compress(stream.data(), stream.size(), payload.data(), payload.size(), 3));
  EXPECT_NE(SectionError(Compressed(2, 3001, stream)).find("not the declared 3001"),
            std::string::npos);
  EXPECT_NE(SectionError(Compressed(2, 2999, stream)).find("more than the declared 2999"),
            std::string::npos);
  std::vector<uint8_t> cut(stream.begin(), stream.end() - 10);
  EXPECT_NE(SectionError(Compressed(2, 3000, cut)).find("zstd stream"), std::string::npos);
}

// A symbol table where entries are broken in the given ways; the good one must survive.
TEST(BadInputTest, BrokenSymbolsAreSkippedAndReported) {
  ElfBuilder b;
  uint32_t text = b.AddSection({.name = ".text",
                                .flags = SHF_ALLOC | SHF_EXECINSTR,
                                .addr = 0x1000,
                                .data = std::vector<uint8_t>(0x100)});
  SymtabWriter syms;
  syms.Add("good", 0x1000, 0x10, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
  syms.Add("bad_section", 0x1010, 0x10, STT_FUNC, STB_GLOBAL, 0x7000);
  syms.AddRaw(0x40000000, 0x1020, 0x10, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
  syms.Add("xindex_without_table", 0x1030, 0x10, STT_FUNC, STB_GLOBAL, SHN_XINDEX);
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = syms.symbols(),
                .link = text + 2,
                .entsize = syms.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
  auto elf = ElfFile::FromBytes(b.Build(), "bad.elf");
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  const SymbolTable& t = (*elf)->symbols();
  ASSERT_EQ(t.symbols().size(), 1u);
  EXPECT_EQ(t.symbols()[0].name, "good");
  EXPECT_EQ(t.skipped(), 3u);
  std::string all;
  for (const Error& e : t.problems()) all += e.ToString() + "\n";
  EXPECT_NE(all.find("2 symbols have a section index out of range"), std::string::npos) << all;
  EXPECT_NE(all.find("1 symbols have a name offset outside the string table"), std::string::npos)
      << all;
  EXPECT_NE(all.find(".symtab"), std::string::npos) << all;
}

TEST(BadInputTest, BrokenSymbolTables) {
  auto problems_of = [](BuilderSection symtab) {
    ElfBuilder b;
    b.AddSection({.name = ".text", .addr = 0x1000, .data = std::vector<uint8_t>(16)});
    SymtabWriter syms;
    syms.Add("f", 0x1000, 4, STT_FUNC, STB_GLOBAL, 1);
    symtab.type = SHT_SYMTAB;
    symtab.name = ".symtab";
    if (symtab.data.empty()) symtab.data = syms.symbols();
    b.AddSection(symtab);
    b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
    auto elf = ElfFile::FromBytes(b.Build(), "bad.elf");
    EXPECT_TRUE(elf.ok());
    std::string all;
    if (!elf.ok()) return all;
    EXPECT_TRUE((*elf)->symbols().empty());
    for (const Error& e : (*elf)->symbols().problems()) all += e.ToString() + "\n";
    return all;
  };
  EXPECT_NE(problems_of({.link = 3, .entsize = 8}).find("entry size 8 is smaller than 24"),
            std::string::npos);
  EXPECT_NE(problems_of({.link = 40}).find("string table index 40 is out of range"),
            std::string::npos);
  EXPECT_NE(problems_of({.link = 3, .offset_override = 1u << 30}).find("past the end"),
            std::string::npos);
  EXPECT_NE(problems_of({.link = 3, .size_override = 30}).find("not a multiple"),
            std::string::npos);
}

// Every prefix-truncation of a real binary fails cleanly or still parses consistently.
TEST(BadInputTest, TruncatedRealBinary) {
  auto full = MappedFile::Open(testing::Fixture("elf_basic_pie"));
  ASSERT_TRUE(full.ok()) << full.error().ToString();
  std::span<const uint8_t> bytes = full->bytes();
  for (size_t cut : {size_t{1}, size_t{20}, size_t{63}, size_t{64}, size_t{500}, bytes.size() / 4,
                     bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + cut);
    auto elf = ElfFile::FromBytes(prefix, "cut.elf");
    ASSERT_FALSE(elf.ok());
    EXPECT_EQ(elf.error().code, ErrorCode::kMalformed) << elf.error().ToString();
    // The fd reader needs only the front of the file: it works once the notes are there.
    auto id = BuildIdViaFd(prefix);
    if (cut >= 0x400) {
      EXPECT_TRUE(id.ok()) << id.error().ToString();
    } else {
      EXPECT_FALSE(id.ok());
    }
  }
}

// Mutates each byte of a small but complete image (header, tables, notes, symbols,
// compressed data) and exercises the whole API on what still parses: a cheap, deterministic
// relative of the fuzz target that runs in every test pass (and under ASan/UBSan).
TEST(BadInputTest, SingleByteMutationsNeverCrash) {
  for (bool is_64bit : {true, false}) {
    ElfBuilder b(is_64bit);
    uint32_t text = b.AddSection({.name = ".text",
                                  .flags = SHF_ALLOC | SHF_EXECINSTR,
                                  .addr = 0x1000,
                                  .data = std::vector<uint8_t>(32, 0x90)});
    SymtabWriter syms(is_64bit);
    syms.Add("a", 0x1000, 8, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
    syms.Add("b", 0x1008, 0, STT_FUNC, STB_LOCAL, static_cast<uint16_t>(text));
    b.AddSection({.name = ".symtab",
                  .type = SHT_SYMTAB,
                  .data = syms.symbols(),
                  .link = text + 2,
                  .entsize = syms.entry_size()});
    b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
    uint32_t note = b.AddSection({.name = ".note",
                                  .type = SHT_NOTE,
                                  .data = MakeNote("GNU", NT_GNU_BUILD_ID, {1, 2, 3, 4})});
    std::vector<uint8_t> z = Deflate(64);
    std::vector<uint8_t> chdr;
    Append32(chdr, ELFCOMPRESS_ZLIB);
    if (is_64bit) {
      Append32(chdr, 0);
      Append64(chdr, 64);
      Append64(chdr, 1);
    } else {
      Append32(chdr, 64);
      Append32(chdr, 1);
    }
    chdr.insert(chdr.end(), z.begin(), z.end());
    b.AddSection({.name = ".debug_info", .flags = SHF_COMPRESSED, .data = chdr});
    b.AddSegment({.type = PT_LOAD, .section = static_cast<int>(text), .vaddr = 0x1000});
    b.AddSegment({.type = PT_NOTE, .section = static_cast<int>(note)});
    const std::vector<uint8_t> good = b.Build();
    ASSERT_TRUE(ElfFile::FromBytes(good, "good").ok());
    size_t parsed = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      for (uint8_t v : {uint8_t{0}, uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x41}}) {
        std::vector<uint8_t> m = good;
        m[i] ^= v == 0 ? m[i] : v;  // v == 0: set to zero
        auto elf = ElfFile::FromBytes(m, "mutant");
        if (!elf.ok()) {
          EXPECT_FALSE(elf.error().message.empty());
          continue;
        }
        ++parsed;
        for (const ElfSection& s : (*elf)->sections()) (void)(*elf)->SectionData(s);
        const SymbolTable& t = (*elf)->symbols();
        for (uint64_t a : {0x0ull, 0x1000ull, 0x1004ull, 0x100full, 0x1010ull}) (void)t.Find(a);
        (void)(*elf)->VaddrToFileOffset(0x1004);
        (void)(*elf)->FileOffsetToVaddr(0x100);
      }
    }
    EXPECT_GT(parsed, good.size());  // most mutations leave a parseable file
  }
}

}  // namespace
}  // namespace stacksym
