#include "test_profiles.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace stacksym::testing {
namespace {

SourceFrame Line(std::string function, std::string raw, std::string file, uint32_t line,
                 uint32_t column, bool inlined) {
  SourceFrame f;
  f.function = std::move(function);
  f.raw_function = std::move(raw);
  f.file = std::move(file);
  f.line = line;
  f.column = column;
  f.inlined = inlined;
  return f;
}

}  // namespace

const char kSampleFolded[] =
    "app;main;work;inline_helper_[i];ns::hot_leaf(int) 80\n"
    "other;0x7f0000001234 5\n"
    "worker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n";

Profile MakeNormalizedOnlyProfile() {
  Profile p;
  uint32_t app = p.AddModule({ModuleKind::kElf, "/usr/bin/app", {0xab, 0xcd, 0x01, 0x02}});
  uint32_t lib = p.AddModule({ModuleKind::kElf, "/usr/lib/libfoo.so", {0x11, 0x22, 0x33}});
  uint32_t kernel = p.AddModule({ModuleKind::kKernel, "[kernel.kallsyms]", {}});
  uint32_t f_main = p.InternFrame({FrameKind::kUser, app, 0x1000});
  uint32_t f_work = p.InternFrame({FrameKind::kUser, app, 0x1100});
  uint32_t f_leaf = p.InternFrame({FrameKind::kUser, app, 0x1200});
  uint32_t f_lib = p.InternFrame({FrameKind::kUser, lib, 0x2000});
  uint32_t f_ksys = p.InternFrame({FrameKind::kKernel, kernel, 0xffffffff81000100});
  uint32_t f_kentry = p.InternFrame({FrameKind::kKernel, kernel, 0xffffffff81000200});
  uint32_t f_raw = p.InternFrame({FrameKind::kUserRaw, 0, 0x7f0000001234});
  p.AddSample({100, 100, "app", {f_leaf, f_work, f_main}}, 60);
  p.AddSample({100, 101, "app", {f_leaf, f_work, f_main}}, 20);
  p.AddSample({100, 102, "worker", {f_ksys, f_kentry, f_lib, f_main}}, 15);
  p.AddSample({200, 200, "other", {f_raw}}, 5);
  p.period_ns = 10101010;
  p.start_time_ns = 1700000000000000000;
  p.duration_ns = 3000000000;
  p.lost_samples = 2;
  p.event = "cpu-clock";
  p.symbols.resize(p.frames.size());
  return p;
}

Profile MakeSampleProfile() {
  Profile p = MakeNormalizedOnlyProfile();
  // Frame indices follow the interning order above.
  p.symbols[0] = FrameSymbols{std::nullopt, {Line("main", "main", "app.cc", 10, 0, false)}};
  p.symbols[1] = FrameSymbols{std::nullopt,
                              {Line("inline_helper", "_ZL13inline_helperv", "app.h", 20, 3, true),
                               Line("work", "_Z4workv", "app.cc", 30, 7, false)}};
  p.symbols[2] = FrameSymbols{
      std::nullopt, {Line("ns::hot_leaf(int)", "_ZN2ns8hot_leafEi", "app.cc", 42, 5, false)}};
  p.symbols[3] = FrameSymbols{Reason::kNoSymbol, {}};
  p.symbols[4] =
      FrameSymbols{std::nullopt, {Line("do_syscall_64", "do_syscall_64", "", 0, 0, false)}};
  p.symbols[5] =
      FrameSymbols{std::nullopt, {Line("entry_SYSCALL_64", "entry_SYSCALL_64", "", 0, 0, false)}};
  return p;
}

Profile MakeOffCpuProfile() {
  Profile p = MakeSampleProfile();
  p.period_ns = 10'000'000;
  // Frame indices follow MakeNormalizedOnlyProfile's interning order.
  const uint32_t f_main = 0, f_work = 1, f_leaf = 2, f_lib = 3, f_ksys = 4, f_kentry = 5;
  const uint32_t kernel = 2;
  uint32_t f_schedule = p.InternFrame({FrameKind::kKernel, kernel, 0xffffffff81000300});
  p.symbols.resize(p.frames.size());
  p.symbols[f_schedule] =
      FrameSymbols{std::nullopt, {Line("schedule", "schedule", "", 0, 0, false)}};
  p.AddOffCpu(
      {100, 102, "worker", {f_schedule, f_ksys, f_kentry, f_lib, f_main}, ThreadState::kSleeping},
      2'000'000'000);
  p.AddOffCpu({100, 101, "app", {f_work, f_main}, ThreadState::kUninterruptible}, 500'000'000);
  p.AddOffCpu({100, 100, "app", {f_leaf, f_work, f_main}, ThreadState::kPreempted}, 100'000'000);
  return p;
}

std::string DeepFolded(uint64_t tower_samples) {
  const std::string base = "python3;_start;main;run;";
  std::string text = base + "compute 6050\n" + base + "compute;helper 400\n" + base +
                     "parse_json 2500\n" + base + "read_file 999\n" + base + "read_file";
  for (int i = 0; i < 250; ++i) text += ";spin";
  text += " 1\n";
  if (tower_samples == 0) return text;
  for (const std::string name : {"recurse", "visit"}) {
    text += base;
    for (int i = 0; i < 186; ++i) text += name + ";";
    text += "deep_leaf " + std::to_string(tower_samples) + "\n";
  }
  return text;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TestOutputDir(const std::string& name) {
  // One directory per test case: ctest runs the cases of one binary in parallel.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = std::string(STACKSYM_BINARY_DIR) + "/test-artifacts/output/" + name +
                    (test ? "/" + std::string(test->name()) : "");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace stacksym::testing
