#include "elf/section_stream.h"

#include <sys/mman.h>

#include <cstdint>

namespace stacksym::elf {

size_t SectionStream::WaitFor(size_t bytes) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ || final_ >= bytes; });
  return final_;
}

Result<std::span<const uint8_t>> SectionStream::Wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) return *error_;
  return buffer_;
}

bool SectionStream::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void SectionStream::Limit(size_t bytes) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // From no limit (SIZE_MAX) to any; else only forward.
    if (limit_ != SIZE_MAX && bytes <= limit_) return;
    limit_ = bytes;
  }
  decoder_cv_.notify_all();
}

void SectionStream::Unlimit() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = SIZE_MAX;
  }
  decoder_cv_.notify_all();
}

void SectionStream::Release(size_t from, size_t to) const {
  constexpr uintptr_t kPage = 4096;
  if (!releasable_ || to > buffer_.size() || from >= to) return;
  const uintptr_t base = reinterpret_cast<uintptr_t>(buffer_.data());
  const uintptr_t begin = (base + from + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (base + to) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void SectionStream::Reset(std::span<const uint8_t> buffer, bool releasable) {
  std::lock_guard<std::mutex> lock(mu_);
  buffer_ = buffer;
  releasable_ = releasable;
}

void SectionStream::Publish(size_t final_bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  final_ = final_bytes;
  cv_.notify_all();
  // Paused at the reader's limit until it allows more (SIZE_MAX: no limit).
  decoder_cv_.wait(lock, [&] { return final_ < limit_ || final_ >= buffer_.size(); });
}

void SectionStream::Finish(std::optional<Error> error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    if (error) {
      error_ = std::move(error);
    } else {
      final_ = buffer_.size();
    }
  }
  cv_.notify_all();
}

}  // namespace stacksym::elf
