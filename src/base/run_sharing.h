// RunSharing — contiguous work on several threads that still ends together.
//
//   RunSharing runs(items.size(), threads, /*run=*/128);
//   RunOnThreads(threads, [&](unsigned t) {
//     for (auto [begin, end] = runs.Next(t); begin < end; std::tie(begin, end) = runs.Next(t))
//       for (size_t i = begin; i < end; ++i) Process(items[i]);
//   });
//
// [0, count) is cut into one contiguous share per thread. A thread takes runs from the front
// of its own share; once that is empty it takes runs from the back of the share with the most
// left. Neighbouring items stay on one thread (they share caches: a lookup's string blocks),
// yet a thread whose items cost more does not make the others wait.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace stacksym {

class RunSharing {
 public:
  RunSharing(size_t count, unsigned threads, size_t run) : run_(run == 0 ? 1 : run) {
    if (threads == 0) threads = 1;
    shares_.resize(threads);
    for (unsigned t = 0; t < threads; ++t) {
      shares_[t] = {count * t / threads, count * (t + 1) / threads};
    }
  }

  // The next run for thread `t` (< threads) as [begin, end); begin == end when none is left.
  std::pair<size_t, size_t> Next(unsigned t) {
    std::lock_guard lock(mutex_);  // a few dozen calls a batch: a lock costs nothing here
    Share& own = shares_[t];
    if (own.front < own.back) {
      size_t begin = own.front;
      own.front = std::min(own.back, own.front + run_);
      return {begin, own.front};
    }
    Share* most = nullptr;
    for (Share& share : shares_) {
      if (share.back - share.front > (most == nullptr ? 0 : most->back - most->front)) {
        most = &share;
      }
    }
    if (most == nullptr) return {0, 0};
    size_t end = most->back;
    most->back = most->back - most->front > run_ ? most->back - run_ : most->front;
    return {most->back, end};
  }

 private:
  struct Share {
    size_t front = 0, back = 0;  // [front, back) not taken yet
  };
  std::mutex mutex_;
  size_t run_;
  std::vector<Share> shares_;
};

}  // namespace stacksym
