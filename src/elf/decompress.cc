#include "elf/decompress.h"

#include <isa-l/igzip_lib.h>
#include <sys/mman.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "base/byte_cursor.h"
#include "base/parallel.h"
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
// the zeroing runs on another core while this one decodes. It keeps at most kAhead bytes
// ahead of the decoder: a reader that gives back what it has read (SectionStream::Release)
// bounds the section's resident size, and pages populated far ahead would undo that. Joined
// before returning.
class PopulateAhead {
 public:
  PopulateAhead(uint8_t* data, size_t size) {
    if (size < kPopulateThreshold) return;
    worker_ = std::make_unique<SpreadThread>([this, data, size] {
      for (size_t at = 0; at < size; at += kChunk) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return stop_ || at < produced_ + kAhead; });
          if (stop_) return;
        }
        // Older kernels (before 5.14) reject the advice: the decoder then faults as usual.
        if (madvise(data + at, std::min(kChunk, size - at), MADV_POPULATE_WRITE) != 0) return;
      }
    });
  }
  // The decoder's progress: the first `bytes` are written.
  void Produced(size_t bytes) {
    if (!worker_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      produced_ = bytes;
    }
    cv_.notify_one();
  }
  ~PopulateAhead() {
    if (!worker_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.reset();  // joins
  }

 private:
  static constexpr size_t kPopulateThreshold = size_t{16} << 20;
  static constexpr size_t kChunk = size_t{2} << 20;
  static constexpr size_t kAhead = size_t{8} << 20;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t produced_ = 0;
  bool stop_ = false;
  std::unique_ptr<SpreadThread> worker_;
};

// The compressed input's pages the decoder has read, dropped every kStep bytes when the input
// is a file mapping (CompressedPayload::stream_is_file_mapping): the kernel maps page-cache
// pages into the process as they are read, and a 95 MB debug file's would otherwise all stay
// resident until the file is closed. Pages shared with the bytes around the input are kept.
class InputPages {
 public:
  InputPages(std::span<const uint8_t> input, bool drop) : input_(input), drop_(drop) {
    released_to_ = (reinterpret_cast<uintptr_t>(input.data()) + kPage - 1) & ~(kPage - 1);
  }
  // The first `consumed` bytes of the input are read.
  void Consumed(size_t consumed) {
    if (!drop_) return;
    const uintptr_t to = (reinterpret_cast<uintptr_t>(input_.data()) + consumed) & ~(kPage - 1);
    if (to < released_to_ + kStep && consumed < input_.size()) return;
    if (to > released_to_) {
      madvise(reinterpret_cast<void*>(released_to_), to - released_to_, MADV_DONTNEED);
      released_to_ = to;
    }
  }

 private:
  static constexpr uintptr_t kPage = 4096;
  static constexpr uintptr_t kStep = uintptr_t{4} << 20;
  std::span<const uint8_t> input_;
  bool drop_;
  uintptr_t released_to_;
};

// Output is produced in steps of this size, each reported as final before the next.
constexpr size_t kProgressStep = size_t{1} << 20;

Error ZlibError(int rc) {
  switch (rc) {
    case ISAL_INCORRECT_CHECKSUM:
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt: it fails its Adler-32 check");
    case ISAL_INVALID_WRAPPER:
    case ISAL_UNSUPPORTED_METHOD:
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt: bad header");
    case ISAL_NEED_DICT:
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt: it needs a preset dictionary");
    default:
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt or truncated");
  }
}

// Streaming inflate with ISA-L (as fast as whole-buffer libdeflate here, and it can stop and
// report after each step); the zlib wrapper and Adler-32 trailer are checked by ISA-L.
Result<void> InflateInto(std::span<const uint8_t> input, std::span<uint8_t> out,
                         const std::function<void(size_t)>& progress, InputPages& pages) {
  auto state = std::make_unique<inflate_state>();
  isal_inflate_init(state.get());
  state->crc_flag = ISAL_ZLIB;
  state->next_in = const_cast<uint8_t*>(input.data());  // ISA-L does not write through it
  // avail_in is 32-bit: feed the input in pieces.
  size_t in_pos = 0;
  auto refill = [&] {
    if (state->avail_in == 0 && in_pos < input.size()) {
      size_t n = std::min<size_t>(input.size() - in_pos, uint32_t{1} << 30);
      state->next_in = const_cast<uint8_t*>(input.data() + in_pos);
      state->avail_in = static_cast<uint32_t>(n);
      in_pos += n;
    }
  };
  size_t produced = 0;
  while (state->block_state != ISAL_BLOCK_FINISH) {
    refill();
    if (produced == out.size()) {
      // Every declared byte is there; any further output means the size lied.
      uint8_t probe;
      state->next_out = &probe;
      state->avail_out = 1;
      uint32_t in_before = state->avail_in;
      int rc = isal_inflate(state.get());
      if (rc < 0 || rc == ISAL_NEED_DICT) return ZlibError(rc);
      if (state->avail_out == 0) return SizeMismatch(produced + 1, out.size(), true);
      if (state->block_state != ISAL_BLOCK_FINISH && state->avail_in == in_before &&
          (state->avail_in == 0 ? in_pos == input.size() : true)) {
        return ZlibError(ISAL_END_INPUT);  // stuck: truncated, or nothing it can decode
      }
      continue;
    }
    size_t step = std::min(kProgressStep, out.size() - produced);
    state->next_out = out.data() + produced;
    state->avail_out = static_cast<uint32_t>(step);
    uint32_t in_before = state->avail_in;
    int rc = isal_inflate(state.get());
    if (rc < 0 || rc == ISAL_NEED_DICT) return ZlibError(rc);
    size_t made = step - state->avail_out;
    produced += made;
    pages.Consumed(static_cast<size_t>(state->next_in - input.data()));
    if (made != 0 && progress) progress(produced);
    if (made == 0 && state->avail_in == in_before && state->block_state != ISAL_BLOCK_FINISH &&
        in_pos == input.size()) {
      return ZlibError(ISAL_END_INPUT);  // no input left and no progress: truncated
    }
  }
  if (produced != out.size()) return SizeMismatch(produced, out.size(), false);
  return {};
}

Result<void> UnzstdInto(std::span<const uint8_t> input, std::span<uint8_t> out,
                        const std::function<void(size_t)>& progress, InputPages& pages) {
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
    bool full = out_pos == out.size();
    size_t step_end = std::min(out.size(), out_pos + kProgressStep);
    ZSTD_outBuffer ob =
        full ? ZSTD_outBuffer{&probe, 1, 0} : ZSTD_outBuffer{out.data(), step_end, out_pos};
    size_t in_before = in.pos;
    size_t out_before = ob.pos;
    size_t rc = ZSTD_decompressStream(zs, &ob, &in);
    if (ZSTD_isError(rc)) {
      return Error(ErrorCode::kMalformed,
                   std::string("zstd stream is corrupt: ") + ZSTD_getErrorName(rc));
    }
    if (full && ob.pos != 0) return SizeMismatch(out_pos + 1, out.size(), true);
    pages.Consumed(in.pos);
    if (!full) {
      out_pos = ob.pos;
      if (out_pos != out_before && progress) progress(out_pos);
    }
    if (in.pos == in.size && rc == 0) break;  // every frame decoded and flushed
    if (in.pos == in_before && ob.pos == out_before && (full || ob.pos < ob.size)) {
      return Error(ErrorCode::kMalformed, "zstd stream is truncated");
    }
  }
  if (out_pos != out.size()) return SizeMismatch(out_pos, out.size(), false);
  return {};
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
  size_t mapped = (size + 4095) & ~size_t{4095};
  // Small pages, as the system gives them (no MADV_HUGEPAGE): written once front to back,
  // these buffers would fault in fewer huge pages, but on a VM that hands free memory back to
  // its host (free page reporting, in 2 MiB blocks) a fresh huge page is one the host must
  // back again: populating libceph-common's 154 MB .debug_info took 250-380 ms in huge pages
  // after two idle seconds, 37 ms in small ones, which the allocator takes from memory not
  // yet reported. A run after a pause: cold build 0.935 -> 0.853 s, direct 0.560 -> 0.474 s;
  // back-to-back runs, where freed huge pages are still backed, are unchanged.
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Error(ErrorCode::kInternal,
                 "cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
  }
  auto* start = static_cast<uint8_t*>(p);
  b.data_ = std::unique_ptr<uint8_t, ReleaseDecompressed>(start, ReleaseDecompressed{mapped});
  return b;
}

namespace {

Result<void> CheckPlausible(uint64_t declared_size, size_t input_size) {
  uint64_t plausible = uint64_t{input_size} * kMaxRatio + kRatioSlack;
  if (declared_size > kMaxDecompressedSize || declared_size > plausible) {
    return Error(ErrorCode::kMalformed, "declared decompressed size " +
                                            std::to_string(declared_size) + " is implausible for " +
                                            std::to_string(input_size) + " compressed bytes");
  }
  if (declared_size == 0) {
    return Error(ErrorCode::kMalformed, "compressed section declares a size of 0");
  }
  return {};
}

}  // namespace

Result<void> DecompressInto(const CompressedPayload& payload, std::span<uint8_t> out,
                            const std::function<void(size_t)>& progress) {
  if (out.size() != payload.size) {
    return Error(ErrorCode::kInvalidArgument, "output buffer size differs from the declared size");
  }
  PopulateAhead populate(out.data(), out.size());
  InputPages pages(payload.stream, payload.stream_is_file_mapping);
  auto made = [&](size_t bytes) {
    populate.Produced(bytes);
    if (progress) progress(bytes);
  };
  return payload.kind == Compression::kZlib ? InflateInto(payload.stream, out, made, pages)
                                            : UnzstdInto(payload.stream, out, made, pages);
}

Result<DecompressedBytes> Decompress(Compression kind, std::span<const uint8_t> input,
                                     uint64_t declared_size) {
  if (Result<void> r = CheckPlausible(declared_size, input.size()); !r) return r.error();
  Result<DecompressedBytes> out = DecompressedBytes::Allocate(static_cast<size_t>(declared_size));
  if (!out) return out;
  CompressedPayload payload{kind, input, declared_size};
  if (Result<void> r = DecompressInto(payload, {out->data(), out->size()}); !r) return r.error();
  return out;
}

Result<CompressedPayload> ParseCompressedSection(std::span<const uint8_t> raw, bool gabi,
                                                 bool is_64bit) {
  ByteCursor c(raw);
  CompressedPayload p;
  if (!gabi) {
    // Legacy GNU form: "ZLIB" then the size as 8 big-endian bytes, then a zlib stream.
    std::span<const uint8_t> magic = c.Bytes(4);
    std::span<const uint8_t> size_be = c.Bytes(8);
    if (!c.ok() || std::memcmp(magic.data(), "ZLIB", 4) != 0) {
      return Error(ErrorCode::kMalformed, "legacy compressed section lacks its \"ZLIB\" header");
    }
    for (uint8_t b : size_be) p.size = (p.size << 8) | b;
    p.kind = Compression::kZlib;
  } else {
    CompressionHeader h = ReadCompressionHeader(c, is_64bit);
    if (!c.ok()) {
      return Error(ErrorCode::kMalformed, "compressed section is too small for its header");
    }
    switch (h.type) {
      case ELFCOMPRESS_ZLIB:
        p.kind = Compression::kZlib;
        break;
      case ELFCOMPRESS_ZSTD:
        p.kind = Compression::kZstd;
        break;
      default:
        return Error(ErrorCode::kUnsupported,
                     "unknown section compression type " + std::to_string(h.type));
    }
    p.size = h.size;
  }
  p.stream = c.Bytes(c.remaining());
  if (Result<void> r = CheckPlausible(p.size, p.stream.size()); !r) return r.error();
  return p;
}

Result<DecompressedBytes> DecompressSection(std::span<const uint8_t> raw, bool gabi,
                                            bool is_64bit) {
  Result<CompressedPayload> payload = ParseCompressedSection(raw, gabi, is_64bit);
  if (!payload) return payload.error();
  return Decompress(payload->kind, payload->stream, payload->size);
}

}  // namespace stacksym::elf
