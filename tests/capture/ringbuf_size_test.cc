// DefaultRingbufSize: the ring buffer sized to the run (rate, CPUs, call graph) instead of a
// fixed 32 MiB, whose pages every start allocated, zeroed and mapped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "capture/sample_source.h"

namespace stacksym {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

RecordOptions With(CallGraph call_graph, uint32_t hz) {
  RecordOptions o;
  o.call_graph = call_graph;
  o.frequency_hz = hz;
  return o;
}

bool PowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

TEST(RingbufSizeTest, HoldsASecondOfTheLargestSamplesWithinBounds) {
  const uint64_t cpus = static_cast<uint64_t>(sysconf(_SC_NPROCESSORS_ONLN));
  for (CallGraph cg : {CallGraph::kBpf, CallGraph::kDwarf, CallGraph::kFramePointers}) {
    for (uint32_t hz : {1u, 99u, 999u, 4000u, 100000u}) {
      uint64_t size = capture::DefaultRingbufSize(With(cg, hz));
      EXPECT_TRUE(PowerOfTwo(size)) << size;
      EXPECT_GE(size, kMiB);
      EXPECT_LE(size, 32 * kMiB);
      // A second of full stack copies (or frame-pointer chains) from every CPU fits, unless
      // that is past the upper bound.
      uint64_t sample =
          72 + 127 * 8 + (cg == CallGraph::kFramePointers ? 127 * 8 : 32 + kDefaultStackCopyBytes);
      if (hz * cpus * sample <= 32 * kMiB) {
        EXPECT_GE(size, hz * cpus * sample) << CallGraphName(cg) << " at " << hz;
      }
    }
  }
  EXPECT_EQ(capture::DefaultRingbufSize(With(CallGraph::kDwarf, 100000)), 32 * kMiB);
  EXPECT_EQ(capture::DefaultRingbufSize(With(CallGraph::kFramePointers, 1)), kMiB);
}

TEST(RingbufSizeTest, GrowsWithTheStackCopyAndTheRate) {
  RecordOptions small = With(CallGraph::kDwarf, 99), large = small;
  large.stack_copy_bytes = kMaxStackCopyBytes;
  EXPECT_LE(capture::DefaultRingbufSize(small), capture::DefaultRingbufSize(large));
  EXPECT_LE(capture::DefaultRingbufSize(With(CallGraph::kFramePointers, 99)),
            capture::DefaultRingbufSize(With(CallGraph::kBpf, 99)));
  EXPECT_LE(capture::DefaultRingbufSize(With(CallGraph::kBpf, 99)),
            capture::DefaultRingbufSize(With(CallGraph::kBpf, 999)));
}

// Off-CPU switch-outs are not paced by the rate: before a process's tables reach BPF each one
// sends a stack copy, and the ring holds 8 MiB of them at least. Frame-pointer chains are small.
TEST(RingbufSizeTest, OffCpuHoldsTheCopiesOfATablelessProcess) {
  RecordOptions agent = With(CallGraph::kBpf, 19);
  uint64_t cpu_only = capture::DefaultRingbufSize(agent);
  agent.off_cpu = true;
  EXPECT_EQ(capture::DefaultRingbufSize(agent), std::max(cpu_only, 8 * kMiB));
  agent.call_graph = CallGraph::kDwarf;
  EXPECT_GE(capture::DefaultRingbufSize(agent), 8 * kMiB);
  agent.call_graph = CallGraph::kFramePointers;
  EXPECT_EQ(capture::DefaultRingbufSize(agent),
            capture::DefaultRingbufSize(With(CallGraph::kFramePointers, 19)));
  RecordOptions fast = With(CallGraph::kDwarf, 100000);
  fast.off_cpu = true;
  EXPECT_EQ(capture::DefaultRingbufSize(fast), 32 * kMiB);
}

}  // namespace
}  // namespace stacksym
