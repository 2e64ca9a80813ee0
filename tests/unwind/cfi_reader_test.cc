// The CFI reader's pieces on their own: every DW_EH_PE pointer encoding, the LSB's 64-bit
// .eh_frame layout (which readelf reads differently, so the differential test leaves it out),
// and .eh_frame_hdr, intact and corrupted.
#include "unwind/cfi_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "../elf/tool_runner.h"
#include "cfi_bytes.h"
#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_sources.h"
#include "unwind/eh_frame_hdr.h"

namespace stacksym::testing {
namespace {

using namespace unwind;

struct Decoded {
  bool ok = false;
  uint64_t value = 0;
  size_t consumed = 0;
  std::string error;
};

Decoded Decode(std::vector<uint8_t> bytes, uint8_t encoding, size_t start = 0) {
  PointerBases bases;
  bases.section_vaddr = 0x10000;
  bases.text_vaddr = 0x1000;
  bases.data_vaddr = 0x20000;
  bases.func_vaddr = 0x3000;
  bases.read_pointer = [](uint64_t vaddr) -> std::optional<uint64_t> {
    if (vaddr == 0x20008) return 0xabcdef;
    return std::nullopt;
  };
  ByteCursor c(bytes);
  c.Seek(start);
  Decoded d;
  d.ok = ReadEncodedPointer(c, encoding, bases, &d.value, &d.error);
  d.consumed = c.offset() - start;
  return d;
}

TEST(PointerEncoding, Formats) {
  EXPECT_EQ(Decode({1, 2, 3, 4, 5, 6, 7, 8}, DW_EH_PE_absptr).value, 0x0807060504030201u);
  EXPECT_EQ(Decode({0xe5, 0x8e, 0x26}, DW_EH_PE_uleb128).value, 624485u);
  EXPECT_EQ(Decode({0x34, 0x12}, DW_EH_PE_udata2).value, 0x1234u);
  EXPECT_EQ(Decode({0x78, 0x56, 0x34, 0x12}, DW_EH_PE_udata4).value, 0x12345678u);
  EXPECT_EQ(Decode({8, 7, 6, 5, 4, 3, 2, 1}, DW_EH_PE_udata8).value, 0x0102030405060708u);
  EXPECT_EQ(static_cast<int64_t>(Decode({0x7f}, DW_EH_PE_sleb128).value), -1);
  EXPECT_EQ(static_cast<int64_t>(Decode({0xfe, 0xff}, DW_EH_PE_sdata2).value), -2);
  EXPECT_EQ(static_cast<int64_t>(Decode({0xfd, 0xff, 0xff, 0xff}, DW_EH_PE_sdata4).value), -3);
  EXPECT_EQ(Decode({0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, DW_EH_PE_sdata8).value,
            ~uint64_t{3});
  EXPECT_EQ(Decode({0x78, 0x56, 0x34, 0x12}, DW_EH_PE_udata4).consumed, 4u);
}

TEST(PointerEncoding, Applications) {
  // pcrel: relative to the field's own address (section vaddr + offset of the field).
  EXPECT_EQ(Decode({0, 0, 0xf0, 0xff, 0xff, 0xff}, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 2).value,
            0x10002u - 0x10);
  EXPECT_EQ(Decode({0x10, 0, 0, 0}, DW_EH_PE_textrel | DW_EH_PE_udata4).value, 0x1010u);
  EXPECT_EQ(Decode({0x10, 0, 0, 0}, DW_EH_PE_datarel | DW_EH_PE_udata4).value, 0x20010u);
  EXPECT_EQ(Decode({0x10, 0, 0, 0}, DW_EH_PE_funcrel | DW_EH_PE_udata4).value, 0x3010u);
  // aligned: skip to the next 8-byte boundary of the address, then an absolute pointer.
  Decoded aligned = Decode({0xee, 0xee, 0xee, 1, 0, 0, 0, 0, 0, 0, 0}, DW_EH_PE_aligned, 3);
  EXPECT_FALSE(aligned.ok) << "3 + 5 padding + 8 > 11 bytes";
  Decoded aligned_ok =
      Decode({0xee, 0xee, 0xee, 0, 0, 0, 0, 0, 0x42, 0, 0, 0, 0, 0, 0, 0}, DW_EH_PE_aligned, 3);
  EXPECT_TRUE(aligned_ok.ok) << aligned_ok.error;
  EXPECT_EQ(aligned_ok.value, 0x42u);
  EXPECT_EQ(aligned_ok.consumed, 13u);
  // indirect: the pointer is read at the computed address.
  Decoded indirect = Decode({8, 0, 0, 0}, DW_EH_PE_indirect | DW_EH_PE_datarel | DW_EH_PE_udata4);
  EXPECT_TRUE(indirect.ok) << indirect.error;
  EXPECT_EQ(indirect.value, 0xabcdefu);
  EXPECT_FALSE(Decode({9, 0, 0, 0}, DW_EH_PE_indirect | DW_EH_PE_datarel | DW_EH_PE_udata4).ok);
}

TEST(PointerEncoding, Errors) {
  EXPECT_NE(Decode({0}, DW_EH_PE_omit).error.find("omit"), std::string::npos);
  EXPECT_NE(Decode({0, 0, 0, 0}, 0x05).error.find("unknown pointer format"), std::string::npos);
  EXPECT_NE(Decode({0, 0, 0, 0}, 0x63).error.find("unknown pointer application"),
            std::string::npos);
  EXPECT_NE(Decode({0, 0}, DW_EH_PE_udata4).error.find("truncated"), std::string::npos);
}

// The LSB: after an extended (64-bit) length, .eh_frame's CIE id and pointer stay 4 bytes.
TEST(CfiReader, SixtyFourBitEhFrameEntries) {
  CfiBytes eh(CfiSectionKind::kEhFrame);
  size_t cie = eh.AddCie({.dwarf64 = true,
                          .augmentation = "zR",
                          .augmentation_data = {DW_EH_PE_pcrel | DW_EH_PE_sdata4},
                          .z = true,
                          .instructions = X86CieInstructions()});
  size_t field = eh.NextFdePcField(true);
  std::vector<uint8_t> pc;
  int32_t rel = static_cast<int32_t>(0x7000 - (0x10000 + field));
  for (int i = 0; i < 4; ++i)
    pc.push_back(static_cast<uint8_t>(static_cast<uint32_t>(rel) >> (8 * i)));
  for (uint8_t b : {0x40, 0, 0, 0}) pc.push_back(b);
  eh.AddFde({.dwarf64 = true,
             .cie_offset = cie,
             .pc_fields = pc,
             .z = true,
             .instructions = {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16}});
  CfiEntries entries = ReadCfiSection(eh.Info());
  ASSERT_TRUE(entries.problems.empty()) << entries.problems[0].message;
  ASSERT_EQ(entries.fdes.size(), 1u);
  EXPECT_EQ(entries.fdes[0].pc_begin, 0x7000u);
  EXPECT_EQ(entries.fdes[0].pc_end, 0x7040u);
  CfaInterpreter interpreter;
  std::vector<std::pair<uint64_t, int64_t>> rows;
  ASSERT_TRUE(interpreter
                  .Run(entries.cies[0], entries.fdes[0],
                       [&](uint64_t at, const CfaState& s) {
                         rows.push_back({at, s.cfa.offset});
                       })
                  .ok());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1], std::make_pair(uint64_t{0x7001}, int64_t{16}));
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok());
  if (!elf) return {};
  return std::vector<uint8_t>((*elf)->bytes().begin(), (*elf)->bytes().end());
}

TEST(EhFrameHdr, AgreesWithEhFrameAndCorruptionIsReported) {
  std::vector<uint8_t> image = ReadFile(Fixture("unwind_gxx_o2"));
  ASSERT_FALSE(image.empty());
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::FromBytes(image, "intact");
  ASSERT_TRUE(elf.ok());
  CfiSources sources = FindCfiSources(**elf, nullptr);
  ASSERT_FALSE(sources.eh_frame_hdr.empty());
  Result<EhFrameHdr> hdr = ReadEhFrameHdr(sources.eh_frame_hdr, sources.eh_frame_hdr_vaddr);
  ASSERT_TRUE(hdr.ok()) << hdr.error().ToString();
  CfiEntries entries = ReadCfiSection(sources.sections[0]);
  EXPECT_TRUE(CheckEhFrameHdr(*hdr, entries, sources.sections[0].vaddr).ok());
  EXPECT_EQ(hdr->table.size(), entries.fdes.size());
  EXPECT_GT(hdr->table.size(), 5u);

  const ElfSection* section = (*elf)->FindSection(".eh_frame_hdr");
  ASSERT_NE(section, nullptr);
  const size_t at = section->offset;
  // Version 2.
  {
    std::vector<uint8_t> bad = image;
    bad[at] = 2;
    Result<std::shared_ptr<ElfFile>> e = ElfFile::FromBytes(bad, "bad-version");
    ASSERT_TRUE(e.ok());
    Result<std::shared_ptr<const UnwindTable>> t = UnwindTable::Build(**e);
    ASSERT_TRUE(t.ok()) << "a bad header does not make .eh_frame unusable";
    EXPECT_NE((*t)->stats().eh_frame_hdr_problem.find("version 2"), std::string::npos)
        << (*t)->stats().eh_frame_hdr_problem;
  }
  // A table entry's initial location changed (the header lies about an FDE).
  {
    ASSERT_EQ(image[at + 1], DW_EH_PE_pcrel | DW_EH_PE_sdata4);
    ASSERT_EQ(image[at + 3], DW_EH_PE_datarel | DW_EH_PE_sdata4);
    std::vector<uint8_t> bad = image;
    bad[at + 12 + 8] ^= 0x01;  // second entry's initial location
    Result<std::shared_ptr<ElfFile>> e = ElfFile::FromBytes(bad, "bad-entry");
    ASSERT_TRUE(e.ok());
    Result<std::shared_ptr<const UnwindTable>> t = UnwindTable::Build(**e);
    ASSERT_TRUE(t.ok());
    EXPECT_FALSE((*t)->stats().eh_frame_hdr_problem.empty());
  }
  // A count far beyond the section.
  {
    std::vector<uint8_t> bad = image;
    const uint32_t huge = 0x10000000;
    std::memcpy(&bad[at + 8], &huge, 4);
    Result<std::shared_ptr<ElfFile>> e = ElfFile::FromBytes(bad, "bad-count");
    ASSERT_TRUE(e.ok());
    CfiSources s = FindCfiSources(**e, nullptr);
    Result<EhFrameHdr> h = ReadEhFrameHdr(s.eh_frame_hdr, s.eh_frame_hdr_vaddr);
    ASSERT_FALSE(h.ok());
    EXPECT_NE(h.error().message.find("does not fit"), std::string::npos);
  }
}

// A file without section headers (llvm-objcopy --strip-sections): .eh_frame is found through
// PT_GNU_EH_FRAME, and the table is the intact file's, row for row, its header agreeing.
TEST(EhFrameHdr, FileWithoutSectionHeadersUnwindsAsTheIntactOne) {
  if (!ToolAvailable("llvm-objcopy")) GTEST_SKIP() << "llvm-objcopy is not installed (llvm)";
  for (const char* name : {"unwind_gxx_o2", "unwind_clang_o2"}) {
    const std::string intact_path = Fixture(name);
    const std::string stripped_path = ::testing::TempDir() + "/" + name + ".no-sections";
    int code = -1;
    RunTool("llvm-objcopy --strip-sections " + ShellQuote(intact_path) + " " +
                ShellQuote(stripped_path),
            &code);
    ASSERT_EQ(code, 0) << "llvm-objcopy --strip-sections " << intact_path;
    Result<std::shared_ptr<ElfFile>> intact = ElfFile::Open(intact_path);
    Result<std::shared_ptr<ElfFile>> stripped = ElfFile::Open(stripped_path);
    ASSERT_TRUE(intact && stripped);
    ASSERT_EQ((*stripped)->FindSection(".eh_frame"), nullptr) << "section headers left";
    Result<std::shared_ptr<const UnwindTable>> want = UnwindTable::Build(**intact);
    Result<std::shared_ptr<const UnwindTable>> got = UnwindTable::Build(**stripped);
    ASSERT_TRUE(want && got) << name;
    ASSERT_GT((*want)->rows().size(), 20u) << name;
    EXPECT_EQ((*got)->base_pc(), (*want)->base_pc()) << name;
    EXPECT_EQ((*got)->stats().fdes, (*want)->stats().fdes) << name;
    EXPECT_TRUE(std::equal((*got)->rows().begin(), (*got)->rows().end(), (*want)->rows().begin(),
                           (*want)->rows().end()))
        << name << ": " << (*got)->rows().size() << " rows against " << (*want)->rows().size();
    EXPECT_EQ((*got)->stats().eh_frame_hdr_fdes, (*want)->stats().eh_frame_hdr_fdes) << name;
    EXPECT_EQ((*got)->stats().eh_frame_hdr_problem, "") << name;
    std::remove(stripped_path.c_str());
  }
}

}  // namespace
}  // namespace stacksym::testing
