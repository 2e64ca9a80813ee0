// Streamed decompression of a section: ElfFile decodes a compressed section on a background
// thread, and readers use its leading bytes as they become final (the DWARF reader parses the
// units of a big .debug_info while the rest is still being inflated). Internal to the library.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::elf {

// A section's contents becoming available front to back while a background thread
// decompresses it. Readers may use the first WaitFor(n) bytes of buffer() at once; the rest
// is still being written.
class SectionStream {
 public:
  // Blocks until at least `bytes` leading bytes are final, or decoding has ended. Returns how
  // many leading bytes are final: all of them once complete; after a failure, those before it.
  size_t WaitFor(size_t bytes) const;
  // Blocks until the end: the whole contents, or the error.
  Result<std::span<const uint8_t>> Wait() const;
  // Whole-size view of the destination buffer (see WaitFor for which bytes are readable).
  std::span<const uint8_t> buffer() const { return buffer_; }
  bool done() const;

  // For a reader that reads front to back and is done with the bytes before some offset:
  // Limit() makes the decoder pause once `bytes` leading bytes are final (it may finish its
  // current step past them) until the reader allows more (Limit again: a limit never moves
  // back) or lifts it (Unlimit, which the reader must do before it stops reading: a decoder
  // left paused would never end). Release() gives back the memory of the whole pages within
  // [from, to) (they read as zeros afterwards) when the buffer is a mapping of its own
  // (releasable()); those bytes must be final and read by no one again.
  void Limit(size_t bytes) const;
  void Unlimit() const;
  bool releasable() const { return releasable_; }
  void Release(size_t from, size_t to) const;

  // The decoder's side (ElfFile). `releasable`: the buffer is a page-aligned mapping of its
  // own, whose pages may be given back.
  void Reset(std::span<const uint8_t> buffer, bool releasable = false);
  void Publish(size_t final_bytes);
  void Finish(std::optional<Error> error);

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::condition_variable decoder_cv_;  // a paused decoder waits here
  std::span<const uint8_t> buffer_;
  bool releasable_ = false;
  size_t final_ = 0;
  mutable size_t limit_ = SIZE_MAX;
  bool done_ = false;
  std::optional<Error> error_;
};

// Like elf.SectionData(section), but a compressed section not yet decompressed is decompressed
// on a background thread and the call returns at once: the stream tells which leading bytes
// are final. SectionData() on the same section afterwards waits for that same decoding. Never
// null; uncompressed (or already decompressed) sections come as a finished stream.
std::shared_ptr<const SectionStream> StreamSectionData(const ElfFile& elf,
                                                       const ElfSection& section);

}  // namespace stacksym::elf
