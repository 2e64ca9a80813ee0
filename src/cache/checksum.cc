#include "cache/checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace stacksym::cache {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // CRC32C, reflected

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t Crc32cTable(const uint8_t* p, size_t n, uint32_t crc) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint64_t Crc32cWords(const uint8_t* p, size_t words, uint64_t c) {
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, p + 8 * i, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  return c;
}

// Three streams of kStreamBytes summed side by side (the crc32 instruction's latency is three
// times its throughput), then joined: a register run over n more bytes is its value times
// x^(8n), a linear map of its bits, applied through four byte tables.
constexpr size_t kStreamBytes = 1360;  // 3 × 1360 = 4080 of a 4 KiB chunk
struct Shift {
  uint32_t table[4][256];
  __attribute__((target("sse4.2"))) explicit Shift(size_t bytes) {
    uint32_t column[32];
    for (int bit = 0; bit < 32; ++bit) {
      uint64_t c = uint64_t{1} << bit;
      for (size_t i = 0; i < bytes / 8; ++i) c = __builtin_ia32_crc32di(c, 0);
      column[bit] = static_cast<uint32_t>(c);
    }
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j) {
          if ((b >> j) & 1) v ^= column[8 * k + j];
        }
        table[k][b] = v;
      }
    }
  }
  uint32_t operator()(uint32_t c) const {
    return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^
           table[3][c >> 24];
  }
};

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const uint8_t* p, size_t n,
                                                          uint32_t crc) {
  uint64_t c = crc;
  if (n >= 3 * kStreamBytes) {
    static const Shift once(kStreamBytes);
    static const Shift twice(2 * kStreamBytes);
    while (n >= 3 * kStreamBytes) {
      uint64_t a = c, b = 0, d = 0;
      for (size_t i = 0; i < kStreamBytes; i += 8) {
        uint64_t wa, wb, wd;
        std::memcpy(&wa, p + i, 8);
        std::memcpy(&wb, p + kStreamBytes + i, 8);
        std::memcpy(&wd, p + 2 * kStreamBytes + i, 8);
        a = __builtin_ia32_crc32di(a, wa);
        b = __builtin_ia32_crc32di(b, wb);
        d = __builtin_ia32_crc32di(d, wd);
      }
      c = twice(static_cast<uint32_t>(a)) ^ once(static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
      p += 3 * kStreamBytes;
      n -= 3 * kStreamBytes;
    }
  }
  c = Crc32cWords(p, n / 8, c);
  p += n / 8 * 8;
  n %= 8;
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = __builtin_ia32_crc32qi(c32, *p);
    ++p;
    --n;
  }
  return c32;
}

// One cpuid leaf, asked the first time a checksum is summed. (__builtin_cpu_supports links
// libgcc's CPU model probe, a constructor that runs a dozen cpuid leaves when any stacksym
// process starts: on a VM each traps to the hypervisor, about 0.1 ms of every start.)
bool HasSse42() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_SSE4_2) != 0;
  }();
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (HasSse42()) return ~Crc32cHardware(bytes.data(), bytes.size(), c);
#endif
  return ~Crc32cTable(bytes.data(), bytes.size(), c);
}

}  // namespace stacksym::cache
