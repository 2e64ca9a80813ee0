#include "elf/section_stream.h"

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

void SectionStream::Reset(std::span<const uint8_t> buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  buffer_ = buffer;
}

void SectionStream::Publish(size_t final_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_ = final_bytes;
  }
  cv_.notify_all();
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
