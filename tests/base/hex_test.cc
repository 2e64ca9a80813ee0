// The hex helpers against printf (whose "0x%llx" and "%08x" they replace, and whose bytes the
// CLI's llvm-symbolizer-compatible output depends on) and against hand-written expectations.
#include "base/hex.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace stacksym {
namespace {

std::string Printf(const char* format, unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::vector<uint64_t> Values() {
  std::vector<uint64_t> values = {0,
                                  1,
                                  9,
                                  10,
                                  15,
                                  16,
                                  255,
                                  256,
                                  0x4a2f0,
                                  UINT32_MAX,
                                  uint64_t{UINT32_MAX} + 1,
                                  UINT64_MAX - 1,
                                  UINT64_MAX};
  for (int bit = 0; bit < 64; ++bit) {
    values.push_back(uint64_t{1} << bit);
    values.push_back((uint64_t{1} << bit) - 1);
  }
  std::mt19937_64 random(30);
  for (int i = 0; i < 1000; ++i) values.push_back(random() >> (i % 64));
  return values;
}

TEST(HexTest, HexU64IsPrintfs0xLlx) {
  for (uint64_t v : Values()) {
    EXPECT_EQ(HexU64(v), Printf("0x%llx", v)) << v;
    char buf[kHexU64Size];
    EXPECT_EQ(std::string(buf, WriteHexU64(v, buf)), Printf("0x%llx", v)) << v;
  }
  EXPECT_EQ(HexU64(UINT64_MAX).size(), kHexU64Size);
}

TEST(HexTest, HexU32PaddedIsPrintfs08x) {
  for (uint64_t v : Values()) {
    uint32_t w = static_cast<uint32_t>(v);
    EXPECT_EQ(HexU32Padded(w), Printf("%08x", w)) << w;
  }
}

TEST(HexTest, BytesToHexAndBack) {
  std::vector<uint8_t> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
  EXPECT_EQ(ToHex(bytes), "00017f80abcdefff");
  EXPECT_EQ(ToHex({}), "");
  EXPECT_EQ(FromHex("00017f80abcdefff"), bytes);
  EXPECT_EQ(FromHex("00017F80ABCDEFFF"), bytes);  // either case
  EXPECT_EQ(FromHex(""), std::vector<uint8_t>{});
  std::vector<uint8_t> all(256);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(FromHex(ToHex(all)), all);
}

TEST(HexTest, FromHexRefusesWhatIsNotHexBytes) {
  EXPECT_FALSE(FromHex("abc"));    // odd length
  EXPECT_FALSE(FromHex("0xab"));   // no prefix
  EXPECT_FALSE(FromHex("ag"));     // not a digit
  EXPECT_FALSE(FromHex("ab cd"));  // no separators
  EXPECT_FALSE(FromHex(std::string("a\0", 2)));
}

TEST(HexTest, HexDigitValues) {
  for (char c = '0'; c <= '9'; ++c) EXPECT_EQ(HexDigit(c), c - '0');
  for (char c = 'a'; c <= 'f'; ++c) EXPECT_EQ(HexDigit(c), c - 'a' + 10);
  for (char c = 'A'; c <= 'F'; ++c) EXPECT_EQ(HexDigit(c), c - 'A' + 10);
  for (char c : {'g', 'G', 'x', ' ', '/', ':', '@', '`', '\0'}) EXPECT_EQ(HexDigit(c), -1) << c;
}

}  // namespace
}  // namespace stacksym
