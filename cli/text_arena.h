// TextArena — append-only storage for rendered answers kept until they can be written in
// input order; TextPool — the memory the arenas of a batch share, its pages faulted in ahead of
// use by a helper thread.
//
//   TextPool pool(addresses.size() * 4096);  // address space only; made before the index opens
//   TextArena arena(&pool);                  // one per worker thread
//   std::string_view kept = arena.Add(text); // valid until the arena goes
//   ... arenas destroyed, text written ...
//   pool.Reuse();                            // the next batch takes the same (faulted-in) pages
//
// A warm `symbolize elf` of 5000 libceph-common addresses renders 7 MB of text, and faulting
// those fresh pages in one by one as the text is written (1800 faults) cost more than all its
// lookups. The pool's helper faults them in (madvise(MADV_POPULATE_WRITE), content untouched)
// while the index opens and then a MiB ahead of the arenas, on the core that would otherwise
// wait. Small pages: huge ones were faster in back-to-back runs, but on a VM that hands freed
// memory back to its host, a run after a pause paid several ms per fresh huge page (warm
// median 33 ms instead of 22-23 ms).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "base/parallel.h"

namespace stacksym::cli {

class TextPool {
 public:
  static constexpr size_t kChunk = size_t{256} << 10;
  // How far the helper stays ahead of the chunks taken: two workers render about 0.6 MB of
  // text per ms on libceph-common, the helper faults in several MB per ms; further ahead only
  // faulted in pages nothing used (warm median 21.8 ms with 16, 20.3 ms with 4).
  static constexpr size_t kChunksAhead = 4;

  // Reserves address space for `bytes` (rounded up to chunks; nothing is committed until the
  // helper faults it in) and starts the helper. Without the mapping, Take() gives nothing.
  explicit TextPool(size_t bytes);
  ~TextPool();  // stops the helper, unmaps
  TextPool(const TextPool&) = delete;
  TextPool& operator=(const TextPool&) = delete;

  // The next unused chunk of kChunk bytes, or nullptr when all are taken. Thread-safe.
  char* Take();
  // Every chunk unused again (no arena may hold one any more): the next batch reuses them.
  void Reuse();

 private:
  void KeepAhead();  // the helper's loop

  char* data_ = nullptr;
  size_t chunk_count_ = 0;
  std::atomic<size_t> taken_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread::id creator_;
  std::unique_ptr<SpreadThread> helper_;
};

class TextArena {
 public:
  explicit TextArena(TextPool* pool = nullptr) : pool_(pool) {}
  ~TextArena();
  TextArena(const TextArena&) = delete;
  TextArena& operator=(const TextArena&) = delete;

  // A copy of `text`, valid until the arena goes.
  std::string_view Add(std::string_view text);

 private:
  struct Region {
    char* data = nullptr;
    size_t size = 0;
    enum Owner { kPool, kMapped, kHeap } owner = kHeap;
  };
  void Open(size_t at_least);

  TextPool* pool_;
  std::vector<Region> regions_;
  size_t used_ = 0;  // in the last region
};

}  // namespace stacksym::cli
