#include "text_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

namespace stacksym::cli {
namespace {

char* MapPages(size_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

}  // namespace

TextPool::TextPool(size_t bytes) : creator_(std::this_thread::get_id()) {
  chunk_count_ = (bytes + kChunk - 1) / kChunk;
  if (chunk_count_ == 0) return;
  data_ = MapPages(chunk_count_ * kChunk);
  if (data_ == nullptr) {
    chunk_count_ = 0;
    return;
  }
  helper_ = std::make_unique<SpreadThread>([this] { KeepAhead(); });
}

TextPool::~TextPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  helper_.reset();  // joins
  if (data_ != nullptr) ::munmap(data_, chunk_count_ * kChunk);
}

void TextPool::KeepAhead() {
  // Where no thread could be started, this runs in the constructor: it faults in the first
  // chunks only, and never waits for a Take() that cannot come while it runs.
  const bool own_thread = std::this_thread::get_id() != creator_;
  size_t faulted = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && faulted < chunk_count_) {
    if (faulted >= taken_.load(std::memory_order_relaxed) + kChunksAhead) {
      if (!own_thread) return;
      wake_.wait(lock);
      continue;
    }
    lock.unlock();
    // Advice only: where it is refused (before Linux 5.14) pages fault in as text is written.
    bool ok = ::madvise(data_ + faulted * kChunk, kChunk, MADV_POPULATE_WRITE) == 0;
    lock.lock();
    if (!ok) return;
    ++faulted;
  }
}

char* TextPool::Take() {
  size_t k = taken_.fetch_add(1, std::memory_order_relaxed);
  if (k >= chunk_count_) return nullptr;
  // Under the lock, so that the helper cannot miss this between its check and its wait.
  { std::lock_guard<std::mutex> lock(mu_); }
  wake_.notify_one();
  return data_ + k * kChunk;
}

void TextPool::Reuse() { taken_.store(0, std::memory_order_relaxed); }

TextArena::~TextArena() {
  for (const Region& r : regions_) {
    if (r.owner == Region::kMapped) {
      ::munmap(r.data, r.size);
    } else if (r.owner == Region::kHeap) {
      delete[] r.data;
    }
  }
}

void TextArena::Open(size_t at_least) {
  Region region;
  if (pool_ != nullptr && at_least <= TextPool::kChunk) region.data = pool_->Take();
  if (region.data != nullptr) {
    region.size = TextPool::kChunk;
    region.owner = Region::kPool;
  } else {
    // The pool used up (or none, or a text bigger than a chunk): a region of its own.
    region.size = std::max(at_least, TextPool::kChunk * 8);
    region.data = MapPages(region.size);
    if (region.data != nullptr) {
      region.owner = Region::kMapped;
      ::madvise(region.data, region.size, MADV_POPULATE_WRITE);  // advice only
    } else {
      region.data = new char[region.size];
      region.owner = Region::kHeap;
    }
  }
  regions_.push_back(region);
  used_ = 0;
}

std::string_view TextArena::Add(std::string_view text) {
  if (regions_.empty() || regions_.back().size - used_ < text.size()) Open(text.size());
  char* at = regions_.back().data + used_;
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  used_ += text.size();
  return {at, text.size()};
}

}  // namespace stacksym::cli
