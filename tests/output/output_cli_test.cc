// The output commands through the real `stacksym` binary: convert, report, symbolize-profile.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

const std::string kStacksym = std::string(STACKSYM_BINARY_DIR) + "/stacksym";

struct CliRun {
  int status;
  std::string out;
};

CliRun Stacksym(const std::string& args) {
  std::string cmd = kStacksym + " " + args + " 2>&1";
  CliRun run{-1, ""};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return run;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) run.out.append(buf.data(), n);
  int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

class OutputCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestOutputDir("cli");
    pprof_ = dir_ + "/sample.pb.gz";
    ASSERT_TRUE(WriteProfile(testing::MakeSampleProfile(), pprof_));
  }
  std::string dir_, pprof_;
};

TEST_F(OutputCliTest, ConvertBetweenFormats) {
  CliRun folded = Stacksym("convert " + pprof_ + " --to folded");
  ASSERT_EQ(folded.status, 0) << folded.out;
  EXPECT_EQ(folded.out, testing::kSampleFolded);

  // folded → pprof → folded through files.
  std::ofstream(dir_ + "/in.folded") << testing::kSampleFolded;
  ASSERT_EQ(Stacksym("convert " + dir_ + "/in.folded --to pprof -o " + dir_ + "/x.pb.gz").status,
            0);
  CliRun again = Stacksym("convert " + dir_ + "/x.pb.gz --to folded");
  EXPECT_EQ(again.out, testing::kSampleFolded);

  for (const char* to : {"html", "svg"}) {
    std::string out = dir_ + "/x." + to;
    ASSERT_EQ(Stacksym("convert " + pprof_ + " --to " + to + " -o " + out).status, 0);
    EXPECT_NE(testing::ReadFileOrDie(out).find("hot_leaf"), std::string::npos);
  }
  CliRun filtered = Stacksym("convert " + pprof_ + " --to folded --comm worker");
  EXPECT_EQ(filtered.out,
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n");
}

TEST_F(OutputCliTest, ConvertErrors) {
  CliRun bad_format = Stacksym("convert " + pprof_ + " --to png");
  EXPECT_NE(bad_format.status, 0);
  std::ofstream(dir_ + "/bad.folded") << "main;foo notanumber\n";
  CliRun bad_input = Stacksym("convert " + dir_ + "/bad.folded --to svg");
  EXPECT_EQ(bad_input.status, 1);
  EXPECT_NE(bad_input.out.find("line 1"), std::string::npos) << bad_input.out;
  CliRun missing = Stacksym("convert /nonexistent.pb.gz --to folded");
  EXPECT_EQ(missing.status, 1);
}

TEST_F(OutputCliTest, Report) {
  CliRun summary = Stacksym("report " + pprof_);
  ASSERT_EQ(summary.status, 0) << summary.out;
  EXPECT_NE(summary.out.find("Top functions by self samples"), std::string::npos);
  EXPECT_NE(summary.out.find("ns::hot_leaf(int)"), std::string::npos);
  CliRun table = Stacksym("report --stdio --pid 200 " + pprof_);
  ASSERT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("# Samples: 5 "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("100.00%  100.00%            5  [unknown]             [.] "
                           "0x7f0000001234"),
            std::string::npos)
      << table.out;
  CliRun by_comm = Stacksym("report --stdio --comm worker " + pprof_);
  EXPECT_NE(by_comm.out.find("[k] do_syscall_64"), std::string::npos) << by_comm.out;
  EXPECT_EQ(by_comm.out.find("hot_leaf"), std::string::npos) << by_comm.out;
}

// A profile with off-CPU time through convert: the default is wall time, --sample-type picks
// another, --off-cpu-state keeps those states (pprof too).
TEST_F(OutputCliTest, ConvertSampleTypesAndStates) {
  std::string off = dir_ + "/off_cpu.pb.gz";
  ASSERT_TRUE(WriteProfile(testing::MakeOffCpuProfile(), off));
  const std::string sleeping =
      "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k];schedule_[k];"
      "[off-cpu: sleeping] 2000000000\n";
  CliRun wall = Stacksym("convert " + off + " --to folded");
  ASSERT_EQ(wall.status, 0) << wall.out;
  EXPECT_NE(wall.out.find("app;main;work;inline_helper_[i];ns::hot_leaf(int) 800000000\n"),
            std::string::npos)
      << wall.out;
  EXPECT_NE(wall.out.find(sleeping), std::string::npos) << wall.out;
  EXPECT_EQ(Stacksym("convert " + off + " --to folded --sample-type wall").out, wall.out);
  EXPECT_EQ(Stacksym("convert " + off + " --to folded --sample-type samples").out,
            testing::kSampleFolded);
  EXPECT_EQ(Stacksym("convert " + off + " --to folded --sample-type cpu --comm other").out,
            "other;0x7f0000001234 50000000\n");
  EXPECT_EQ(
      Stacksym("convert " + off + " --to folded --sample-type off_cpu --off-cpu-state sleeping")
          .out,
      sleeping);
  // The filter applies to pprof too; the file keeps that off-CPU time was recorded.
  std::string running = dir_ + "/running.pb.gz";
  ASSERT_EQ(Stacksym("convert " + off + " --to pprof --off-cpu-state running -o " + running).status,
            0);
  EXPECT_EQ(Stacksym("convert " + running + " --to folded --sample-type samples").out,
            testing::kSampleFolded);
  CliRun running_wall = Stacksym("convert " + running + " --to folded");
  EXPECT_EQ(running_wall.out.find("[off-cpu"), std::string::npos) << running_wall.out;
  EXPECT_NE(running_wall.out.find("ns::hot_leaf(int) 800000000\n"), std::string::npos);
  // The page opens on the chosen type.
  ASSERT_EQ(
      Stacksym("convert " + off + " --to html --sample-type off_cpu -o " + dir_ + "/x.html").status,
      0);
  EXPECT_NE(testing::ReadFileOrDie(dir_ + "/x.html").find("\"type\":\"off_cpu\""),
            std::string::npos);
  CliRun svg = Stacksym("convert " + off + " --to svg --sample-type cpu");
  EXPECT_NE(svg.out.find("<title>all (1.00 s on CPU, 100.00%)</title>"), std::string::npos);
}

TEST_F(OutputCliTest, SampleTypeErrors) {
  const std::string no_off_cpu = "the profile has no off-CPU time; record with --off-cpu";
  CliRun wall = Stacksym("convert " + pprof_ + " --to folded --sample-type wall");
  EXPECT_EQ(wall.status, 2);
  EXPECT_EQ(wall.out, "stacksym convert: sample type wall: " + no_off_cpu + "\n");
  CliRun state = Stacksym("report " + pprof_ + " --off-cpu-state sleeping");
  EXPECT_EQ(state.status, 2);
  EXPECT_EQ(state.out, "stacksym report: thread state sleeping: " + no_off_cpu + "\n");
  CliRun unknown = Stacksym("report " + pprof_ + " --sample-type offcpu");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.out,
            "stacksym report: unknown sample type \"offcpu\" (known: samples, cpu, off_cpu, "
            "wall)\n");
  CliRun bad_state =
      Stacksym("convert " + pprof_ + " --to folded --off-cpu-state sleeping,waiting");
  EXPECT_EQ(bad_state.status, 2);
  EXPECT_NE(bad_state.out.find("unknown thread state \"waiting\""), std::string::npos)
      << bad_state.out;
  // CPU time of a CPU profile is fine.
  CliRun cpu = Stacksym("convert " + pprof_ + " --to folded --sample-type cpu --pid 200");
  EXPECT_EQ(cpu.out, "other;0x7f0000001234 50505050\n");
  // record says so before recording anything: no off-CPU time is recorded yet.
  std::string out = dir_ + "/never.folded";
  CliRun record = Stacksym("record -q -o " + out + " --sample-type off_cpu -- /bin/true");
  EXPECT_EQ(record.status, 2);
  EXPECT_EQ(record.out, "stacksym record: sample type off_cpu: " + no_off_cpu + "\n");
  CliRun record_typo = Stacksym("record -q -o " + out + " --off-cpu-state sleepin -- /bin/true");
  EXPECT_EQ(record_typo.status, 2);
  EXPECT_NE(record_typo.out.find("unknown thread state \"sleepin\""), std::string::npos);
  EXPECT_FALSE(std::ifstream(out).good());
}

TEST_F(OutputCliTest, ReportOffCpu) {
  std::string off = dir_ + "/off_cpu.pb.gz";
  ASSERT_TRUE(WriteProfile(testing::MakeOffCpuProfile(), off));
  CliRun summary = Stacksym("report " + off);
  ASSERT_EQ(summary.status, 0) << summary.out;
  EXPECT_NE(summary.out.find("; 2.600 s off CPU;"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("      Self      CPU ms  Off-CPU ms     Wall ms  Function\n"
                             "    55.56%       0.000    2000.000    2000.000  schedule [k]"),
            std::string::npos)
      << summary.out;
  CliRun table = Stacksym("report --stdio --sample-type cpu " + off);
  ASSERT_EQ(table.status, 0) << table.out;
  EXPECT_NE(table.out.find("   80.00%   80.00%      800.000      100.000      900.000  app       "
                           "            [.] ns::hot_leaf(int)"),
            std::string::npos)
      << table.out;
  CliRun waits = Stacksym("report --stdio --off-cpu-state uninterruptible,preempted " + off);
  ASSERT_EQ(waits.status, 0) << waits.out;
  EXPECT_NE(waits.out.find("   83.33%  100.00%        0.000      500.000      500.000  app       "
                           "            [.] inline_helper"),
            std::string::npos)
      << waits.out;
  EXPECT_EQ(waits.out.find("schedule"), std::string::npos) << waits.out;
}

TEST_F(OutputCliTest, SymbolizeProfileFromBuildIdDir) {
  const std::string fixture = std::string(STACKSYM_FIXTURE_DIR) + "/output_symbolize_target";
  CliRun id = Stacksym("buildid " + fixture);
  ASSERT_EQ(id.status, 0) << id.out;
  std::string build_id = id.out.substr(0, id.out.find(' '));
  std::string debug = dir_ + "/debug/.build-id/" + build_id.substr(0, 2);
  ASSERT_EQ(std::system(
                ("mkdir -p " + debug + " && cp " + fixture + " " + debug + "/" + build_id.substr(2))
                    .c_str()),
            0);
  // A normalized-only profile: hot_leaf's file offset in a module that no longer exists.
  std::string nm = dir_ + "/nm.txt";
  ASSERT_EQ(std::system(("nm " + fixture + " | grep ' hot_leaf$' > " + nm).c_str()), 0);
  uint64_t vaddr = std::stoull(testing::ReadFileOrDie(nm), nullptr, 16);
  // The fixture is a PIE linked by GNU ld: its text segment has offset == vaddr.
  Profile p;
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < build_id.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoi(build_id.substr(i, 2), nullptr, 16)));
  }
  uint32_t m = p.AddModule({ModuleKind::kElf, "/deleted/target", bytes});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, vaddr});
  p.AddSample({1, 1, "target", {f}}, 3);
  ASSERT_TRUE(WriteProfile(p, dir_ + "/normalized.pb.gz"));
  CliRun before = Stacksym("convert " + dir_ + "/normalized.pb.gz --to folded");
  EXPECT_EQ(
      before.out, "target;target+0x" + [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(vaddr));
        return std::string(buf);
      }() + " 3\n");

  CliRun run = Stacksym("symbolize-profile --no-default-debug-dir --debug-dir " + dir_ + "/debug " +
                        dir_ + "/normalized.pb.gz " + dir_ + "/symbolized.pb.gz");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("1 of 1 frames symbolized"), std::string::npos) << run.out;
  CliRun after = Stacksym("convert " + dir_ + "/symbolized.pb.gz --to folded");
  EXPECT_EQ(after.out, "target;hot_leaf 3\n");

  // Without the debug dir: nothing found, said so, and the output is still written.
  CliRun none = Stacksym("symbolize-profile --no-default-debug-dir " + dir_ + "/normalized.pb.gz " +
                         dir_ + "/still.folded");
  EXPECT_EQ(none.status, 0) << none.out;
  EXPECT_NE(none.out.find("/deleted/target: no binary with build ID " + build_id),
            std::string::npos)
      << none.out;
  EXPECT_EQ(testing::ReadFileOrDie(dir_ + "/still.folded"), before.out);
}

}  // namespace
}  // namespace stacksym
