// elf/decompress.h — inflating compressed ELF sections (SHF_COMPRESSED with zlib or zstd, and
// the legacy GNU .zdebug_* form).
//
// The declared size is a claim by the file: output never grows past it, a stream that ends
// early or runs long is an error, and declared sizes no real compressor could reach from the
// given input are refused before anything is allocated.
//
// Output goes into a DecompressedBytes buffer of exactly the declared size that is never
// zero-filled first; large buffers are anonymous mappings, so pages the stream never reaches
// cost no memory even when a hostile header overstates the size.
//
// Decoding is streamed (ISA-L's inflate for zlib, libzstd's stream decoder), so a caller can
// be told how many leading bytes are final while the rest is still being decoded
// (DecompressInto's `progress`): that is what lets DWARF units be parsed while the later part
// of .debug_info is still being inflated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "stacksym/result.h"

namespace stacksym::elf {

enum class Compression { kZlib, kZstd };

// Frees a DecompressedBytes buffer: delete[] when mapped_size is 0, else munmap.
struct ReleaseDecompressed {
  size_t mapped_size = 0;
  void operator()(uint8_t* p) const;
};

// An owned, fixed-size byte buffer whose contents start uninitialised.
class DecompressedBytes {
 public:
  DecompressedBytes() = default;
  // Fails (kInternal) only when the memory cannot be had.
  static Result<DecompressedBytes> Allocate(size_t size);

  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_.get(), size_}; }
  // A mapping of its own (big buffers), as opposed to heap memory.
  bool mapped() const { return data_.get_deleter().mapped_size != 0; }

 private:
  std::unique_ptr<uint8_t, ReleaseDecompressed> data_;
  size_t size_ = 0;
};

// Decompresses `input` (a bare zlib or zstd stream) that must expand to exactly
// `declared_size` bytes.
Result<DecompressedBytes> Decompress(Compression kind, std::span<const uint8_t> input,
                                     uint64_t declared_size);

// A compressed section's header, checked: the stream, its kind and its plausible size.
struct CompressedPayload {
  Compression kind = Compression::kZlib;
  std::span<const uint8_t> stream;
  uint64_t size = 0;  // declared decompressed size
  // `stream` lies in a read-only file mapping (MappedFile::is_mapping): the decoder drops the
  // pages it has read (they stay in the page cache), so that a big section's compressed bytes
  // do not add to the resident size beside its decompressed ones.
  bool stream_is_file_mapping = false;
};
// `gabi`: the Elf32/64_Chdr form; otherwise the legacy "ZLIB" + 8-byte big-endian size form.
Result<CompressedPayload> ParseCompressedSection(std::span<const uint8_t> raw, bool gabi,
                                                 bool is_64bit);

// Decodes `payload` into `out` (exactly payload.size bytes). progress(n) is called from this
// thread each time the first n bytes of `out` are final (n grows; the last call, on success,
// has n == out.size()).
Result<void> DecompressInto(const CompressedPayload& payload, std::span<uint8_t> out,
                            const std::function<void(size_t)>& progress = {});

// The contents of a whole compressed section: the Elf32/64_Chdr form when `gabi` is true,
// otherwise the legacy "ZLIB" + 8-byte big-endian size form.
Result<DecompressedBytes> DecompressSection(std::span<const uint8_t> raw, bool gabi, bool is_64bit);

}  // namespace stacksym::elf
