// UnwindStack on hand-made tables and stacks: every rule kind, every way a walk can end.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "stacksym/stack_unwind.h"

namespace stacksym {
namespace {

constexpr uint64_t kStackTop = 0x7ffff000;

// A stack image growing down from kStackTop, written word by word.
class FakeStack {
 public:
  explicit FakeStack(size_t bytes) : bytes_(bytes, 0) {}
  uint64_t start() const { return kStackTop - bytes_.size(); }
  void Put(uint64_t address, uint64_t value) {
    ASSERT_GE(address, start());
    ASSERT_LE(address + 8, kStackTop);
    std::memcpy(bytes_.data() + (address - start()), &value, 8);
  }
  StackCopy CopyFrom(uint64_t sp, bool cut = false) const {
    return {sp, std::span<const uint8_t>(bytes_).subspan(sp - start()), cut};
  }

 private:
  std::vector<uint8_t> bytes_;
};

UnwindRow Row(uint32_t pc, CfaRule cfa, int32_t cfa_off, RegRule ra = RegRule::kAtCfa,
              int16_t ra_off = -8, RegRule rbp = RegRule::kSame, int16_t rbp_off = 0,
              uint8_t flags = 0) {
  return {pc, cfa, ra, rbp, flags, cfa_off, ra_off, rbp_off};
}

// One module at [0x400000, 0x500000) with bias 0x400000 - 0x1000... kept simple: bias 0.
struct Modules {
  std::map<uint64_t, std::pair<uint64_t, UnwindModule>> by_start;  // start → (end, module)
  void Add(uint64_t start, uint64_t end, const UnwindTable* table, uint64_t bias) {
    by_start[start] = {end, {table, bias}};
  }
  UnwindModuleLookup Lookup() const {
    return [this](uint64_t pc, UnwindModule* out) {
      auto it = by_start.upper_bound(pc);
      if (it == by_start.begin()) return false;
      --it;
      if (pc >= it->second.first) return false;
      *out = it->second.second;
      return true;
    };
  }
};

std::shared_ptr<UnwindTable> Table(uint64_t base, uint64_t end, std::vector<UnwindRow> rows) {
  return std::make_shared<UnwindTable>(base, end, std::move(rows), UnwindTableStats{},
                                       std::vector<uint8_t>{});
}

// main (0x1000..0x1100): frame set up with RBP, CFA = RBP+16, called from _start (RA undef).
// mid (0x1100..0x1200): no frame pointer, CFA = RSP+32 in its body.
// leaf (0x1200..0x1300): CFA = RSP+8 at entry.
// _start (0x1300..0x1400): RA undefined.
std::shared_ptr<UnwindTable> ProgramTable() {
  return Table(0x1000, 0x1400,
               {Row(0x000, CfaRule::kRspOffset, 8),
                Row(0x001, CfaRule::kRspOffset, 16, RegRule::kAtCfa, -8, RegRule::kAtCfa, -16),
                Row(0x004, CfaRule::kRbpOffset, 16, RegRule::kAtCfa, -8, RegRule::kAtCfa, -16),
                Row(0x100, CfaRule::kRspOffset, 8), Row(0x104, CfaRule::kRspOffset, 32),
                Row(0x200, CfaRule::kRspOffset, 8),
                Row(0x300, CfaRule::kRspOffset, 8, RegRule::kUndefined)});
}

TEST(UnwinderTest, WalksCfaRulesToTheOutermostFrame) {
  auto table = ProgramTable();
  Modules mods;
  const uint64_t bias = 0x555500000000;
  mods.Add(bias + 0x1000, bias + 0x1400, table.get(), bias);
  FakeStack stack(4096);
  // _start's frame: main returns to 0x1310 in _start, whose RA is undefined.
  uint64_t main_cfa = kStackTop - 64;
  uint64_t main_rbp = main_cfa - 16;
  stack.Put(main_cfa - 8, bias + 0x1310);  // main's return address
  stack.Put(main_cfa - 16, 0x1234);        // caller's RBP saved by main
  uint64_t mid_cfa = main_rbp - 64;        // mid called from main at 0x1050
  stack.Put(mid_cfa - 8, bias + 0x1050);
  uint64_t leaf_sp = mid_cfa - 32 - 8;  // leaf called from mid at 0x1150, at its entry
  uint64_t leaf_cfa = leaf_sp + 8;
  stack.Put(leaf_cfa - 8, bias + 0x1150);
  std::vector<uint64_t> pcs;
  std::vector<StackWord> words;
  UnwindEnd end = UnwindStack({bias + 0x1200, leaf_sp, main_rbp}, stack.CopyFrom(leaf_sp),
                              mods.Lookup(), {}, &pcs, &words);
  EXPECT_EQ(end, UnwindEnd::kOutermost);
  EXPECT_EQ(pcs,
            (std::vector<uint64_t>{bias + 0x1200, bias + 0x1150, bias + 0x1050, bias + 0x1310}));
  EXPECT_EQ(words.size(), 4u);  // 3 return addresses and main's saved RBP
}

TEST(UnwinderTest, StopsAtTheEndOfTheCopyWithTheRightReason) {
  auto table = ProgramTable();
  Modules mods;
  mods.Add(0x1000, 0x1400, table.get(), 0);
  FakeStack stack(256);
  uint64_t sp = kStackTop - 16;  // mid's CFA = sp + 32 lies past the top of the copy
  std::vector<uint64_t> pcs;
  EXPECT_EQ(UnwindStack({0x1150, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs),
            UnwindEnd::kStackCopyTooShort);
  EXPECT_EQ(pcs, std::vector<uint64_t>{0x1150});
  EXPECT_EQ(UnwindStack({0x1150, sp, 0}, stack.CopyFrom(sp, /*cut=*/true), mods.Lookup(), {}, &pcs),
            UnwindEnd::kPageNotReadable);
}

TEST(UnwinderTest, UnmappedReturnAddressEndsTheWalk) {
  auto table = ProgramTable();
  Modules mods;
  mods.Add(0x1000, 0x1400, table.get(), 0);
  FakeStack stack(256);
  uint64_t sp = kStackTop - 128;
  stack.Put(sp, 0xdead0000);  // leaf's return address points nowhere
  std::vector<uint64_t> pcs;
  EXPECT_EQ(UnwindStack({0x1200, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs),
            UnwindEnd::kUnmappedPc);
  EXPECT_EQ(pcs, std::vector<uint64_t>{0x1200});  // the bogus return address is not a frame
  EXPECT_EQ(UnwindStack({0xdead0000, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs),
            UnwindEnd::kUnmappedPc);
  EXPECT_TRUE(pcs.empty() || pcs.size() == 1);
}

TEST(UnwinderTest, CfaThatDoesNotMoveUpIsBad) {
  // A corrupt table whose CFA is RSP - 8: the walk must refuse rather than loop.
  auto table = Table(0x1000, 0x1100, {Row(0x0, CfaRule::kRspOffset, -8)});
  Modules mods;
  mods.Add(0x1000, 0x1100, table.get(), 0);
  FakeStack stack(256);
  uint64_t sp = kStackTop - 128;
  stack.Put(sp - 16, 0x1010);
  std::vector<uint64_t> pcs;
  EXPECT_EQ(UnwindStack({0x1010, sp, 0}, stack.CopyFrom(sp - 16), mods.Lookup(), {}, &pcs),
            UnwindEnd::kBadCfa);
}

TEST(UnwinderTest, RecursionStopsAtTheDepthLimit) {
  // f calls itself: CFA = RSP + 16 everywhere, return address into f.
  auto table = Table(0x1000, 0x1100, {Row(0x0, CfaRule::kRspOffset, 16)});
  Modules mods;
  mods.Add(0x1000, 0x1100, table.get(), 0);
  FakeStack stack(64 * 1024);
  uint64_t sp = kStackTop - 60 * 1024;
  for (uint64_t a = sp; a + 16 <= kStackTop; a += 16) stack.Put(a + 8, 0x1020);
  std::vector<uint64_t> pcs;
  EXPECT_EQ(
      UnwindStack({0x1020, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {.max_frames = 127}, &pcs),
      UnwindEnd::kDepthLimit);
  EXPECT_EQ(pcs.size(), 127u);
}

TEST(UnwinderTest, FramePointersWhereAModuleHasNoCfi) {
  auto table = ProgramTable();
  Modules mods;
  mods.Add(0x1000, 0x1400, table.get(), 0);
  mods.Add(0x9000, 0xa000, nullptr, 0);  // JIT-like code: frame pointers only
  FakeStack stack(1024);
  uint64_t jit_bp = kStackTop - 512;
  stack.Put(jit_bp + 8, 0x1310);  // returns into _start
  stack.Put(jit_bp, 0);
  std::vector<uint64_t> pcs;
  UnwindStats stats;
  uint64_t sp = jit_bp - 32;
  EXPECT_EQ(UnwindStack({0x9010, sp, jit_bp}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs, nullptr,
                        &stats),
            UnwindEnd::kOutermost);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x9010, 0x1310}));
  EXPECT_EQ(stats.frames_by_fp, 1u);
  // Without the fallback, or with RBP below RSP, there is nothing to go on.
  EXPECT_EQ(UnwindStack({0x9010, sp, jit_bp}, stack.CopyFrom(sp), mods.Lookup(),
                        {.frame_pointer_fallback = false}, &pcs),
            UnwindEnd::kNoCfi);
  EXPECT_EQ(UnwindStack({0x9010, sp, sp - 64}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs),
            UnwindEnd::kNoCfi);
}

TEST(UnwinderTest, SignalFrameUnwindsIntoTheInterruptedCode) {
  // A handler (0x2000) returns into the trampoline (0x3000, augmentation S), whose CFA is the
  // RSP saved in the ucontext and whose return address is the interrupted pc (leaf at 0x1210).
  // As in glibc, the trampoline's FDE starts one byte early, so that the lookup of the
  // handler's return address (pc - 1) finds it.
  auto table = Table(0x1000, 0x3100,
                     {Row(0x000, CfaRule::kRspOffset, 16), Row(0x100, CfaRule::kRspOffset, 8),
                      Row(0x200, CfaRule::kRspOffset, 8), Row(0x300, CfaRule::kUndefined, 0),
                      Row(0x1000, CfaRule::kRspOffset, 8),  // handler: leaf
                      Row(0x1100, CfaRule::kUndefined, 0),
                      Row(0x1fff, CfaRule::kDerefRspOffset, 160, RegRule::kAtRsp, 168,
                          RegRule::kAtRsp, 120, kUnwindRowSignalFrame)});
  Modules mods;
  mods.Add(0x1000, 0x3100, table.get(), 0);
  FakeStack stack(4096);
  uint64_t interrupted_sp = kStackTop - 256;  // leaf at 0x1210, CFA = sp + 8
  stack.Put(interrupted_sp, 0x1150);          // leaf's return address: into mid... (CFA 8)
  uint64_t trampoline_sp = interrupted_sp - 1024;
  stack.Put(trampoline_sp + 160, interrupted_sp);
  stack.Put(trampoline_sp + 168, 0x1210);
  stack.Put(trampoline_sp + 120, 0x4242);
  uint64_t handler_sp = trampoline_sp - 8;
  stack.Put(handler_sp, 0x3000);  // the handler returns to the trampoline's first byte
  std::vector<uint64_t> pcs;
  UnwindStack({0x2010, handler_sp, 0}, stack.CopyFrom(handler_sp), mods.Lookup(), {}, &pcs);
  ASSERT_GE(pcs.size(), 4u);
  EXPECT_EQ(pcs[0], 0x2010u);
  EXPECT_EQ(pcs[1], 0x3001u);  // the trampoline is entered at 0x3000, not called from 0x2fff
  EXPECT_EQ(pcs[2], 0x1211u);  // interrupted pc + 1: its "call site" is the pc itself
  EXPECT_EQ(pcs[3], 0x1150u);
}

TEST(UnwinderTest, PltRuleAddsAWordInTheSecondHalfOfAStub) {
  auto table =
      Table(0x1000, 0x1100,
            {Row(0x0, CfaRule::kPlt, 8, RegRule::kAtCfa, -8, RegRule::kSame, /*threshold=*/11)});
  auto caller = Table(0x2000, 0x2100, {Row(0x0, CfaRule::kRspOffset, 8, RegRule::kUndefined)});
  Modules mods;
  mods.Add(0x1000, 0x1100, table.get(), 0);
  mods.Add(0x2000, 0x2100, caller.get(), 0);
  FakeStack stack(256);
  uint64_t sp = kStackTop - 64;
  stack.Put(sp, 0x2010);      // at 0x1006 (first half): RA at RSP
  stack.Put(sp + 8, 0x2020);  // at 0x100b (after the push): RA one word up
  std::vector<uint64_t> pcs;
  UnwindStack({0x1006, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x1006, 0x2010}));
  UnwindStack({0x100b, sp, 0}, stack.CopyFrom(sp), mods.Lookup(), {}, &pcs);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x100b, 0x2020}));
}

TEST(UnwinderTest, NeverReadsOutsideTheCopyOnGarbage) {
  // Random tables and stacks: every walk ends, within max_frames, reading only the copy.
  auto table = ProgramTable();
  Modules mods;
  mods.Add(0x1000, 0x1400, table.get(), 0);
  uint64_t state = 88172645463325252ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  FakeStack stack(2048);
  for (int round = 0; round < 2000; ++round) {
    for (uint64_t a = stack.start(); a < kStackTop; a += 8) {
      uint64_t v = next();
      stack.Put(a, (v & 1) ? 0x1000 + (v >> 8) % 0x400 : stack.start() + (v >> 8) % 2048);
    }
    uint64_t sp = stack.start() + (next() % 256) * 8;
    std::vector<uint64_t> pcs;
    std::vector<StackWord> words;
    UnwindStack({0x1000 + next() % 0x400, sp, stack.start() + next() % 2048}, stack.CopyFrom(sp),
                mods.Lookup(), {}, &pcs, &words);
    EXPECT_LE(pcs.size(), 127u);
    for (const StackWord& w : words) {
      EXPECT_GE(w.address, sp);
      EXPECT_LE(w.address + 8, kStackTop);
    }
  }
}

}  // namespace
}  // namespace stacksym
