// The demangled-name memo (src/index/name_memo.h): its file round-trips, a damaged,
// truncated or forged one is rejected whole (never half read), one of another index is stale,
// the size bound keeps the rest in memory; and through the cache, lookups read their names from
// it (a forged name shows) while a damaged one changes no answer and is replaced.
#include "index/name_memo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "index/index_cache.h"
#include "index_test_util.h"
#include "real_test_util.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using index::EncodeNameMemo;
using index::NameMemo;
using index::NameMemoBinding;
using index::NameMemoEntry;
using index::NameMemoHeader;
using index::ParseNameMemo;
using testing::ReadBytes;
using testing::RealTempDir;
using testing::WriteBytes;

constexpr NameMemoBinding kBinding{0x12345678u, 987654};

// A memo file of three names, saved through NameMemo.
std::string SavedMemo(const RealTempDir& dir) {
  std::string path = dir.path() + "/x.symnames";
  NameMemo memo(path, kBinding);
  EXPECT_TRUE(memo.Load());
  memo.Add(30, "third(int)");
  memo.Add(10, "first()");
  memo.Add(20, "");
  EXPECT_EQ(memo.added(), 3u);
  EXPECT_TRUE(memo.Save());
  EXPECT_EQ(memo.added(), 0u);
  return path;
}

TEST(NameMemoTest, SavedNamesAreFoundAfterLoading) {
  RealTempDir dir;
  std::string path = SavedMemo(dir);
  NameMemo memo(path, kBinding);
  bool stale = true;
  ASSERT_TRUE(memo.Load(&stale));
  EXPECT_FALSE(stale);
  std::string text = "old";
  EXPECT_TRUE(memo.Find(10, &text));
  EXPECT_EQ(text, "first()");
  EXPECT_TRUE(memo.Find(20, &text));
  EXPECT_EQ(text, "");
  EXPECT_TRUE(memo.Find(30, &text));
  EXPECT_EQ(text, "third(int)");
  EXPECT_FALSE(memo.Find(15, &text));
  EXPECT_FALSE(memo.Find(40, &text));
  // Nothing added: Save writes nothing (the file keeps its bytes and its time).
  std::vector<uint8_t> before = ReadBytes(path);
  ASSERT_TRUE(memo.Save());
  EXPECT_EQ(ReadBytes(path), before);
  // Added names are merged with the loaded ones, in key order.
  memo.Add(25, "between");
  ASSERT_TRUE(memo.Save());
  NameMemo again(path, kBinding);
  ASSERT_TRUE(again.Load());
  EXPECT_TRUE(again.Find(25, &text));
  EXPECT_EQ(text, "between");
  EXPECT_TRUE(again.Find(30, &text));
  EXPECT_EQ(text, "third(int)");
}

TEST(NameMemoTest, MissingFileIsEmptyAndAnotherIndexsIsStale) {
  RealTempDir dir;
  NameMemo missing(dir.path() + "/none.symnames", kBinding);
  EXPECT_TRUE(missing.Load());
  std::string text;
  EXPECT_FALSE(missing.Find(10, &text));

  std::string path = SavedMemo(dir);
  for (NameMemoBinding other : {NameMemoBinding{kBinding.index_crc + 1, kBinding.index_size},
                                NameMemoBinding{kBinding.index_crc, kBinding.index_size + 1}}) {
    NameMemo memo(path, other);
    bool stale = false;
    EXPECT_FALSE(memo.Load(&stale));
    EXPECT_TRUE(stale);
    EXPECT_FALSE(memo.Find(10, &text)) << "a stale memo's names were used";
  }
}

TEST(NameMemoTest, EveryFlippedByteAndTruncationIsRejected) {
  RealTempDir dir;
  std::string path = SavedMemo(dir);
  const std::vector<uint8_t> good = ReadBytes(path);
  ASSERT_TRUE(ParseNameMemo(good, kBinding));
  std::vector<uint64_t> aligned((good.size() + 7) / 8);
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x21;
    std::memcpy(aligned.data(), bad.data(), bad.size());
    bool stale = true;
    auto parsed = ParseNameMemo({reinterpret_cast<const uint8_t*>(aligned.data()), bad.size()},
                                kBinding, &stale);
    EXPECT_FALSE(parsed) << "byte " << i;
    EXPECT_FALSE(stale) << "byte " << i << ": damage taken for another index's memo";
  }
  for (size_t length = 0; length < good.size(); ++length) {
    WriteBytes(path, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(length)));
    NameMemo memo(path, kBinding);
    EXPECT_FALSE(memo.Load()) << "truncated to " << length;
    std::string text;
    EXPECT_FALSE(memo.Find(10, &text)) << "truncated to " << length;
  }
}

// Forged files with valid checksums: keys out of order or repeated, text past the end.
TEST(NameMemoTest, ForgedEntriesAreRejected) {
  const std::string text = "abcdef";
  std::vector<uint64_t> aligned;  // the last file parsed, which its view points into
  auto parse = [&](std::vector<NameMemoEntry> entries) {
    std::vector<uint8_t> file = EncodeNameMemo(entries, text, kBinding);
    aligned.assign((file.size() + 7) / 8, 0);
    std::memcpy(aligned.data(), file.data(), file.size());
    return ParseNameMemo({reinterpret_cast<const uint8_t*>(aligned.data()), file.size()}, kBinding);
  };
  EXPECT_TRUE(parse({{1, 0, 3}, {2, 3, 3}}));
  EXPECT_FALSE(parse({{2, 0, 3}, {1, 3, 3}}));
  EXPECT_FALSE(parse({{1, 0, 3}, {1, 3, 3}}));
  EXPECT_FALSE(parse({{1, 4, 3}}));
  EXPECT_FALSE(parse({{1, 7, 0}}));
  EXPECT_FALSE(parse({{1, 0xffffffffu, 2}}));
  auto view = parse({{1, 6, 0}, {5, 1, 5}});
  ASSERT_TRUE(view);
  EXPECT_EQ(view->text.substr(view->entries[1].offset, view->entries[1].size), "bcdef");
}

TEST(NameMemoTest, NamesOverTheBoundStayInMemory) {
  RealTempDir dir;
  std::string path = dir.path() + "/big.symnames";
  const size_t quarter = index::kNameMemoMaxText / 4;
  NameMemo memo(path, kBinding);
  for (uint64_t key = 1; key <= 5; ++key) memo.Add(key, std::string(quarter, char('a' + key)));
  ASSERT_TRUE(memo.Save());
  std::string text;
  EXPECT_TRUE(memo.Find(5, &text)) << "a name over the bound was forgotten";
  EXPECT_EQ(text, std::string(quarter, 'f'));
  NameMemo loaded(path, kBinding);
  ASSERT_TRUE(loaded.Load());
  for (uint64_t key = 1; key <= 4; ++key) {
    EXPECT_TRUE(loaded.Find(key, &text)) << key;
    EXPECT_EQ(text.size(), quarter);
  }
  EXPECT_FALSE(loaded.Find(5, &text)) << "the memo grew past its bound";
  // A full memo is not rewritten for names that cannot fit.
  std::vector<uint8_t> before = ReadBytes(path);
  loaded.Add(6, "more");
  EXPECT_TRUE(loaded.Save());
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_TRUE(loaded.Find(6, &text));
}

TEST(NameMemoTest, SavingIsWorthItForManyNamesOnly) {
  NameMemo memo("", kBinding);
  EXPECT_FALSE(memo.WorthSaving());
  memo.Add(1, "x");
  EXPECT_TRUE(memo.WorthSaving());  // nothing loaded: any name is many
  for (uint64_t key = 2; key <= 64; ++key) memo.Add(key, "y");
  ASSERT_TRUE(memo.Save());  // in memory only: the 64 become the loaded ones
  EXPECT_FALSE(memo.WorthSaving());
  memo.Add(100, "z");
  memo.Add(101, "z");
  memo.Add(102, "z");
  EXPECT_FALSE(memo.WorthSaving()) << "3 new names against 64";
  memo.Add(103, "z");
  EXPECT_TRUE(memo.WorthSaving()) << "4 new names against 64: a sixteenth";
  EXPECT_FALSE(memo.WorthSaving(5)) << "asked for at least 5";
}

// Through the cache: the first run writes the memo of the names it demangled; a later run's
// lookups take their names from it (shown by forging one), and a damaged memo changes no
// answer and is replaced by a sound one.
class NameMemoCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";
    auto elf = ElfFile::Open(path_);
    ASSERT_TRUE(elf);
    addresses_ = testing::SegmentAddresses(**elf, 3);
    expected_ = testing::Answers(path_, addresses_, SymbolizeOptions{});
    cached_.cache_dir = cache_.path();
    memo_path_ = index::NameMemoPath(testing::IndexPathFor(path_, cache_.path()));
    ASSERT_EQ(testing::FirstDifferences(addresses_, expected_,
                                        testing::Answers(path_, addresses_, cached_)),
              "");
  }
  // The memo's bytes, 8-byte aligned, parsed.
  index::NameMemoView Parsed(std::vector<uint64_t>* storage, size_t* size) {
    std::vector<uint8_t> bytes = ReadBytes(memo_path_);
    storage->assign((bytes.size() + 7) / 8, 0);
    std::memcpy(storage->data(), bytes.data(), bytes.size());
    *size = bytes.size();
    NameMemoHeader header;
    std::memcpy(&header, bytes.data(), std::min(bytes.size(), sizeof(header)));
    auto view = ParseNameMemo({reinterpret_cast<const uint8_t*>(storage->data()), bytes.size()},
                              {header.index_crc, header.index_size});
    EXPECT_TRUE(view) << view.error().ToString();
    return view ? *view : index::NameMemoView{};
  }
  std::string path_;
  std::vector<uint64_t> addresses_;
  std::vector<std::string> expected_;
  RealTempDir cache_;
  SymbolizeOptions cached_;
  std::string memo_path_;
};

TEST_F(NameMemoCacheTest, LookupsReadTheirNamesFromTheMemo) {
  std::vector<uint64_t> storage;
  size_t size = 0;
  index::NameMemoView view = Parsed(&storage, &size);
  ASSERT_GT(view.entries.size(), 10u) << "the first run saved few demangled names";
  // Every name of the memo, upper-cased in place: the answers must show it.
  std::string forged(view.text);
  for (char& c : forged) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  NameMemoHeader header;
  std::memcpy(&header, storage.data(), sizeof(header));
  std::vector<NameMemoEntry> entries(view.entries.begin(), view.entries.end());
  WriteBytes(memo_path_, EncodeNameMemo(entries, forged, {header.index_crc, header.index_size}));
  std::vector<std::string> actual = testing::Answers(path_, addresses_, cached_);
  ASSERT_EQ(actual.size(), expected_.size());
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  size_t forged_answers = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected_[i]) continue;
    ++forged_answers;
    EXPECT_EQ(upper(actual[i]), upper(expected_[i])) << "more than the names' case differs";
  }
  EXPECT_GT(forged_answers, 10u) << "the memo's names were not used";
}

TEST_F(NameMemoCacheTest, DamagedMemoChangesNoAnswerAndIsReplaced) {
  const std::vector<uint8_t> good = ReadBytes(memo_path_);
  for (size_t at : {size_t{3}, sizeof(NameMemoHeader) + 5, good.size() / 2, good.size() - 1}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x44;
    WriteBytes(memo_path_, bad);
    ASSERT_EQ(testing::FirstDifferences(addresses_, expected_,
                                        testing::Answers(path_, addresses_, cached_)),
              "")
        << "byte " << at;
    std::vector<uint64_t> storage;
    size_t size = 0;
    EXPECT_GT(Parsed(&storage, &size).entries.size(), 10u) << "not replaced after byte " << at;
  }
}

}  // namespace
}  // namespace stacksym
