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
  EXPECT_NE(none.out.find("/deleted/target: no binary with build ID " + build_id), std::string::npos)
      << none.out;
  EXPECT_EQ(testing::ReadFileOrDie(dir_ + "/still.folded"), before.out);
}

}  // namespace
}  // namespace stacksym
