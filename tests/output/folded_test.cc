#include <gtest/gtest.h>

#include <cstdint>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

using testing::kSampleFolded;
using testing::MakeSampleProfile;

TEST(FoldedTest, HandBuiltProfileGivesExactText) {
  EXPECT_EQ(FormatFolded(MakeSampleProfile()), kSampleFolded);
}

// The value of each line is the chosen sample type's, in its unit; off-CPU stacks end in their
// state's frame, so that a code path on and off CPU stays two lines.
TEST(FoldedTest, SampleTypePicksTheValue) {
  Profile p = testing::MakeOffCpuProfile();
  const char kWall[] =
      "app;main;work;inline_helper_[i];[off-cpu: uninterruptible] 500000000\n"
      "app;main;work;inline_helper_[i];ns::hot_leaf(int) 800000000\n"
      "app;main;work;inline_helper_[i];ns::hot_leaf(int);[off-cpu: preempted] 100000000\n"
      "other;0x7f0000001234 50000000\n"
      "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 150000000\n"
      "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k];schedule_[k];"
      "[off-cpu: sleeping] 2000000000\n";
  EXPECT_EQ(FormatFolded(p), kWall);  // the default with off-CPU time
  FoldedOptions options;
  options.sample_type = SampleType::kSamples;
  EXPECT_EQ(FormatFolded(p, options), kSampleFolded);  // off-CPU stacks have no samples
  options.sample_type = SampleType::kCpu;
  EXPECT_EQ(FormatFolded(p, options),
            "app;main;work;inline_helper_[i];ns::hot_leaf(int) 800000000\n"
            "other;0x7f0000001234 50000000\n"
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 150000000\n");
  options.sample_type = SampleType::kWall;
  EXPECT_EQ(FormatFolded(p, options), kWall);

  // Read back, a folded file's one value is the samples; the state frame is a plain frame, and
  // writing again gives the same text.
  Result<Profile> back = ParseFolded(kWall);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_FALSE(back->has_off_cpu());
  EXPECT_EQ(back->total_samples(), 3'600'000'000u);
  EXPECT_EQ(FormatFolded(*back), kWall);
}

TEST(FoldedTest, MarkersCanBeTurnedOff) {
  FoldedOptions options;
  options.mark_inline = false;
  options.mark_kernel = false;
  EXPECT_EQ(FormatFolded(MakeSampleProfile(), options),
            "app;main;work;inline_helper;ns::hot_leaf(int) 80\n"
            "other;0x7f0000001234 5\n"
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64;do_syscall_64 15\n");
}

TEST(FoldedTest, SeparatorsInNamesAreReplaced) {
  Profile p;
  uint32_t m = p.AddModule({ModuleKind::kElf, "/bin/x", {}});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, 0x10});
  p.symbols.resize(1);
  p.symbols[0] = FrameSymbols{std::nullopt, {SourceFrame{"a;b\nc", "", "", 0, 0, false}}};
  p.AddSample({1, 1, "my;comm", {f}}, 3);
  EXPECT_EQ(FormatFolded(p), "my:comm;a:b c 3\n");
}

TEST(FoldedTest, PlainNamesEndingInAMarkerStayPlain) {
  // Found by fuzz_folded_reader: "x_[k]" as a user function must not come back as kernel.
  Result<Profile> parsed = ParseFolded("a;x_[k]_[i];y_[i] 1\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  std::string once = FormatFolded(*parsed);
  EXPECT_EQ(once, "a;x_[k] ;y_[i] 1\n");
  Result<Profile> again = ParseFolded(once);
  ASSERT_TRUE(again);
  EXPECT_EQ(FormatFolded(*again), once);
  EXPECT_EQ(again->frames[again->stacks[0].frames.back()].kind, FrameKind::kUser);
}

TEST(FoldedTest, ZeroCountStacksAreLeftOut) {
  Profile p = MakeSampleProfile();
  p.counts[3] = 0;  // "other"
  EXPECT_EQ(FormatFolded(p).find("other"), std::string::npos);
}

TEST(FoldedTest, RoundTripKeepsStacksCountsAndInlineChains) {
  Result<Profile> parsed = ParseFolded(kSampleFolded);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(FormatFolded(*parsed), kSampleFolded);
  EXPECT_EQ(parsed->total_samples(), 100u);

  // "work;inline_helper_[i]" is one frame whose inline chain is [inline_helper, work].
  const Profile& p = *parsed;
  const ProfileStack* app = nullptr;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    if (p.stacks[i].comm == "app") app = &p.stacks[i];
  }
  ASSERT_NE(app, nullptr);
  ASSERT_EQ(app->frames.size(), 3u);  // leaf, work+inline, main
  const auto& chain = p.symbols[app->frames[1]];
  ASSERT_TRUE(chain);
  ASSERT_EQ(chain->lines.size(), 2u);
  EXPECT_EQ(chain->lines[0].function, "inline_helper");
  EXPECT_TRUE(chain->lines[0].inlined);
  EXPECT_EQ(chain->lines[1].function, "work");
  EXPECT_FALSE(chain->lines[1].inlined);

  // Kernel frames come back as kernel frames.
  const ProfileStack* worker = nullptr;
  for (const ProfileStack& s : p.stacks) {
    if (s.comm == "worker") worker = &s;
  }
  ASSERT_NE(worker, nullptr);
  ASSERT_EQ(worker->frames.size(), 4u);
  EXPECT_EQ(p.frames[worker->frames[0]].kind, FrameKind::kKernel);
  EXPECT_EQ(p.symbols[worker->frames[0]]->lines[0].function, "do_syscall_64");
  EXPECT_EQ(p.frames[worker->frames[2]].kind, FrameKind::kUser);
}

TEST(FoldedTest, EqualStacksOnSeveralLinesAreSummed) {
  Result<Profile> parsed = ParseFolded("a;x;y 2\r\n\na;x;y 3\nb 1\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(FormatFolded(*parsed), "a;x;y 5\nb 1\n");
}

TEST(FoldedTest, FramesWithSpacesAreKept) {
  Result<Profile> parsed = ParseFolded("app;foo(int, char) const;bar 7");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(FormatFolded(*parsed), "app;foo(int, char) const;bar 7\n");
}

TEST(FoldedTest, BadLinesAreErrorsNamingTheLine) {
  for (const char* bad : {"a;b\n", "a;b x\n", "a;b -1\n", "a;;b 1\n", " 5\n",
                          "a;b 99999999999999999999999\n", "ok 1\na;b 1x\n"}) {
    Result<Profile> parsed = ParseFolded(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kMalformed);
    EXPECT_NE(parsed.error().message.find("line"), std::string::npos);
  }
  Result<Profile> second = ParseFolded("ok 1\nbad\n");
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("line 2"), std::string::npos);
}

// Equal stacks are merged by adding counts: a total past 2^63-1 is refused on the line that
// crosses it, so no merged count wraps or is beyond what pprof can carry.
TEST(FoldedTest, CountsAddingUpPastInt64AreRefused) {
  Result<Profile> at_limit = ParseFolded("a;b 9223372036854775000\na;b 807\n");
  ASSERT_TRUE(at_limit) << at_limit.error().message;
  ASSERT_EQ(at_limit->counts.size(), 1u);
  EXPECT_EQ(at_limit->counts[0], uint64_t{INT64_MAX});
  Result<Profile> past = ParseFolded("a;b 9223372036854775000\nc 808\n");
  ASSERT_FALSE(past);
  EXPECT_NE(past.error().message.find("line 2"), std::string::npos) << past.error().message;
  EXPECT_NE(past.error().message.find("2^63-1"), std::string::npos);
}

}  // namespace
}  // namespace stacksym
