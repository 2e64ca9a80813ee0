// Profile interning: equal frames/stacks merge, different ones never do (full comparison,
// not hash identity), and indexes survive vectors that were filled directly.
#include "stacksym/profile.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace stacksym {
namespace {

TEST(ProfileTest, ModulesAreDeduplicatedByContent) {
  Profile p;
  uint32_t a = p.AddModule({ModuleKind::kElf, "/bin/a", {1, 2, 3}});
  uint32_t b = p.AddModule({ModuleKind::kElf, "/bin/a", {1, 2, 4}});  // other build ID
  uint32_t c = p.AddModule({ModuleKind::kElf, "/bin/b", {1, 2, 3}});
  EXPECT_EQ(a, p.AddModule({ModuleKind::kElf, "/bin/a", {1, 2, 3}}));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(p.modules.size(), 3u);
}

TEST(ProfileTest, FramesAreInternedOnce) {
  Profile p;
  uint32_t f1 = p.InternFrame({FrameKind::kUser, 0, 0x1000});
  uint32_t f2 = p.InternFrame({FrameKind::kUser, 1, 0x1000});
  uint32_t f3 = p.InternFrame({FrameKind::kKernel, 0, 0x1000});
  uint32_t f4 = p.InternFrame({FrameKind::kUserRaw, 0, 0x1000});
  EXPECT_EQ(f1, p.InternFrame({FrameKind::kUser, 0, 0x1000}));
  EXPECT_EQ(std::set<uint32_t>({f1, f2, f3, f4}).size(), 4u);
  // The module of a raw frame is meaningless and must not split equal frames.
  EXPECT_EQ(f4, p.InternFrame({FrameKind::kUserRaw, 7, 0x1000}));
  EXPECT_EQ(p.frames.size(), 4u);
}

TEST(ProfileTest, EqualStacksAggregateAndCountsAddUp) {
  Profile p;
  ProfileStack s{.pid = 10, .tid = 11, .comm = "worker", .frames = {0, 1, 2}};
  p.AddSample(s, 1);
  p.AddSample(s, 2);
  ProfileStack other_tid = s;
  other_tid.tid = 12;
  ProfileStack other_comm = s;
  other_comm.comm = "worker2";
  ProfileStack other_order = s;
  other_order.frames = {0, 2, 1};
  ProfileStack prefix = s;
  prefix.frames = {0, 1};
  for (const auto* x : {&other_tid, &other_comm, &other_order, &prefix}) p.AddSample(*x, 1);
  ASSERT_EQ(p.stacks.size(), 5u);
  ASSERT_EQ(p.counts.size(), 5u);
  EXPECT_EQ(p.counts[0], 3u);
  EXPECT_EQ(p.total_samples(), 7u);
}

TEST(ProfileTest, ManyDistinctStacksNeverMerge) {
  // 100k random stacks: with any hash-only scheme (a fixed table of buckets, as in a BPF
  // stack map) some would collide; here every distinct stack must keep its own count.
  Profile p;
  std::mt19937_64 rng(42);
  std::set<std::vector<uint32_t>> distinct;
  const int kStacks = 100000;
  for (int i = 0; i < kStacks; ++i) {
    std::vector<uint32_t> frames(1 + rng() % 6);
    for (auto& f : frames) f = static_cast<uint32_t>(rng() % 64);
    distinct.insert(frames);
    p.AddSample({.pid = 1, .tid = 1, .comm = "x", .frames = frames}, 1);
  }
  EXPECT_EQ(p.stacks.size(), distinct.size());
  EXPECT_EQ(p.total_samples(), static_cast<uint64_t>(kStacks));
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    EXPECT_TRUE(distinct.count(p.stacks[i].frames));
  }
}

TEST(ProfileTest, IndexesAreRebuiltWhenVectorsWereFilledDirectly) {
  Profile p;
  p.frames.push_back({FrameKind::kUser, 0, 0x10});
  p.stacks.push_back({.pid = 1, .tid = 1, .comm = "a", .frames = {0}});
  p.counts.push_back(5);
  EXPECT_EQ(p.InternFrame({FrameKind::kUser, 0, 0x10}), 0u);
  p.AddSample({.pid = 1, .tid = 1, .comm = "a", .frames = {0}}, 1);
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.counts[0], 6u);
}

TEST(ProfileTest, CopiedProfileKeepsDeduplicating) {
  Profile p;
  p.AddSample({.pid = 1, .tid = 1, .comm = "a", .frames = {0}}, 1);
  Profile q = p;
  q.AddSample({.pid = 1, .tid = 1, .comm = "a", .frames = {0}}, 1);
  EXPECT_EQ(q.stacks.size(), 1u);
  EXPECT_EQ(q.counts[0], 2u);
  EXPECT_EQ(p.counts[0], 1u);
}

TEST(ProfileTest, SymbolsStayParallelToFramesOnceStarted) {
  Profile p;
  p.InternFrame({FrameKind::kUser, 0, 1});
  p.symbols.resize(p.frames.size());
  p.InternFrame({FrameKind::kUser, 0, 2});
  EXPECT_EQ(p.symbols.size(), p.frames.size());
}

}  // namespace
}  // namespace stacksym

namespace stacksym {
namespace {

// Off-CPU time beside CPU samples: each stack's values by sample type, states kept apart, and
// a profile without off-CPU time keeps its samples as the default type.
TEST(ProfileSampleTypes, ValuesByTypeAndState) {
  Profile p;
  p.period_ns = 1'000'000;  // 1000 Hz
  uint32_t m = p.AddModule({ModuleKind::kElf, "/bin/x", {1, 2}});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, 0x10});
  ProfileStack running{.pid = 1, .tid = 2, .comm = "x", .frames = {f}};
  EXPECT_FALSE(p.has_off_cpu());
  EXPECT_EQ(p.DefaultSampleType(), SampleType::kSamples);
  p.AddSample(running, 3);
  ProfileStack sleeping = running;
  sleeping.state = ThreadState::kSleeping;
  p.AddOffCpu(sleeping, 5'000'000);
  p.AddOffCpu(sleeping, 2'000'000);
  ProfileStack preempted = running;
  preempted.state = ThreadState::kPreempted;
  p.AddOffCpu(preempted, 1'000);
  p.AddSample(running, 1);
  ASSERT_EQ(p.stacks.size(), 3u) << "one code path in three states: three stacks";
  EXPECT_TRUE(p.has_off_cpu());
  EXPECT_EQ(p.DefaultSampleType(), SampleType::kWall);
  EXPECT_EQ(p.Value(0, SampleType::kSamples), 4u);
  EXPECT_EQ(p.Value(0, SampleType::kCpu), 4'000'000u);
  EXPECT_EQ(p.Value(0, SampleType::kOffCpu), 0u);
  EXPECT_EQ(p.Value(1, SampleType::kSamples), 0u);
  EXPECT_EQ(p.Value(1, SampleType::kOffCpu), 7'000'000u);
  EXPECT_EQ(p.Value(1, SampleType::kWall), 7'000'000u);
  EXPECT_EQ(p.Total(SampleType::kWall), 4'000'000u + 7'000'000u + 1'000u);
  EXPECT_EQ(p.total_samples(), 4u);
  for (SampleType t :
       {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall}) {
    EXPECT_EQ(ParseSampleType(SampleTypeName(t)), t);
  }
  EXPECT_FALSE(ParseSampleType("cycles"));
  EXPECT_EQ(ParseThreadState("uninterruptible"), ThreadState::kUninterruptible);
  EXPECT_FALSE(ParseThreadState("zombie"));
}

}  // namespace
}  // namespace stacksym
