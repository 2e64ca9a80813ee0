// BpfRowSpace: first-fit placement of unwind tables in the BPF rows array, and merging of the
// ranges evicted tables give back.
#include "capture/bpf_row_space.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stacksym {
namespace {

TEST(BpfRowSpaceTest, FirstFitAndFull) {
  capture::BpfRowSpace space(100);
  EXPECT_EQ(space.Allocate(40), 0u);
  EXPECT_EQ(space.Allocate(40), 40u);
  EXPECT_EQ(space.Allocate(21), std::nullopt);
  EXPECT_EQ(space.Allocate(20), 80u);
  EXPECT_EQ(space.free_rows(), 0u);
  EXPECT_EQ(space.Allocate(1), std::nullopt);
  EXPECT_EQ(space.Allocate(0), std::nullopt);
}

TEST(BpfRowSpaceTest, ReleasedNeighboursMerge) {
  capture::BpfRowSpace space(100);
  uint32_t a = *space.Allocate(30), b = *space.Allocate(30), c = *space.Allocate(40);
  space.Release(a, 30);
  space.Release(c, 40);
  EXPECT_EQ(space.free_ranges(), 2u);
  EXPECT_EQ(space.Allocate(50), std::nullopt);  // 70 free, but in two pieces
  space.Release(b, 30);                         // joins both neighbours
  EXPECT_EQ(space.free_ranges(), 1u);
  EXPECT_EQ(space.Allocate(100), 0u);
}

TEST(BpfRowSpaceTest, BadReleasesAreIgnored) {
  capture::BpfRowSpace space(100);
  uint32_t a = *space.Allocate(50);
  space.Release(60, 10);  // already free
  space.Release(90, 20);  // past the end
  space.Release(a, 0);
  EXPECT_EQ(space.free_rows(), 50u);
  space.Release(a + 40, 20);  // half of it free already
  EXPECT_EQ(space.free_rows(), 50u);
  space.Release(a, 50);
  EXPECT_EQ(space.free_rows(), 100u);
  EXPECT_EQ(space.free_ranges(), 1u);
}

// Random tables placed and evicted: the rows given out never overlap, and the counts add up.
TEST(BpfRowSpaceTest, RandomPlacementNeverOverlaps) {
  constexpr uint32_t kRows = 10000;
  capture::BpfRowSpace space(kRows);
  std::vector<int> owner(kRows, -1);
  struct Placed {
    uint32_t start, count;
  };
  std::vector<Placed> placed;
  std::mt19937 rng(7);
  uint32_t used = 0;
  for (int step = 0; step < 20000; ++step) {
    if (!placed.empty() && (rng() % 3 == 0)) {
      size_t i = rng() % placed.size();
      for (uint32_t r = 0; r < placed[i].count; ++r) owner[placed[i].start + r] = -1;
      space.Release(placed[i].start, placed[i].count);
      used -= placed[i].count;
      placed.erase(placed.begin() + static_cast<long>(i));
    } else {
      uint32_t count = 1 + rng() % 700;
      std::optional<uint32_t> at = space.Allocate(count);
      if (!at) continue;
      ASSERT_LE(*at + count, kRows);
      for (uint32_t r = 0; r < count; ++r) {
        ASSERT_EQ(owner[*at + r], -1) << "row " << *at + r << " given out twice";
        owner[*at + r] = step;
      }
      placed.push_back({*at, count});
      used += count;
    }
    ASSERT_EQ(space.used_rows(), used);
  }
}

}  // namespace
}  // namespace stacksym
