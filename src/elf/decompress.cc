#include "elf/decompress.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <string>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"

namespace stacksym::elf {

namespace {

// No real stream expands more than this (deflate's limit is ~1032:1; zstd can do more only on
// degenerate runs, which debug sections are not). Refusing larger claims up front keeps a
// hostile header from making us allocate gigabytes.
constexpr uint64_t kMaxRatio = 2048;
constexpr uint64_t kRatioSlack = uint64_t{1} << 20;
constexpr uint64_t kMaxDecompressedSize = uint64_t{1} << 36;  // 64 GiB

// Output buffers grow as real output appears, so memory follows what the stream actually
// produces rather than what the header claims.
size_t InitialCapacity(uint64_t declared, size_t input_size) {
  uint64_t guess = uint64_t{input_size} * 4 + 4096;
  return static_cast<size_t>(std::min(declared, guess));
}

size_t GrowCapacity(size_t current, uint64_t declared) {
  uint64_t next = std::max<uint64_t>(uint64_t{current} * 2, 4096);
  return static_cast<size_t>(std::min(next, declared));
}

Error SizeMismatch(uint64_t produced, uint64_t declared, bool longer) {
  return Error(ErrorCode::kMalformed,
               longer ? "compressed data expands to more than the declared " +
                            std::to_string(declared) + " bytes"
                      : "compressed data expands to " + std::to_string(produced) +
                            " bytes, not the declared " + std::to_string(declared));
}

Result<std::vector<uint8_t>> Inflate(std::span<const uint8_t> input, uint64_t declared) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return Error(ErrorCode::kInternal, "inflateInit failed");
  std::vector<uint8_t> out(InitialCapacity(declared, input.size()));
  size_t in_pos = 0;
  size_t out_pos = 0;
  int rc = Z_OK;
  while (true) {
    if (out_pos == out.size()) {
      if (out.size() == declared) {
        // Full: the stream must end now. Probe with a one-byte buffer to detect excess.
        uint8_t probe;
        zs.next_in = const_cast<Bytef*>(input.data() + in_pos);
        zs.avail_in = static_cast<uInt>(std::min<size_t>(input.size() - in_pos, 1u << 30));
        zs.next_out = &probe;
        zs.avail_out = 1;
        rc = inflate(&zs, Z_NO_FLUSH);
        bool excess = zs.avail_out == 0;
        inflateEnd(&zs);
        if (excess) return SizeMismatch(out_pos + 1, declared, true);
        if (rc == Z_STREAM_END) return out;
        return Error(ErrorCode::kMalformed, "zlib stream is truncated or corrupt");
      }
      out.resize(GrowCapacity(out.size(), declared));
    }
    size_t in_chunk = std::min<size_t>(input.size() - in_pos, 1u << 30);
    size_t out_chunk = std::min<size_t>(out.size() - out_pos, 1u << 30);
    zs.next_in = const_cast<Bytef*>(input.data() + in_pos);
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    out_pos += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_out != 0) {
      inflateEnd(&zs);
      return Error(ErrorCode::kMalformed, "zlib stream is truncated");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      return Error(ErrorCode::kMalformed, "zlib stream is corrupt: " + msg);
    }
  }
  inflateEnd(&zs);
  if (out_pos != declared) return SizeMismatch(out_pos, declared, false);
  return out;
}

Result<std::vector<uint8_t>> Unzstd(std::span<const uint8_t> input, uint64_t declared) {
  ZSTD_DStream* zs = ZSTD_createDStream();
  if (zs == nullptr) return Error(ErrorCode::kInternal, "ZSTD_createDStream failed");
  struct Free {
    ZSTD_DStream* s;
    ~Free() { ZSTD_freeDStream(s); }
  } free_stream{zs};
  std::vector<uint8_t> out(InitialCapacity(declared, input.size()));
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t out_pos = 0;
  while (true) {
    if (out_pos == out.size() && out.size() < declared) {
      out.resize(GrowCapacity(out.size(), declared));
    }
    // Once the buffer holds the declared size, decode into a one-byte probe: any further
    // output means the declared size lied.
    uint8_t probe;
    bool full = out_pos == out.size();
    ZSTD_outBuffer ob =
        full ? ZSTD_outBuffer{&probe, 1, 0} : ZSTD_outBuffer{out.data(), out.size(), out_pos};
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

Result<std::vector<uint8_t>> Decompress(Compression kind, std::span<const uint8_t> input,
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

Result<std::vector<uint8_t>> DecompressSection(std::span<const uint8_t> raw, bool gabi,
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
