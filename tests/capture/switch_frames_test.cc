// SwitchFrames: the range of __traceiter_sched_switch from kallsyms text (to the next symbol),
// stacks cut after a frame in it when it is among the first frames, left alone otherwise, and
// nothing cut where kallsyms hides its addresses. The live /proc/kallsyms, where readable,
// gives a range that holds the real symbol.
#include "capture/switch_frames.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace stacksym::capture {
namespace {

const char* const kText =
    "ffffffff813a5000 T __traceiter_sched_kthread_stop\n"
    "ffffffff813a50a0 T __pfx___traceiter_sched_switch\n"
    "ffffffff813a50b0 T __traceiter_sched_switch\n"
    "ffffffff813a5140 T __probestub_sched_switch\n"
    "ffffffff822658a0 t __schedule\n";

TEST(SwitchFramesTest, CutsAfterTheTracepointFrame) {
  SwitchFrames frames = SwitchFrames::FromText(kText);
  ASSERT_TRUE(frames.known());
  const uint64_t schedule = 0xffffffff822658f0, caller = 0xffffffff82266000;
  std::vector<uint64_t> with = {0xffffffff813a50d4, schedule, caller};
  std::span<const uint64_t> cut = frames.Trim(with);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0], schedule);
  // Behind another frame above it (bpf_trace_run4 left by a smaller skip): cut there too.
  std::vector<uint64_t> deeper = {0xffffffff81300000, 0xffffffff813a50b0, schedule, caller};
  EXPECT_EQ(frames.Trim(deeper).size(), 2u);
  // Not among the first frames, or not there at all (a stack already starting at
  // __schedule; the range's end belongs to the next symbol): left alone.
  std::vector<uint64_t> without = {schedule, caller, 0xffffffff813a5140};
  EXPECT_EQ(frames.Trim(without).size(), 3u);
  std::vector<uint64_t> late = {1, 2, 3, 4, 0xffffffff813a50d4, schedule};
  EXPECT_EQ(frames.Trim(late).size(), late.size());
  EXPECT_TRUE(frames.Trim({}).empty());
}

// From a file as /proc/kallsyms lays it out: the padding symbol __pfx_ + name comes first.
TEST(SwitchFramesTest, FromAFile) {
  std::string path = ::testing::TempDir() + "/switch_frames_kallsyms";
  std::ofstream(path) << kText;
  SwitchFrames frames = SwitchFrames::FromKallsyms(path);
  ASSERT_TRUE(frames.known());
  std::vector<uint64_t> ips = {0xffffffff813a50a8, 0xffffffff813a513f, 7};
  EXPECT_EQ(frames.Trim(ips).size(), 1u);  // the padding is not the function
  std::remove(path.c_str());
}

TEST(SwitchFramesTest, HiddenOrMissingAddressesCutNothing) {
  std::vector<uint64_t> ips = {0xffffffff813a50d4, 0xffffffff822658f0};
  for (const char* text :
       {"0000000000000000 T __traceiter_sched_switch\n0000000000000000 T __probestub\n",
        "ffffffff813a50b0 T __traceiter_sched_switch\n",  // no symbol after it
        "ffffffff813a50b0 T other\nffffffff813a5140 T next\n", "", "garbage\n\n zz z\n"}) {
    SwitchFrames frames = SwitchFrames::FromText(text);
    EXPECT_FALSE(frames.known()) << text;
    EXPECT_EQ(frames.Trim(ips).size(), 2u) << text;
  }
  EXPECT_FALSE(SwitchFrames::FromKallsyms("/nonexistent/kallsyms").known());
}

TEST(SwitchFramesTest, LiveKallsyms) {
  std::ifstream in("/proc/kallsyms");
  std::string line, address;
  while (std::getline(in, line)) {
    if (line.find(" __traceiter_sched_switch") != std::string::npos) {
      address = line.substr(0, line.find(' '));
      break;
    }
  }
  if (address.empty() || address.find_first_not_of('0') == std::string::npos) {
    GTEST_SKIP() << "/proc/kallsyms shows no address of __traceiter_sched_switch (not root, "
                    "kernel.kptr_restrict, or a kernel without it)";
  }
  SwitchFrames frames = SwitchFrames::FromKallsyms();
  ASSERT_TRUE(frames.known());
  std::vector<uint64_t> ips = {std::stoull(address, nullptr, 16) + 1, 42};
  EXPECT_EQ(frames.Trim(ips).size(), 1u);
}

}  // namespace
}  // namespace stacksym::capture
