// Streamed decompression (elf::DecompressInto): output is reported final front to back in
// steps, ends exactly at the declared size, and every kind of bad stream — a wrong Adler-32,
// a cut, a size that lies either way — is an error, for zlib (ISA-L) and zstd.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <random>
#include <string>
#include <vector>

#include "elf/decompress.h"

namespace stacksym::elf {
namespace {

// Compressible but not trivial: words from a small vocabulary, like debug info strings.
std::vector<uint8_t> SampleData(size_t size) {
  std::mt19937 rng(11);
  const char* words[] = {"std::vector<", "int>", "::operator()", "/usr/include/",
                         "foo",          "bar_", "\x01\x02",     "\x11\x00\x13"};
  std::vector<uint8_t> out;
  while (out.size() < size) {
    std::string w = words[rng() % 8];
    out.insert(out.end(), w.begin(), w.end());
    out.push_back(static_cast<uint8_t>(rng()));
  }
  out.resize(size);
  return out;
}

std::vector<uint8_t> Zlib(const std::vector<uint8_t>& data) {
  uLongf size = compressBound(data.size());
  std::vector<uint8_t> out(size);
  EXPECT_EQ(compress2(out.data(), &size, data.data(), data.size(), 6), Z_OK);
  out.resize(size);
  return out;
}

std::vector<uint8_t> Zstd(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(ZSTD_compressBound(data.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

struct Outcome {
  Result<void> result;
  std::vector<uint8_t> bytes;
  std::vector<size_t> progress;
};

Outcome Decode(Compression kind, const std::vector<uint8_t>& stream, uint64_t declared) {
  Outcome o;
  o.bytes.assign(declared, 0);
  CompressedPayload payload{kind, stream, declared};
  o.result = DecompressInto(payload, o.bytes, [&](size_t n) { o.progress.push_back(n); });
  return o;
}

class DecompressStreamTest : public ::testing::TestWithParam<Compression> {
 protected:
  std::vector<uint8_t> Compress(const std::vector<uint8_t>& d) {
    return GetParam() == Compression::kZlib ? Zlib(d) : Zstd(d);
  }
};

TEST_P(DecompressStreamTest, ReportsProgressFrontToBackAndEndsAtTheSize) {
  std::vector<uint8_t> data = SampleData(5'300'000);  // several progress steps
  Outcome o = Decode(GetParam(), Compress(data), data.size());
  ASSERT_TRUE(o.result) << o.result.error().ToString();
  EXPECT_EQ(o.bytes, data);
  ASSERT_GE(o.progress.size(), 3u);
  for (size_t i = 1; i < o.progress.size(); ++i) EXPECT_GT(o.progress[i], o.progress[i - 1]);
  EXPECT_EQ(o.progress.back(), data.size());
}

TEST_P(DecompressStreamTest, BadStreamsAreErrors) {
  std::vector<uint8_t> data = SampleData(300'000);
  std::vector<uint8_t> stream = Compress(data);
  // Cut short.
  std::vector<uint8_t> cut(stream.begin(), stream.begin() + stream.size() / 2);
  EXPECT_FALSE(Decode(GetParam(), cut, data.size()).result);
  // The declared size lies, both ways.
  Outcome longer = Decode(GetParam(), stream, data.size() - 1);
  ASSERT_FALSE(longer.result);
  EXPECT_NE(longer.result.error().message.find("more than the declared"), std::string::npos)
      << longer.result.error().ToString();
  Outcome shorter = Decode(GetParam(), stream, data.size() + 1);
  ASSERT_FALSE(shorter.result);
  EXPECT_NE(shorter.result.error().message.find("not the declared"), std::string::npos)
      << shorter.result.error().ToString();
  // Garbage.
  EXPECT_FALSE(Decode(GetParam(), std::vector<uint8_t>(64, 0xee), 1000).result);
  EXPECT_FALSE(Decode(GetParam(), {}, 1000).result);
}

TEST(DecompressStream, ZlibChecksumIsVerified) {
  std::vector<uint8_t> data = SampleData(100'000);
  std::vector<uint8_t> stream = Zlib(data);
  stream.back() ^= 0x40;  // the Adler-32 trailer
  Outcome o = Decode(Compression::kZlib, stream, data.size());
  ASSERT_FALSE(o.result);
  EXPECT_NE(o.result.error().message.find("Adler-32"), std::string::npos)
      << o.result.error().ToString();
}

INSTANTIATE_TEST_SUITE_P(Kinds, DecompressStreamTest,
                         ::testing::Values(Compression::kZlib, Compression::kZstd),
                         [](const ::testing::TestParamInfo<Compression>& info) {
                           return std::string(info.param == Compression::kZlib ? "zlib" : "zstd");
                         });

}  // namespace
}  // namespace stacksym::elf
