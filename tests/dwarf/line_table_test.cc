// .debug_line programs v4 and v5 on crafted bytes: rows, sequences, file paths, errors.
#include "dwarf/line_table.h"

#include <gtest/gtest.h>

#include "dwarf/dwarf_constants.h"
#include "dwarf_builder.h"

namespace stacksym::dwarf {
namespace {

using testing::ByteWriter;

// Header fields shared by the tests: min_inst 1, line_base -5, line_range 14, opcode_base 13.
void StandardFields(ByteWriter& w, int version) {
  w.U8(1);
  if (version >= 4) w.U8(1);
  w.U8(1).Fixed(static_cast<uint64_t>(-5), 1).U8(14).U8(13);
  const uint8_t lengths[] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  for (uint8_t l : lengths) w.U8(l);
}

void SetAddress(ByteWriter& w, uint64_t a) { w.U8(0).Uleb(9).U8(DW_LNE_set_address).U64(a); }
void EndSequence(ByteWriter& w) { w.U8(0).Uleb(1).U8(DW_LNE_end_sequence); }

TEST(LineTableTest, TinyProgramRows) {
  testing::TinyDwarf t = testing::BuildTinyDwarf(4);
  LineSections s;
  s.line = t.line;
  auto table = LineTable::Parse(s, 0, 8);
  ASSERT_TRUE(table) << table.error().ToString();
  EXPECT_EQ(table->Find(0xfff), nullptr);
  const LineRow* r = table->Find(0x1000);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->line, 10u);
  r = table->Find(0x1013);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->line, 20u);
  EXPECT_EQ(r->column, 5u);
  EXPECT_EQ(r->file, 2u);
  EXPECT_EQ(table->Find(0x10ff)->line, 30u);
  EXPECT_EQ(table->Find(0x1100), nullptr);  // end_sequence is exclusive
  std::string path;
  ASSERT_TRUE(table->FilePath(2, "/src", &path));
  EXPECT_EQ(path, "/src/inc/tiny.h");
  ASSERT_TRUE(table->FilePath(1, "/src", &path));
  EXPECT_EQ(path, "/src/tiny.c");
  EXPECT_FALSE(table->FilePath(0, "/src", &path));  // v4 files start at 1
  EXPECT_FALSE(table->FilePath(3, "/src", &path));
  // Relative: without the compilation directory, with the include directory.
  ASSERT_TRUE(table->FilePath(2, "/src", &path, /*relative=*/true));
  EXPECT_EQ(path, "inc/tiny.h");
  ASSERT_TRUE(table->FilePath(1, "/src", &path, /*relative=*/true));
  EXPECT_EQ(path, "tiny.c");
}

// Two sequences written high-address first; special opcodes; equal addresses keep the last.
TEST(LineTableTest, SequencesAreSortedAndLastRowAtAnAddressWins) {
  ByteWriter w;
  w.U32(0).U16(3);
  size_t hl = w.size();
  w.U32(0);
  size_t hs = w.size();
  StandardFields(w, 3);
  w.U8(0).Str("a.c").Uleb(0).Uleb(0).Uleb(0).U8(0);
  w.Patch32(hl, static_cast<uint32_t>(w.size() - hs));
  SetAddress(w, 0x5000);
  w.U8(DW_LNS_copy);                                  // 0x5000 line 1
  w.U8(DW_LNS_advance_line).Sleb(4).U8(DW_LNS_copy);  // 0x5000 line 5 (wins)
  // Special opcode: address += 2, line += 1 → adjusted = 2*14 + (1 - -5) = 34 → op 47.
  w.U8(47);  // 0x5002 line 6
  w.U8(DW_LNS_advance_pc).Uleb(6);
  EndSequence(w);  // end 0x5008
  SetAddress(w, 0x1000);
  w.U8(DW_LNS_advance_line).Sleb(99).U8(DW_LNS_copy);  // 0x1000 line 100
  w.U8(DW_LNS_const_add_pc);                           // += (255-13)/14 = 17
  EndSequence(w);                                      // end 0x1011
  w.Patch32(0, static_cast<uint32_t>(w.size() - 4));
  LineSections s;
  s.line = w.bytes();
  auto table = LineTable::Parse(s, 0, 8);
  ASSERT_TRUE(table) << table.error().ToString();
  EXPECT_EQ(table->Find(0x1000)->line, 100u);
  EXPECT_EQ(table->Find(0x1010)->line, 100u);
  EXPECT_EQ(table->Find(0x1011), nullptr);
  EXPECT_EQ(table->Find(0x4fff), nullptr);
  EXPECT_EQ(table->Find(0x5000)->line, 5u);
  EXPECT_EQ(table->Find(0x5001)->line, 5u);
  EXPECT_EQ(table->Find(0x5002)->line, 6u);
  EXPECT_EQ(table->Find(0x5007)->line, 6u);
  EXPECT_EQ(table->Find(0x5008), nullptr);
  for (size_t i = 1; i < table->rows().size(); ++i) {
    EXPECT_LT(table->rows()[i - 1].address, table->rows()[i].address);
  }
}

void SetDiscriminator(ByteWriter& w, uint64_t d) {
  ByteWriter operand;
  operand.Uleb(d);
  w.U8(0).Uleb(1 + operand.size()).U8(DW_LNE_set_discriminator).Uleb(d);
}

// DW_LNE_set_discriminator applies to the next row only; of rows at one address the last
// one's counts; sequences sorted by address keep their rows' discriminators.
TEST(LineTableTest, DiscriminatorsBelongToTheirRows) {
  ByteWriter w;
  w.U32(0).U16(3);
  size_t hl = w.size();
  w.U32(0);
  size_t hs = w.size();
  StandardFields(w, 3);
  w.U8(0).Str("a.c").Uleb(0).Uleb(0).Uleb(0).U8(0);
  w.Patch32(hl, static_cast<uint32_t>(w.size() - hs));
  SetAddress(w, 0x5000);
  SetDiscriminator(w, 3);
  w.U8(DW_LNS_copy);  // 0x5000 d3
  w.U8(47);           // 0x5002 d0 (reset after each row)
  SetDiscriminator(w, 300000);
  w.U8(47);           // 0x5004 d300000
  w.U8(DW_LNS_copy);  // 0x5004 again, d0: the last row at an address wins
  w.U8(DW_LNS_advance_pc).Uleb(4);
  EndSequence(w);  // end 0x5008
  SetAddress(w, 0x1000);
  SetDiscriminator(w, 7);
  w.U8(DW_LNS_copy);  // 0x1000 d7
  w.U8(DW_LNS_const_add_pc);
  EndSequence(w);  // end 0x1011
  w.Patch32(0, static_cast<uint32_t>(w.size() - 4));
  LineSections s;
  s.line = w.bytes();
  auto table = LineTable::Parse(s, 0, 8);
  ASSERT_TRUE(table) << table.error().ToString();
  EXPECT_EQ(table->Discriminator(table->Find(0x1000)), 7u);
  EXPECT_EQ(table->Discriminator(table->Find(0x5000)), 3u);
  EXPECT_EQ(table->Discriminator(table->Find(0x5001)), 3u);
  EXPECT_EQ(table->Discriminator(table->Find(0x5002)), 0u);
  EXPECT_EQ(table->Discriminator(table->Find(0x5004)), 0u);
  EXPECT_EQ(table->Discriminator(nullptr), 0u);
  ASSERT_EQ(table->discriminators().size(), 2u);
  EXPECT_LT(table->discriminators()[0].row, table->discriminators()[1].row);
}

// A DWARF 5 table: directories DIR0, include, /usr/include; files main.c and main.c in directory
// 0, util.h in include, stdio.h in /usr/include; one row at 0x2000 in file 0. The table reads
// the sections' bytes in place: they live in `sections`.
struct SectionBytes {
  std::vector<uint8_t> line, line_str;
};
Result<LineTable> Version5Table(std::string_view dir0, SectionBytes& sections) {
  std::vector<uint8_t>& line_str = sections.line_str;
  auto add = [&](std::string_view s) {
    uint32_t off = static_cast<uint32_t>(line_str.size());
    line_str.insert(line_str.end(), s.begin(), s.end());
    line_str.push_back(0);
    return off;
  };
  uint32_t comp = add(dir0);
  uint32_t inc = add("include");
  uint32_t abs = add("/usr/include");
  uint32_t main_c = add("main.c");
  uint32_t util_h = add("util.h");
  uint32_t std_h = add("stdio.h");
  ByteWriter w;
  w.U32(0).U16(5).U8(8).U8(0);
  size_t hl = w.size();
  w.U32(0);
  size_t hs = w.size();
  StandardFields(w, 5);
  w.U8(1).Uleb(DW_LNCT_path).Uleb(DW_FORM_line_strp);
  w.Uleb(3).U32(comp).U32(inc).U32(abs);
  w.U8(3)
      .Uleb(DW_LNCT_path)
      .Uleb(DW_FORM_line_strp)
      .Uleb(DW_LNCT_directory_index)
      .Uleb(DW_FORM_udata);
  w.Uleb(DW_LNCT_MD5).Uleb(DW_FORM_data16);
  std::vector<uint8_t> md5(16, 0xaa);
  w.Uleb(4);
  w.U32(main_c).Uleb(0).Raw(md5);
  w.U32(main_c).Uleb(0).Raw(md5);
  w.U32(util_h).Uleb(1).Raw(md5);
  w.U32(std_h).Uleb(2).Raw(md5);
  w.Patch32(hl, static_cast<uint32_t>(w.size() - hs));
  SetAddress(w, 0x2000);
  w.U8(DW_LNS_set_file).Uleb(0).U8(DW_LNS_copy);
  w.U8(DW_LNS_advance_pc).Uleb(4);
  EndSequence(w);
  w.Patch32(0, static_cast<uint32_t>(w.size() - 4));
  sections.line = std::move(w.bytes());
  LineSections s;
  s.line = sections.line;
  s.line_str = line_str;
  return LineTable::Parse(s, 0, 8);
}

TEST(LineTableTest, Version5EntryFormatsAndPaths) {
  SectionBytes bytes;
  auto table = Version5Table("/build", bytes);
  ASSERT_TRUE(table) << table.error().ToString();
  std::string p;
  ASSERT_TRUE(table->FilePath(0, "/build", &p));
  EXPECT_EQ(p, "/build/main.c");  // directory 0 is the compilation directory itself
  ASSERT_TRUE(table->FilePath(2, "/build", &p));
  EXPECT_EQ(p, "/build/include/util.h");
  ASSERT_TRUE(table->FilePath(3, "/build", &p));
  EXPECT_EQ(p, "/usr/include/stdio.h");
  EXPECT_FALSE(table->FilePath(4, "/build", &p));
  // A relative compilation directory (Debian's "-ffile-prefix-map" builds) is prepended to a
  // relative include directory, as llvm-symbolizer does.
  ASSERT_TRUE(table->FilePath(2, "./lib", &p));
  EXPECT_EQ(p, "./lib/include/util.h");
  // Relative (--relativenames): neither the compilation directory nor directory 0, which is
  // it; other directories stay, absolute ones too.
  ASSERT_TRUE(table->FilePath(0, "/build", &p, /*relative=*/true));
  EXPECT_EQ(p, "main.c");
  ASSERT_TRUE(table->FilePath(2, "/build", &p, /*relative=*/true));
  EXPECT_EQ(p, "include/util.h");
  ASSERT_TRUE(table->FilePath(3, "/build", &p, /*relative=*/true));
  EXPECT_EQ(p, "/usr/include/stdio.h");
  ASSERT_NE(table->Find(0x2000), nullptr);
  EXPECT_EQ(table->Find(0x2000)->file, 0u);
}

// Debian's builds: compilation directory and directory 0 both "./stdlib". Directory 0 is the
// compilation directory, joined once as llvm-symbolizer 16 joins it (14 printed
// ./stdlib/./stdlib/main.c; LLVM's test symbolize_function_start_v5).
TEST(LineTableTest, Version5DirectoryZeroIsTheCompilationDirectoryOnce) {
  SectionBytes bytes;
  auto table = Version5Table("./stdlib", bytes);
  ASSERT_TRUE(table) << table.error().ToString();
  std::string p;
  ASSERT_TRUE(table->FilePath(0, "./stdlib", &p));
  EXPECT_EQ(p, "./stdlib/main.c");
  ASSERT_TRUE(table->FilePath(2, "./stdlib", &p));
  EXPECT_EQ(p, "./stdlib/include/util.h");
  ASSERT_TRUE(table->FilePath(0, "./stdlib", &p, /*relative=*/true));
  EXPECT_EQ(p, "main.c");
}

TEST(LineTableTest, AppendPathJoinsLikeLlvm) {
  std::string p;
  AppendPath(&p, "/a/");
  AppendPath(&p, "");
  AppendPath(&p, "b");
  AppendPath(&p, "/c");
  EXPECT_EQ(p, "/a/b/c");
}

// Found by fuzz_dwarf_line: a v5 header whose entry formats consume no bytes (none at all, or
// only DW_FORM_flag_present) with a huge entry count used to add billions of entries without
// reading input. It must be an error, quickly and without the memory.
TEST(LineTableTest, HugeEntryCountsWithZeroSizedFormatsAreErrors) {
  for (bool flag_present_format : {false, true}) {
    ByteWriter w;
    w.U32(0).U16(5).U8(8).U8(0);
    size_t hl = w.size();
    w.U32(0);
    size_t hs = w.size();
    StandardFields(w, 5);
    if (flag_present_format) {
      w.U8(1).Uleb(DW_LNCT_path).Uleb(DW_FORM_flag_present);
    } else {
      w.U8(0);
    }
    w.Uleb(uint64_t{1} << 40);  // directories_count
    w.U8(0).Uleb(0);            // no file formats, no files
    w.Patch32(hl, static_cast<uint32_t>(w.size() - hs));
    EndSequence(w);
    w.Patch32(0, static_cast<uint32_t>(w.size() - 4));
    LineSections s;
    s.line = w.bytes();
    EXPECT_FALSE(LineTable::Parse(s, 0, 8)) << "flag_present format: " << flag_present_format;
  }
}

TEST(LineTableTest, BadHeadersAreErrors) {
  testing::TinyDwarf t = testing::BuildTinyDwarf(4);
  LineSections s;
  // Truncated at every length: an error or a table, never a crash.
  for (size_t n = 0; n < t.line.size(); ++n) {
    std::vector<uint8_t> cut(t.line.begin(), t.line.begin() + static_cast<ptrdiff_t>(n));
    s.line = cut;
    auto table = LineTable::Parse(s, 0, 8);
    if (n < 10) {
      EXPECT_FALSE(table);
    }
  }
  std::vector<uint8_t> bad = t.line;
  bad[4] = 9;  // version 9
  s.line = bad;
  EXPECT_FALSE(LineTable::Parse(s, 0, 8));
  bad = t.line;
  bad[14] = 0;  // line_range 0 would divide by zero
  s.line = bad;
  auto zero = LineTable::Parse(s, 0, 8);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message.find("line_range"), std::string::npos);
  s.line = t.line;
  EXPECT_FALSE(LineTable::Parse(s, t.line.size() + 5, 8));
}

}  // namespace
}  // namespace stacksym::dwarf
