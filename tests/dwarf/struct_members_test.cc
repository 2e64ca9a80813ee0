// StructMembers: member offsets by name from the DWARF of fixtures built with gcc and clang,
// checked against offsetof() and the bits a bit field sets in this (same-ABI) build.
#include "dwarf/struct_members.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dwarf/debug_files.h"
#include "dwarf/dwarf_file.h"
#include "stacksym/elf.h"

extern "C" {
#include "fixtures/struct_layout.h"
}

namespace stacksym::dwarf {
namespace {

// The first bit a bit field sets in a zeroed object, counted from the object's first byte's
// least significant bit.
template <class T, class Set>
int FirstBitSet(Set set) {
  T object;
  std::memset(&object, 0, sizeof(object));
  set(object);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&object);
  for (size_t i = 0; i < sizeof(object); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      if (bytes[i] & (1u << bit)) return static_cast<int>(i * 8 + bit);
    }
  }
  return -1;
}

class StructMembersTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/struct_layout_" + GetParam();
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf) << elf.error().ToString();
    elf_ = *elf;
    auto sections = LoadDwarfSections(*elf_);
    ASSERT_TRUE(sections) << sections.error().ToString();
    sections_ = *sections;
    file_ = std::make_unique<DwarfFile>(sections_);
    ASSERT_TRUE(file_->ScanUnits());
  }

  StructMembers FindAll() {
    std::vector<std::string_view> names = {"outer_tag", "outer_t", "ascii_like", "inner",
                                           "not_there"};
    return StructMembers::Find(*file_, names);
  }

  std::shared_ptr<ElfFile> elf_;
  DwarfSections sections_;
  std::unique_ptr<DwarfFile> file_;
};

TEST_P(StructMembersTest, OffsetsAsTheCompilerLaidThemOut) {
  StructMembers m = FindAll();
  ASSERT_TRUE(m.Has("outer_tag"));
  ASSERT_TRUE(m.Has("outer_t"));     // a typedef of a struct tag
  ASSERT_TRUE(m.Has("ascii_like"));  // a typedef of an anonymous struct
  EXPECT_FALSE(m.Has("not_there"));

  auto offset = [&](const char* name, const char* path) -> int64_t {
    std::optional<MemberLocation> loc = m.Member(name, path);
    if (!loc) return -1;
    EXPECT_EQ(loc->bit_size, 0u) << path;
    return static_cast<int64_t>(loc->offset);
  };
  EXPECT_EQ(offset("outer_tag", "c"), 0);
  EXPECT_EQ(offset("outer_tag", "in"), static_cast<int64_t>(offsetof(outer_t, in)));
  EXPECT_EQ(offset("outer_tag", "in.b"), static_cast<int64_t>(offsetof(outer_t, in.b)));
  EXPECT_EQ(offset("outer_t", "u2"), static_cast<int64_t>(offsetof(outer_t, u2)));  // anonymous
  EXPECT_EQ(offset("outer_tag", "str.length"), static_cast<int64_t>(offsetof(outer_t, str.length)));
  EXPECT_EQ(offset("outer_tag", "str.state"), static_cast<int64_t>(offsetof(outer_t, str.state)));
  EXPECT_EQ(offset("outer_tag", "named.deep.b"),
            static_cast<int64_t>(offsetof(outer_t, named.deep.b)));
  EXPECT_EQ(offset("outer_tag", "next"), static_cast<int64_t>(offsetof(outer_t, next)));
  EXPECT_EQ(offset("outer_tag", "tail"), static_cast<int64_t>(offsetof(outer_t, tail)));
  EXPECT_EQ(offset("ascii_like", "wstr"), static_cast<int64_t>(offsetof(ascii_like, wstr)));

  EXPECT_EQ(m.Size("ascii_like"), sizeof(ascii_like));
  EXPECT_EQ(m.Size("outer_tag"), sizeof(outer_t));
  EXPECT_EQ(m.Size("inner"), sizeof(inner));
}

TEST_P(StructMembersTest, BitFields) {
  StructMembers m = FindAll();
  struct Case {
    const char* path;
    int first_bit;
    uint32_t size;
  };
  Case cases[] = {
      {"state.interned", FirstBitSet<ascii_like>([](ascii_like& a) { a.state.interned = 3; }), 2},
      {"state.kind", FirstBitSet<ascii_like>([](ascii_like& a) { a.state.kind = 7; }), 3},
      {"state.compact", FirstBitSet<ascii_like>([](ascii_like& a) { a.state.compact = 1; }), 1},
      {"state.ascii", FirstBitSet<ascii_like>([](ascii_like& a) { a.state.ascii = 1; }), 1},
      {"state.later", FirstBitSet<ascii_like>([](ascii_like& a) { a.state.later = 2047; }), 11},
  };
  for (const Case& c : cases) {
    std::optional<MemberLocation> loc = m.Member("ascii_like", c.path);
    ASSERT_TRUE(loc) << c.path;
    EXPECT_EQ(static_cast<int>(loc->offset * 8 + loc->bit_offset), c.first_bit) << c.path;
    EXPECT_LT(loc->bit_offset, 8u) << c.path;
    EXPECT_EQ(loc->bit_size, c.size) << c.path;
  }
  // Through the outer struct as well.
  std::optional<MemberLocation> kind = m.Member("outer_tag", "str.state.kind");
  ASSERT_TRUE(kind);
  EXPECT_EQ(kind->offset * 8 + kind->bit_offset,
            offsetof(outer_t, str) * 8 +
                FirstBitSet<ascii_like>([](ascii_like& a) { a.state.kind = 7; }));
}

TEST_P(StructMembersTest, MissingMembersAndPaths) {
  StructMembers m = FindAll();
  EXPECT_FALSE(m.Member("outer_tag", "nope"));
  EXPECT_FALSE(m.Member("outer_tag", "next.c"));  // a pointer is not followed
  EXPECT_FALSE(m.Member("outer_tag", "in.b.x"));  // b is a long
  EXPECT_FALSE(m.Member("outer_tag", ""));
  EXPECT_FALSE(m.Member("outer_tag", "in."));
  EXPECT_FALSE(m.Member("not_there", "c"));
  EXPECT_FALSE(m.Size("not_there"));
}

// Damaged .debug_info: whatever is found is found, nothing crashes.
TEST_P(StructMembersTest, DamagedDebugInfoIsNotACrash) {
  std::vector<uint8_t> info(sections_.info.begin(), sections_.info.end());
  for (size_t cut : {info.size() / 2, info.size() / 3, size_t{40}}) {
    std::vector<uint8_t> bytes(info.begin(), info.begin() + static_cast<std::ptrdiff_t>(cut));
    DwarfSections damaged = sections_;
    damaged.info = bytes;
    DwarfFile file(damaged);
    (void)file.ScanUnits();
    std::vector<std::string_view> names = {"outer_tag", "ascii_like"};
    StructMembers m = StructMembers::Find(file, names);
    (void)m.Member("outer_tag", "str.state.kind");
  }
  // Every byte of the first unit's DIEs flipped in turn.
  for (size_t i = 12; i < std::min<size_t>(info.size(), 400); ++i) {
    std::vector<uint8_t> bytes = info;
    bytes[i] ^= 0xff;
    DwarfSections damaged = sections_;
    damaged.info = bytes;
    DwarfFile file(damaged);
    (void)file.ScanUnits();
    std::vector<std::string_view> names = {"outer_tag", "ascii_like", "inner"};
    StructMembers m = StructMembers::Find(file, names);
    (void)m.Member("outer_tag", "named.deep.b");
    (void)m.Size("inner");
  }
}

INSTANTIATE_TEST_SUITE_P(Compilers, StructMembersTest,
                         ::testing::Values("gcc_d5", "gcc_d4", "gcc_d2", "clang_d5", "clang_d4"));

}  // namespace
}  // namespace stacksym::dwarf
