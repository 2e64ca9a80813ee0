// RunOnThreads — the same work on several threads, the calling thread being one of them.
//
//   unsigned n = ThreadCount(options.threads, units.size());   // 0 requested: one per CPU
//   RunOnThreads(n, [&](unsigned t) { ... take work items ... });
//
// Work items are the caller's business (an atomic counter, a stride by `t`, RunSharing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace stacksym {

// `requested` threads (0: one per CPU), but no more than `max_useful`, and at least one.
inline unsigned ThreadCount(unsigned requested, size_t max_useful) {
  unsigned n = requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<size_t>(max_useful, 1, n));
}

// A thread started on a CPU of its own. Schedulers that pack new threads onto the creator's
// CPU (as this project's 2-vCPU VMs do) started the second worker of a 15 ms batch 2-3 ms
// late; created on another allowed CPU it starts at once, and is then free to move to any
// CPU the process may use. Joined on destruction. Where no thread can be created, the body
// runs on the calling thread, in the constructor.
class SpreadThread {
 public:
  // `other`: which of the allowed CPUs other than the caller's to start on (modulo their
  // number; none: wherever the kernel puts it).
  SpreadThread(std::function<void()> body, unsigned other = 0);
  ~SpreadThread();
  void Join();  // waits for the body to return; again: nothing
  SpreadThread(const SpreadThread&) = delete;
  SpreadThread& operator=(const SpreadThread&) = delete;

 private:
  struct Start;
  std::unique_ptr<Start> start_;
};

// Runs work(t) for every t in [0, threads): t = 0 on this thread, the others on new threads
// (SpreadThread); returns when all have returned.
template <class Work>
void RunOnThreads(unsigned threads, const Work& work) {
  std::vector<std::unique_ptr<SpreadThread>> others;
  for (unsigned t = 1; t < threads; ++t) {
    others.push_back(std::make_unique<SpreadThread>([&work, t] { work(t); }, t - 1));
  }
  work(0u);
  others.clear();  // joins
}

}  // namespace stacksym
