// RunOnThreads — the same work on several threads, the calling thread being one of them.
//
//   unsigned n = ThreadCount(options.threads, units.size());   // 0 requested: one per CPU
//   RunOnThreads(n, [&](unsigned t) { ... take work items ... });
//
// Work items are the caller's business (an atomic counter, or a stride by `t`).
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace stacksym {

// `requested` threads (0: one per CPU), but no more than `max_useful`, and at least one.
inline unsigned ThreadCount(unsigned requested, size_t max_useful) {
  unsigned n = requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<size_t>(max_useful, 1, n));
}

// Runs work(t) for every t in [0, threads): t = 0 on this thread, the others on new threads;
// returns when all have returned.
template <class Work>
void RunOnThreads(unsigned threads, const Work& work) {
  std::vector<std::thread> others;
  for (unsigned t = 1; t < threads; ++t) others.emplace_back([&work, t] { work(t); });
  work(0u);
  for (std::thread& thread : others) thread.join();
}

}  // namespace stacksym
