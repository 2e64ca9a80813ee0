// RunOnThreads and SpreadThread: every worker runs once and is joined; a spread thread, once
// its body runs, may use every CPU its creator may (its start placement does not stick), also
// when the creator may use only one CPU.
#include "base/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <vector>

namespace stacksym {
namespace {

bool SameCpus(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b) != 0; }

TEST(RunOnThreads, EveryWorkerOnceAndJoined) {
  for (unsigned threads : {1u, 2u, 5u}) {
    std::vector<std::atomic<int>> ran(threads);
    RunOnThreads(threads, [&](unsigned t) { ran[t].fetch_add(1); });
    for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(ran[t].load(), 1) << t << " of " << threads;
  }
}

TEST(SpreadThread, BodyMayRunOnEveryAllowedCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  for (unsigned other = 0; other < 3; ++other) {
    cpu_set_t seen;
    CPU_ZERO(&seen);
    int runs = 0;
    {
      SpreadThread thread(
          [&] {
            ++runs;
            sched_getaffinity(0, sizeof(seen), &seen);
          },
          other);
    }  // joined here
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(SameCpus(seen, allowed)) << "the start placement stuck (other " << other << ")";
  }
}

TEST(SpreadThread, CreatorOnOneCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  cpu_set_t seen;
  CPU_ZERO(&seen);
  bool ran = false;
  {
    SpreadThread thread(
        [&] {
          ran = true;
          sched_getaffinity(0, sizeof(seen), &seen);
        },
        0);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(SameCpus(seen, one));  // no other CPU to start on: where the creator may run
}

}  // namespace
}  // namespace stacksym
