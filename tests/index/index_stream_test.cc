// An index built while a compressed .debug_info streams in, each unit exported and its bytes
// given back as soon as they arrive (UnitCache::ExportWhileStreaming, with the rows of each
// line table freed once encoded), must be the index built from the whole section, byte for
// byte. On Debian's libc debug file (libc6-dbg): the fixtures' sections are too small to be
// mapped, and only mapped buffers are given back.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "index/index_builder.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

const std::string kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

std::vector<uint8_t> Bytes(const index::IndexImage& image) {
  std::vector<uint8_t> out;
  for (std::span<const uint8_t> piece : image.pieces())
    out.insert(out.end(), piece.begin(), piece.end());
  return out;
}

TEST(IndexStreamedBuildTest, SameIndexAsFromTheWholeSection) {
  auto elf_streamed = ElfFile::Open(kLibc);
  auto elf_whole = ElfFile::Open(kLibc);
  ASSERT_TRUE(elf_streamed && elf_whole);
  index::IndexOptions streamed;
  streamed.cache_dir = std::string(STACKSYM_BINARY_DIR) + "/index_stream_test_cache";
  streamed.threads = 2;
  index::IndexOptions whole = streamed;
  streamed.stream_info_from = 0;
  whole.stream_info_from = ~uint64_t{0};
  std::unique_ptr<dwarf::DebugInfoSource> source;
  Result<index::IndexImage> a = index::IndexBuilder::Build(*elf_streamed, streamed, &source);
  Result<index::IndexImage> b = index::IndexBuilder::Build(*elf_whole, whole);
  ASSERT_TRUE(a) << a.error().ToString();
  ASSERT_TRUE(b) << b.error().ToString();
  if (source == nullptr) GTEST_SKIP() << "no DWARF for " << kLibc << ": libc6-dbg is missing";
  EXPECT_GT(source->units().released_unit_count(), 100u) << "units given back as exported";
  EXPECT_TRUE(source->retired());
  std::vector<uint8_t> bytes_a = Bytes(*a), bytes_b = Bytes(*b);
  EXPECT_GT(bytes_a.size(), size_t{1} << 20);
  EXPECT_TRUE(bytes_a == bytes_b) << bytes_a.size() << " vs " << bytes_b.size() << " bytes";
}

}  // namespace
}  // namespace stacksym
