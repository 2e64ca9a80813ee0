// Which stacks and which value the outputs show: the state filter, sample types by name, and
// the checks against a profile without off-CPU time.
#include <gtest/gtest.h>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

using testing::MakeOffCpuProfile;
using testing::MakeSampleProfile;

TEST(SelectionTest, StateFilterKeepsThoseStatesWithTheirValues) {
  Profile p = MakeOffCpuProfile();
  ProfileFilter sleeping;
  sleeping.states = {ThreadState::kSleeping};
  Profile only = FilterProfile(p, sleeping);
  EXPECT_TRUE(only.has_off_cpu());
  ASSERT_EQ(only.stacks.size(), 1u);
  EXPECT_EQ(only.stacks[0].comm, "worker");
  EXPECT_EQ(only.Total(SampleType::kOffCpu), 2'000'000'000u);
  EXPECT_EQ(only.Total(SampleType::kSamples), 0u);
  EXPECT_EQ(FormatFolded(only),
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k];schedule_[k];"
            "[off-cpu: sleeping] 2000000000\n");

  // running: the CPU samples; the profile still measured off-CPU time (wall stays the default).
  ProfileFilter running;
  running.states = {ThreadState::kRunning};
  Profile cpu = FilterProfile(p, running);
  EXPECT_TRUE(cpu.has_off_cpu());
  EXPECT_EQ(cpu.DefaultSampleType(), SampleType::kWall);
  EXPECT_EQ(cpu.Total(SampleType::kSamples), 100u);
  EXPECT_EQ(cpu.Total(SampleType::kWall), 1'000'000'000u);

  // With comm: both must hold.
  ProfileFilter app_waits;
  app_waits.comm = "app";
  app_waits.states = {ThreadState::kUninterruptible, ThreadState::kPreempted};
  EXPECT_EQ(FilterProfile(p, app_waits).Total(SampleType::kWall), 600'000'000u);
  EXPECT_FALSE(app_waits.KeepsAll());
  EXPECT_TRUE(ProfileFilter{}.KeepsAll());
  // Keeping every stack keeps every value.
  Profile all = FilterProfile(p, {});
  for (SampleType type :
       {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall}) {
    EXPECT_EQ(all.Total(type), p.Total(type)) << SampleTypeName(type);
  }
}

TEST(SelectionTest, NamesParseAndUnknownOnesAreErrors) {
  Result<std::vector<ThreadState>> states = ParseThreadStates("sleeping,uninterruptible,sleeping");
  ASSERT_TRUE(states) << states.error().message;
  EXPECT_EQ(*states,
            (std::vector<ThreadState>{ThreadState::kSleeping, ThreadState::kUninterruptible}));
  Result<std::vector<ThreadState>> bad = ParseThreadStates("sleeping,waiting");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "unknown thread state \"waiting\" (known: running, sleeping, uninterruptible, "
            "preempted, other)");
  EXPECT_FALSE(ParseThreadStates(""));
  EXPECT_FALSE(ParseThreadStates("sleeping,"));

  EXPECT_EQ(ParseSampleTypeName("off_cpu").value_or(SampleType::kSamples), SampleType::kOffCpu);
  Result<SampleType> type = ParseSampleTypeName("offcpu");
  ASSERT_FALSE(type);
  EXPECT_EQ(type.error().message,
            "unknown sample type \"offcpu\" (known: samples, cpu, off_cpu, wall)");
}

TEST(SelectionTest, ChoiceIsCheckedAgainstTheProfile) {
  Profile cpu_only = MakeSampleProfile();
  EXPECT_EQ(ChooseSampleType(cpu_only, std::nullopt).value_or(SampleType::kWall),
            SampleType::kSamples);
  EXPECT_EQ(ChooseSampleType(cpu_only, SampleType::kCpu).value_or(SampleType::kWall),
            SampleType::kCpu);
  for (SampleType type : {SampleType::kOffCpu, SampleType::kWall}) {
    Result<SampleType> r = ChooseSampleType(cpu_only, type);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, std::string("sample type ") + SampleTypeName(type) +
                                     ": the profile has no off-CPU time; record with --off-cpu");
  }
  ProfileFilter sleeping;
  sleeping.states = {ThreadState::kRunning, ThreadState::kSleeping};
  Result<SampleType> r = ChooseSampleType(cpu_only, std::nullopt, sleeping);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "thread state sleeping: the profile has no off-CPU time; record with --off-cpu");
  ProfileFilter running;
  running.states = {ThreadState::kRunning};
  EXPECT_TRUE(ChooseSampleType(cpu_only, std::nullopt, running));

  Profile off_cpu = MakeOffCpuProfile();
  EXPECT_EQ(ChooseSampleType(off_cpu, std::nullopt, sleeping).value_or(SampleType::kSamples),
            SampleType::kWall);
  EXPECT_EQ(ChooseSampleType(off_cpu, SampleType::kOffCpu).value_or(SampleType::kSamples),
            SampleType::kOffCpu);
}

// WriteProfileAs checks the choice too: a library caller gets the same error as the commands.
TEST(SelectionTest, WriteProfileAsRefusesWhatTheProfileCannotShow) {
  std::string dir = testing::TestOutputDir("selection");
  WriteOptions options;
  options.sample_type = SampleType::kWall;
  Result<void> r =
      WriteProfileAs(MakeSampleProfile(), ProfileFormat::kFolded, dir + "/x.folded", options);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no off-CPU time"), std::string::npos) << r.error().message;
  options.sample_type = SampleType::kOffCpu;
  ASSERT_TRUE(
      WriteProfileAs(MakeOffCpuProfile(), ProfileFormat::kFolded, dir + "/x.folded", options));
  EXPECT_EQ(testing::ReadFileOrDie(dir + "/x.folded"),
            "app;main;work;inline_helper_[i];[off-cpu: uninterruptible] 500000000\n"
            "app;main;work;inline_helper_[i];ns::hot_leaf(int);[off-cpu: preempted] 100000000\n"
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k];schedule_[k];"
            "[off-cpu: sleeping] 2000000000\n");
}

}  // namespace
}  // namespace stacksym
