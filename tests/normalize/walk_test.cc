// The sorted merge walk over a scripted VMA source: one lookup per VMA or gap, answers for
// every address, errors turned into Reasons.
#include <gtest/gtest.h>

#include <map>

#include "normalize/vma_walk.h"

namespace stacksym {
namespace {

class FakeSource : public normalize::VmaSource {
 public:
  explicit FakeSource(std::vector<std::pair<uint64_t, uint64_t>> vmas) : vmas_(std::move(vmas)) {}
  VmaSourceKind kind() const override { return VmaSourceKind::kText; }
  Result<bool> FindCoveringOrNext(uint64_t addr, normalize::Vma* out) override {
    ++lookups_;
    if (fail_after_ >= 0 && static_cast<int>(lookups_) > fail_after_) {
      return Error(ErrorCode::kNotFound, "gone");
    }
    for (auto& [s, e] : vmas_) {
      if (e > addr) {
        *out = normalize::Vma{};
        out->start = s;
        out->end = e;
        return true;
      }
    }
    return false;
  }
  uint64_t lookups() const override { return lookups_; }
  int fail_after_ = -1;

 private:
  std::vector<std::pair<uint64_t, uint64_t>> vmas_;
  uint64_t lookups_ = 0;
};

struct Outcome {
  uint64_t vma_start = 0;  // 0: no VMA
  Reason reason = Reason::kUnmapped;
};

std::vector<Outcome> Walk(FakeSource& src, const std::vector<uint64_t>& addrs,
                          normalize::WalkStats* stats) {
  std::vector<Outcome> out(addrs.size(), Outcome{~0ull, Reason::kCorruptData});
  std::vector<uint32_t> order = normalize::SortedOrder(addrs);
  *stats = normalize::WalkVmas(
      src, addrs, order, [&](const normalize::Vma* vma, Reason r, std::span<const uint32_t> ix) {
        for (uint32_t i : ix) out[i] = Outcome{vma ? vma->start : 0, r};
      });
  return out;
}

TEST(VmaWalk, OneLookupPerVmaAndGap) {
  FakeSource src({{0x1000, 0x2000}, {0x3000, 0x5000}});
  std::vector<uint64_t> addrs = {0x1000, 0x1fff, 0x2000, 0x2fff, 0x3000, 0x4fff, 0x5000, 0x10};
  normalize::WalkStats stats;
  std::vector<Outcome> out = Walk(src, addrs, &stats);
  // 0x10: lookup → [0x1000,..) is next, 0x10 in gap; 0x1000.. covered; 0x2000 → lookup finds
  // 0x3000 (gap answers 0x2fff too); 0x5000 → lookup → none.
  EXPECT_EQ(stats.lookups, 3u);
  EXPECT_EQ(stats.range_cache_hits, addrs.size() - 3);
  std::vector<uint64_t> want = {0x1000, 0x1000, 0, 0, 0x3000, 0x3000, 0, 0};
  for (size_t i = 0; i < addrs.size(); ++i) {
    EXPECT_EQ(out[i].vma_start, want[i]) << i;
    if (want[i] == 0) {
      EXPECT_EQ(out[i].reason, Reason::kUnmapped) << i;
    }
  }
}

TEST(VmaWalk, SortedOrderIsEmptyForSortedInput) {
  std::vector<uint64_t> sorted = {1, 2, 2, 5};
  EXPECT_TRUE(normalize::SortedOrder(sorted).empty());
  std::vector<uint64_t> unsorted = {5, 1, 5, 0};
  EXPECT_EQ(normalize::SortedOrder(unsorted), (std::vector<uint32_t>{3, 1, 0, 2}));
}

TEST(VmaWalk, SourceErrorsBecomeReasonsForTheRest) {
  FakeSource src({{0x1000, 0x2000}, {0x3000, 0x4000}});
  src.fail_after_ = 1;
  std::vector<uint64_t> addrs = {0x3500, 0x1500, 0x1600, 0x3600};
  normalize::WalkStats stats;
  std::vector<Outcome> out = Walk(src, addrs, &stats);
  EXPECT_EQ(out[1].vma_start, 0x1000u);
  EXPECT_EQ(out[2].vma_start, 0x1000u);
  EXPECT_EQ(out[0].vma_start, 0u);
  EXPECT_EQ(out[0].reason, Reason::kProcessGone);
  EXPECT_EQ(out[3].reason, Reason::kProcessGone);
}

TEST(VmaWalk, EmptyInput) {
  FakeSource src({{0x1000, 0x2000}});
  normalize::WalkStats stats;
  EXPECT_TRUE(Walk(src, {}, &stats).empty());
  EXPECT_EQ(stats.lookups, 0u);
}

}  // namespace
}  // namespace stacksym
