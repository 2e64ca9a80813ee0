#include "elf/decompress.h"

#include <libdeflate.h>
#include <sys/mman.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"

namespace stacksym::elf {

namespace {

// No real stream expands more than this (deflate's limit is ~1032:1; zstd can do more only on
// degenerate runs, which debug sections are not). Refusing larger claims up front keeps a
// hostile header from making us reserve gigabytes.
constexpr uint64_t kMaxRatio = 2048;
constexpr uint64_t kRatioSlack = uint64_t{1} << 20;
constexpr uint64_t kMaxDecompressedSize = uint64_t{1} << 36;  // 64 GiB

// Below this, new[] is cheaper than a mapping; above it, a mapping of its own means untouched
// pages are never committed and the memory goes back to the system on release.
constexpr size_t kMapThreshold = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;

Error SizeMismatch(uint64_t produced, uint64_t declared, bool longer) {
  return Error(ErrorCode::kMalformed,
               longer ? "compressed data expands to more than the declared " +
                            std::to_string(declared) + " bytes"
                      : "compressed data expands to " + std::to_string(produced) +
                            " bytes, not the declared " + std::to_string(declared));
}

// Fresh anonymous memory is zeroed by the kernel on first touch, and for big sections that
// costs a good part of the decompression itself (more under virtualization). A second thread
// faults the output pages in (MADV_POPULATE_WRITE, content untouched) ahead of the decoder, so
// the zeroing runs on another core while this one decodes. Joined before the buffer is used.
class PopulateAhead {
 public:
  PopulateAhead(uint8_t* data, size_t size) {
    if (size < kPopulateThreshold) return;
    worker_ = std::thread([this, data, size] {
      constexpr size_t kChunk = size_t{8} << 20;
      for (size_t at = 0; at < size && !stop_.load(std::memory_order_relaxed); at += kChunk) {
        // Older kernels (before 5.14) reject the advice: the decoder then faults as usual.
        if (madvise(data + at, std::min(kChunk, size - at), MADV_POPULATE_WRITE) != 0) return;
      }
    });
  }
  ~PopulateAhead() {
    stop_.store(true, std::memory_order_relaxed);
    if (worker_.joinable()) worker_.join();
  }

 private:
  static constexpr size_t kPopulateThreshold = size_t{16} << 20;
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

// Whole-buffer inflate: the declared size is known, so libdeflate decodes straight into the
// final buffer (about twice zlib's speed) and checks the Adler-32 trailer itself.
Result<DecompressedBytes> Inflate(std::span<const uint8_t> input, uint64_t declared) {
  Result<DecompressedBytes> out = DecompressedBytes::Allocate(static_cast<size_t>(declared));
  if (!out) return out;
  PopulateAhead populate(out->data(), out->mapped() ? out->size() : 0);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == nullptr) return Error(ErrorCode::kInternal, "libdeflate_alloc_decompressor failed");
  size_t produced = 0;
  libdeflate_result rc = libdeflate_zlib_decompress(d, input.data(), input.size(), out->data(),
                                                    out->size(), &produced);
  libdeflate_free_decompressor(d);
  switch (rc) {
    case LIBDEFLATE_SUCCESS:
      if (produced != declared) return SizeMismatch(produced, declared, false);
      return out;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
      return SizeMismatch(declared + 1, declared, true);
    case LIBDEFLATE_SHORT_OUTPUT:  // only reported when no size pointer is passed
    case LIBDEFLATE_BAD_DATA:
    default:
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt or truncated");
  }
}

Result<DecompressedBytes> Unzstd(std::span<const uint8_t> input, uint64_t declared) {
  Result<DecompressedBytes> out = DecompressedBytes::Allocate(static_cast<size_t>(declared));
  if (!out) return out;
  PopulateAhead populate(out->data(), out->mapped() ? out->size() : 0);
  ZSTD_DStream* zs = ZSTD_createDStream();
  if (zs == nullptr) return Error(ErrorCode::kInternal, "ZSTD_createDStream failed");
  struct Free {
    ZSTD_DStream* s;
    ~Free() { ZSTD_freeDStream(s); }
  } free_stream{zs};
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t out_pos = 0;
  while (true) {
    // Once the buffer holds the declared size, decode into a one-byte probe: any further
    // output means the declared size lied.
    uint8_t probe;
    bool full = out_pos == out->size();
    ZSTD_outBuffer ob =
        full ? ZSTD_outBuffer{&probe, 1, 0} : ZSTD_outBuffer{out->data(), out->size(), out_pos};
    size_t in_before = in.pos;
    size_t out_before = ob.pos;
    size_t rc = ZSTD_decompressStream(zs, &ob, &in);
    if (ZSTD_isError(rc)) {
      return Error(ErrorCode::kMalformed,
                   std::string("zstd stream is corrupt: ") + ZSTD_getErrorName(rc));
    }
    if (full && ob.pos != 0) return SizeMismatch(out_pos + 1, declared, true);
    if (!full) out_pos = ob.pos;
    if (in.pos == in.size && rc == 0) break;  // every frame decoded and flushed
    if (in.pos == in_before && ob.pos == out_before) {
      return Error(ErrorCode::kMalformed, "zstd stream is truncated");
    }
  }
  if (out_pos != declared) return SizeMismatch(out_pos, declared, false);
  return out;
}

}  // namespace

void ReleaseDecompressed::operator()(uint8_t* p) const {
  if (mapped_size == 0) {
    delete[] p;
  } else {
    munmap(p, mapped_size);
  }
}

Result<DecompressedBytes> DecompressedBytes::Allocate(size_t size) {
  DecompressedBytes b;
  b.size_ = size;
  if (size < kMapThreshold) {
    b.data_ = std::unique_ptr<uint8_t, ReleaseDecompressed>(new (std::nothrow) uint8_t[size],
                                                            ReleaseDecompressed{});
    if (!b.data_) return Error(ErrorCode::kInternal, "out of memory for " + std::to_string(size));
    return b;
  }
  bool huge = size >= kHugePage;
  size_t mapped = (size + 4095) & ~size_t{4095};
  // Huge pages need 2 MiB-aligned addresses: map one huge page extra and trim both ends.
  size_t reserve = huge ? mapped + kHugePage : mapped;
  void* p = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Error(ErrorCode::kInternal,
                 "cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
  }
  auto* start = static_cast<uint8_t*>(p);
  if (huge) {
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = (base + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    size_t head = aligned - base;
    if (head != 0) munmap(p, head);
    size_t tail = reserve - head - mapped;
    if (tail != 0) munmap(start + head + mapped, tail);
    start += head;
    // Decompressed debug sections are written front to back, then read at random: huge pages
    // cut the page faults of the write and the TLB misses of the reads.
    madvise(start, mapped, MADV_HUGEPAGE);
  }
  b.data_ = std::unique_ptr<uint8_t, ReleaseDecompressed>(start, ReleaseDecompressed{mapped});
  return b;
}

Result<DecompressedBytes> Decompress(Compression kind, std::span<const uint8_t> input,
                                     uint64_t declared_size) {
  uint64_t plausible = uint64_t{input.size()} * kMaxRatio + kRatioSlack;
  if (declared_size > kMaxDecompressedSize || declared_size > plausible) {
    return Error(ErrorCode::kMalformed, "declared decompressed size " +
                                            std::to_string(declared_size) + " is implausible for " +
                                            std::to_string(input.size()) + " compressed bytes");
  }
  if (declared_size == 0) {
    return Error(ErrorCode::kMalformed, "compressed section declares a size of 0");
  }
  return kind == Compression::kZlib ? Inflate(input, declared_size) : Unzstd(input, declared_size);
}

Result<DecompressedBytes> DecompressSection(std::span<const uint8_t> raw, bool gabi,
                                            bool is_64bit) {
  ByteCursor c(raw);
  if (!gabi) {
    // Legacy GNU form: "ZLIB" then the size as 8 big-endian bytes, then a zlib stream.
    std::span<const uint8_t> magic = c.Bytes(4);
    std::span<const uint8_t> size_be = c.Bytes(8);
    if (!c.ok() || std::memcmp(magic.data(), "ZLIB", 4) != 0) {
      return Error(ErrorCode::kMalformed, "legacy compressed section lacks its \"ZLIB\" header");
    }
    uint64_t size = 0;
    for (uint8_t b : size_be) size = (size << 8) | b;
    return Decompress(Compression::kZlib, c.Bytes(c.remaining()), size);
  }
  CompressionHeader h = ReadCompressionHeader(c, is_64bit);
  if (!c.ok()) {
    return Error(ErrorCode::kMalformed, "compressed section is too small for its header");
  }
  switch (h.type) {
    case ELFCOMPRESS_ZLIB:
      return Decompress(Compression::kZlib, c.Bytes(c.remaining()), h.size);
    case ELFCOMPRESS_ZSTD:
      return Decompress(Compression::kZstd, c.Bytes(c.remaining()), h.size);
    default:
      return Error(ErrorCode::kUnsupported,
                   "unknown section compression type " + std::to_string(h.type));
  }
}

}  // namespace stacksym::elf
