#include "base/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <utility>

namespace stacksym {

struct SpreadThread::Start {
  std::function<void()> body;
  cpu_set_t allowed;
  bool pinned = false;
  bool running = false;
  pthread_t id{};

  static void* Main(void* p) {
    auto* start = static_cast<Start*>(p);
    // Placed where it was created; from here on it goes wherever the process may run.
    if (start->pinned) ::sched_setaffinity(0, sizeof(start->allowed), &start->allowed);
    start->body();
    return nullptr;
  }
};

SpreadThread::SpreadThread(std::function<void()> body, unsigned other)
    : start_(std::make_unique<Start>()) {
  start_->body = std::move(body);
  pthread_attr_t attr;
  bool have_attr = ::pthread_attr_init(&attr) == 0;
  int self = ::sched_getcpu();
  if (have_attr && self >= 0 &&
      ::sched_getaffinity(0, sizeof(start_->allowed), &start_->allowed) == 0) {
    int others = CPU_COUNT(&start_->allowed) - (CPU_ISSET(self, &start_->allowed) ? 1 : 0);
    if (others > 0) {
      int skip = static_cast<int>(other % static_cast<unsigned>(others));
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (cpu == self || !CPU_ISSET(cpu, &start_->allowed) || skip-- > 0) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        start_->pinned = ::pthread_attr_setaffinity_np(&attr, sizeof(one), &one) == 0;
        break;
      }
    }
  }
  start_->running =
      ::pthread_create(&start_->id, have_attr ? &attr : nullptr, &Start::Main, start_.get()) == 0;
  if (!start_->running && start_->pinned) {
    // The CPU may have been taken away meanwhile: anywhere, then.
    start_->pinned = false;
    start_->running = ::pthread_create(&start_->id, nullptr, &Start::Main, start_.get()) == 0;
  }
  if (have_attr) ::pthread_attr_destroy(&attr);
  if (!start_->running) start_->body();
}

SpreadThread::~SpreadThread() { Join(); }

void SpreadThread::Join() {
  if (start_->running) ::pthread_join(start_->id, nullptr);
  start_->running = false;
}

}  // namespace stacksym
