#include <gtest/gtest.h>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

const FunctionStat* Find(const std::vector<FunctionStat>& stats, const std::string& name) {
  for (const FunctionStat& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(ReportTest, SelfAndTotalSamples) {
  std::vector<FunctionStat> stats = TopFunctions(testing::MakeSampleProfile());
  ASSERT_GE(stats.size(), 3u);
  // Sorted by self.
  EXPECT_EQ(stats[0].name, "ns::hot_leaf(int)");
  EXPECT_EQ(stats[0].self, 80u);
  EXPECT_EQ(stats[0].total, 80u);
  EXPECT_EQ(stats[0].module, "/usr/bin/app");
  EXPECT_EQ(stats[1].name, "do_syscall_64");
  EXPECT_TRUE(stats[1].kernel);
  EXPECT_EQ(stats[1].self, 15u);
  EXPECT_EQ(stats[2].name, "0x7f0000001234");
  EXPECT_EQ(stats[2].self, 5u);

  const FunctionStat* main_fn = Find(stats, "main");
  ASSERT_NE(main_fn, nullptr);
  EXPECT_EQ(main_fn->self, 0u);
  EXPECT_EQ(main_fn->total, 95u);
  const FunctionStat* helper = Find(stats, "inline_helper");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->total, 80u);
  EXPECT_EQ(helper->self, 0u);  // hot_leaf, called from it, is the leaf
  const FunctionStat* lib = Find(stats, "libfoo.so+0x2000");
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->total, 15u);
}

TEST(ReportTest, RecursionCountsOncePerStackInTotal) {
  Profile p;
  uint32_t m = p.AddModule({ModuleKind::kElf, "/bin/r", {}});
  uint32_t a = p.InternFrame({FrameKind::kUser, m, 1});
  uint32_t b = p.InternFrame({FrameKind::kUser, m, 2});
  p.symbols.resize(2);
  p.symbols[a] = FrameSymbols{std::nullopt, {SourceFrame{"recurse", "", "", 0, 0, false}}};
  p.symbols[b] = FrameSymbols{std::nullopt, {SourceFrame{"recurse", "", "", 0, 0, false}}};
  p.AddSample({1, 1, "r", {a, b, a}}, 4);
  std::vector<FunctionStat> stats = TopFunctions(p);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].self, 4u);
  EXPECT_EQ(stats[0].total, 4u);
}

TEST(ReportTest, FiltersByCommAndPid) {
  Profile p = testing::MakeSampleProfile();
  std::vector<FunctionStat> worker = TopFunctions(p, {.comm = "worker", .pid = std::nullopt});
  ASSERT_FALSE(worker.empty());
  EXPECT_EQ(worker[0].name, "do_syscall_64");
  EXPECT_EQ(Find(worker, "ns::hot_leaf(int)"), nullptr);
  std::vector<FunctionStat> other = TopFunctions(p, {.comm = std::nullopt, .pid = 200});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].self, 5u);

  Profile filtered = FilterProfile(p, {.comm = std::nullopt, .pid = 100});
  EXPECT_EQ(filtered.total_samples(), 95u);
  EXPECT_EQ(FormatFolded(filtered),
            "app;main;work;inline_helper_[i];ns::hot_leaf(int) 80\n"
            "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n");
}

TEST(ReportTest, TextReports) {
  Profile p = testing::MakeSampleProfile();
  std::string summary = FormatReport(p);
  EXPECT_NE(summary.find("100 samples in 4 distinct stacks over 3.000 s (sampling every 10.101 "
                         "ms); 2 samples lost"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("80.00%        80  ns::hot_leaf(int)  (app)"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("95.00%        95  main  (app)"), std::string::npos) << summary;

  ReportOptions stdio;
  stdio.stdio_table = true;
  std::string table = FormatReport(p, stdio);
  EXPECT_NE(table.find("# Samples: 100  distinct stacks: 4  duration: 3.000 s  lost: 2  event: "
                       "cpu-clock"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("   80.00%   80.00%           80  app                   [.] "
                       "ns::hot_leaf(int)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("[k] do_syscall_64"), std::string::npos) << table;
  // --no-children: functions without self samples are not listed.
  EXPECT_EQ(table.find("] main"), std::string::npos) << table;
}

// With off-CPU time, self and total are in the chosen type (wall by default), and every stat
// keeps its CPU samples and off-CPU time apart.
TEST(ReportTest, OffCpuTimeInTopFunctions) {
  Profile p = testing::MakeOffCpuProfile();
  std::vector<FunctionStat> wall = TopFunctions(p);
  ASSERT_GE(wall.size(), 5u);
  EXPECT_EQ(wall[0].name, "schedule");  // only off CPU, 2 s
  EXPECT_EQ(wall[0].self, 2'000'000'000u);
  EXPECT_EQ(wall[0].self_samples, 0u);
  EXPECT_EQ(wall[0].self_off_cpu_ns, 2'000'000'000u);
  EXPECT_EQ(wall[1].name, "ns::hot_leaf(int)");  // 800 ms on CPU, 100 ms preempted
  EXPECT_EQ(wall[1].self, 900'000'000u);
  EXPECT_EQ(wall[1].self_samples, 80u);
  EXPECT_EQ(wall[1].self_off_cpu_ns, 100'000'000u);
  EXPECT_EQ(wall[2].name, "inline_helper");  // the uninterruptible stack's leaf
  EXPECT_EQ(wall[2].self, 500'000'000u);
  const FunctionStat* main_fn = Find(wall, "main");
  ASSERT_NE(main_fn, nullptr);
  EXPECT_EQ(main_fn->total, 3'550'000'000u);
  EXPECT_EQ(main_fn->total_samples, 95u);
  EXPECT_EQ(main_fn->total_off_cpu_ns, 2'600'000'000u);

  std::vector<FunctionStat> cpu = TopFunctions(p, {}, SampleType::kCpu);
  EXPECT_EQ(cpu[0].name, "ns::hot_leaf(int)");
  EXPECT_EQ(cpu[0].self, 800'000'000u);
  const FunctionStat* schedule = Find(cpu, "schedule");
  ASSERT_NE(schedule, nullptr);
  EXPECT_EQ(schedule->total, 0u);
  EXPECT_EQ(schedule->total_off_cpu_ns, 2'000'000'000u);
  // The state filter, as every output applies it.
  ProfileFilter waits;
  waits.states = {ThreadState::kUninterruptible, ThreadState::kPreempted};
  std::vector<FunctionStat> waiting = TopFunctions(p, waits);
  EXPECT_EQ(waiting[0].name, "inline_helper");
  EXPECT_EQ(waiting[0].self, 500'000'000u);
  EXPECT_EQ(Find(waiting, "schedule"), nullptr);
}

TEST(ReportTest, OffCpuColumns) {
  Profile p = testing::MakeOffCpuProfile();
  std::string summary = FormatReport(p);
  EXPECT_NE(summary.find("100 samples in 7 distinct stacks over 3.000 s (sampling every 10.000 "
                         "ms); 2.600 s off CPU; 2 samples lost\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("By thread name (wall time):\n   59.72%  2150.000 ms  worker\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(
      summary.find("Top functions by self wall time:\n"
                   "      Self      CPU ms  Off-CPU ms     Wall ms  Function\n"
                   "    55.56%       0.000    2000.000    2000.000  schedule [k]  "
                   "([kernel.kallsyms])\n"
                   "    25.00%     800.000     100.000     900.000  ns::hot_leaf(int)  (app)\n"),
      std::string::npos)
      << summary;
  EXPECT_NE(summary.find("Top functions by total wall time (self + callees):\n"
                         "     Total      CPU ms  Off-CPU ms     Wall ms  Function\n"
                         "    98.61%     950.000    2600.000    3550.000  main  (app)\n"),
            std::string::npos)
      << summary;

  ReportOptions stdio;
  stdio.stdio_table = true;
  stdio.sample_type = SampleType::kOffCpu;
  std::string table = FormatReport(p, stdio);
  EXPECT_NE(table.find("# Samples: 100  distinct stacks: 7  duration: 3.000 s  lost: 2  event: "
                       "cpu-clock  off-CPU: 2.600 s  shown: off-CPU time\n#\n"
                       "#    Self    Total       CPU ms   Off-CPU ms      Wall ms  Shared Object "
                       "        Symbol\n"
                       "# .......  .......  ...........  ...........  ...........  "
                       "....................  ......\n"
                       "   76.92%   76.92%        0.000     2000.000     2000.000  "
                       "[kernel.kallsyms]     [k] schedule\n"),
            std::string::npos)
      << table;
  // Off CPU, on-CPU-only functions have no self: --no-children leaves them out.
  EXPECT_EQ(table.find("0x7f0000001234"), std::string::npos) << table;
  // The samples of an off-CPU profile: the count, then the times.
  stdio.sample_type = SampleType::kSamples;
  table = FormatReport(p, stdio);
  EXPECT_NE(table.find("#    Self    Total      Samples       CPU ms   Off-CPU ms      Wall ms"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("   80.00%   80.00%           80      800.000      100.000      900.000  "
                       "app                   [.] ns::hot_leaf(int)\n"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace stacksym
