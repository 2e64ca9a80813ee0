// RunSharing: every item handed out exactly once, a thread's own share first and in order,
// the others' taken from their backs, the largest first; and under real threads, nothing lost
// or doubled.
#include "base/run_sharing.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "base/parallel.h"

namespace stacksym {
namespace {

using Span = std::pair<size_t, size_t>;

TEST(RunSharing, OwnShareFirstInOrder) {
  RunSharing runs(10, 2, 3);  // shares [0, 5) and [5, 10)
  EXPECT_EQ(runs.Next(0), Span(0, 3));
  EXPECT_EQ(runs.Next(0), Span(3, 5));
  EXPECT_EQ(runs.Next(1), Span(5, 8));
}

TEST(RunSharing, TakesFromTheBackOfTheLargestShare) {
  RunSharing runs(30, 3, 2);                 // [0, 10), [10, 20), [20, 30)
  for (int i = 0; i < 5; ++i) runs.Next(0);  // thread 0's share is used up
  runs.Next(2);                              // [20, 22): thread 2 has 8 left, thread 1 has 10
  EXPECT_EQ(runs.Next(0), Span(18, 20));     // from thread 1's back
  EXPECT_EQ(runs.Next(0), Span(16, 18));     // both have 8 left: the first of them
}

TEST(RunSharing, ARunOrLessLeftIsTakenWhole) {
  RunSharing runs(5, 2, 4);  // [0, 2), [2, 5)
  EXPECT_EQ(runs.Next(0), Span(0, 2));
  EXPECT_EQ(runs.Next(0), Span(2, 5));  // 3 left in thread 1's share: all of it
  EXPECT_EQ(runs.Next(1), Span(0, 0));
  EXPECT_EQ(runs.Next(0), Span(0, 0));
}

TEST(RunSharing, EmptyAndDegenerate) {
  RunSharing none(0, 4, 16);
  for (unsigned t = 0; t < 4; ++t) EXPECT_EQ(none.Next(t), Span(0, 0));
  RunSharing more_threads_than_items(2, 4, 16);
  size_t seen = 0;
  for (unsigned t = 0; t < 4; ++t) {
    for (auto [b, e] = more_threads_than_items.Next(t); b < e;
         std::tie(b, e) = more_threads_than_items.Next(t)) {
      seen += e - b;
    }
  }
  EXPECT_EQ(seen, 2u);
  RunSharing zero_run(3, 1, 0);  // a run of 0 means 1
  EXPECT_EQ(zero_run.Next(0), Span(0, 1));
}

TEST(RunSharing, ThreadsTakeEveryItemOnce) {
  constexpr size_t kItems = 100003;
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    RunSharing runs(kItems, threads, 61);
    std::vector<std::atomic<int>> taken(kItems);
    RunOnThreads(threads, [&](unsigned t) {
      for (auto [b, e] = runs.Next(t); b < e; std::tie(b, e) = runs.Next(t)) {
        ASSERT_LE(e, kItems);
        for (size_t i = b; i < e; ++i) taken[i].fetch_add(1, std::memory_order_relaxed);
      }
    });
    for (size_t i = 0; i < kItems; ++i) ASSERT_EQ(taken[i].load(), 1) << "item " << i;
  }
}

}  // namespace
}  // namespace stacksym
