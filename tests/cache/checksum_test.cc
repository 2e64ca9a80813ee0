// Crc32c: known answers, and the same sum whether a buffer is summed at once (three interleaved
// streams for every 4080 bytes, with SSE4.2) or in pieces of any length.
#include "cache/checksum.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

namespace stacksym::cache {
namespace {

TEST(CacheChecksumTest, Crc32cMatchesTheBytewiseDefinition) {
  const char* digits = "123456789";
  EXPECT_EQ(Crc32c({reinterpret_cast<const uint8_t*>(digits), 9}), 0xe3069283u);
  std::vector<uint8_t> bytes(9001);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31 % 251);
  EXPECT_EQ(Crc32c(bytes), 0x4112d7b6u);
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{4080}, size_t{4096}, size_t{4919},
                       size_t{8161}, size_t{9001}}) {
    std::span<const uint8_t> all(bytes);
    uint32_t first = Crc32c(all.first(split));
    EXPECT_EQ(Crc32c(all.subspan(split), first), 0x4112d7b6u) << split;
  }
}

}  // namespace
}  // namespace stacksym::cache
