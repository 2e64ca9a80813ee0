// Windows (RecordOptions::window_s, the agent's recording): one recording cut into profiles
// that tile time, every sample in exactly one of them at its own time, each window complete on
// its own (modules with their files, processes), and symbolizable alone. Needs root.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "record_test_util.h"
#include "stacksym/capture.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/capture_app";

struct Window {
  Profile profile;
  RecordStats stats;
};

std::vector<Window> RecordWindows(RecordOptions o, std::unique_ptr<Recorder>& rec) {
  std::vector<Window> windows;
  EXPECT_TRUE(rec->Run({},
                       [&](Profile&& p, const RecordStats& s) {
                         windows.push_back({std::move(p), s});
                       })
                  .ok());
  return windows;
}

TEST(RecordWindowsTest, WindowsTileTimeAndHoldEverySampleOnce) {
  Fixture app(kFixture, 4.0);
  RecordOptions o;
  o.pids = {app.pid()};
  o.frequency_hz = 499;
  o.window_s = 0.4;
  o.duration_s = 2.0;
  CREATE_RECORDER_OR_SKIP(rec, o);
  std::vector<Window> windows = RecordWindows(o, rec);
  const RecordStats& st = rec->stats();
  ASSERT_GT(st.samples, 100u);
  // 2 s of 0.4 s windows: five full ones, and the last cut where sampling stopped.
  EXPECT_GE(windows.size(), 5u);
  EXPECT_LE(windows.size(), 7u);
  EXPECT_EQ(st.windows, windows.size());
  uint64_t total = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const Profile& p = windows[i].profile;
    if (i + 1 < windows.size()) {
      EXPECT_EQ(p.start_time_ns + p.duration_ns, windows[i + 1].profile.start_time_ns)
          << "window " << i << " does not end where the next begins";
      EXPECT_EQ(p.duration_ns, 400'000'000u);
    }
    ASSERT_EQ(p.times.size(), p.stacks.size()) << "window " << i;
    for (size_t s = 0; s < p.stacks.size(); ++s) {
      uint64_t sum = 0;
      for (const TimedValue& t : p.times[s]) {
        EXPECT_GE(t.time_ns, p.start_time_ns) << "window " << i;
        EXPECT_LT(t.time_ns, p.start_time_ns + p.duration_ns) << "window " << i;
        sum += t.value;
      }
      EXPECT_EQ(sum, p.counts[s]) << "window " << i << " stack " << s;
    }
    total += p.total_samples();
    if (!p.stacks.empty()) {
      const ProfileProcess* process = p.FindProcess(static_cast<uint32_t>(app.pid()));
      ASSERT_NE(process, nullptr) << "window " << i;
      EXPECT_EQ(process->executable, kFixture);
      EXPECT_FALSE(process->name.empty());
    }
  }
  EXPECT_EQ(total, st.samples - st.lost);
  EXPECT_EQ(rec->profile().stacks.size(), 0u) << "windows leave nothing behind";

  // Each window symbolizes on its own (its modules' files came with it), and one session
  // over all windows gives the same answers as a symbolizer per window.
  ProfileSymbolizeOptions sym;
  sym.kallsyms_path.clear();
  ProfileSymbolizer session(sym);
  uint64_t hot = 0;
  for (Window& w : windows) {
    Profile alone = w.profile;
    SymbolizeProfile(alone, sym);
    session.Symbolize(w.profile);
    ASSERT_EQ(alone.symbols.size(), w.profile.symbols.size());
    for (size_t f = 0; f < alone.symbols.size(); ++f) {
      EXPECT_EQ(alone.symbols[f].has_value(), w.profile.symbols[f].has_value());
      if (alone.symbols[f] && w.profile.symbols[f]) {
        EXPECT_EQ(alone.symbols[f]->lines.size(), w.profile.symbols[f]->lines.size());
        if (!alone.symbols[f]->lines.empty() && !w.profile.symbols[f]->lines.empty()) {
          EXPECT_EQ(alone.symbols[f]->lines[0].function, w.profile.symbols[f]->lines[0].function);
        }
      }
    }
    for (const NamedStack& s : Named(w.profile)) {
      if (!s.user.empty() && s.user.front() == "cap_hot_leaf") hot += s.count;
    }
  }
  EXPECT_GT(hot, total / 10) << "the hot leaf is named in the windows";
  EXPECT_GT(session.remembered_frames(), 0u);
}

// Off-CPU intervals fall into the window they ended in, at their end; none is lost or counted
// twice across windows (the kernel's sums are drained into whichever window is open).
TEST(RecordWindowsTest, OffCpuIntervalsEachInOneWindow) {
  const std::string app = std::string(STACKSYM_FIXTURE_DIR) + "/off_cpu_app";
  std::string out = testing::TempDir() + "/record_windows_off_cpu.txt";
  RecordOptions o;
  o.command = {app, "2", "blocking", out};
  o.frequency_hz = 199;
  o.off_cpu = true;
  o.window_s = 0.3;
  CREATE_RECORDER_OR_SKIP(rec, o);
  std::vector<Window> windows = RecordWindows(o, rec);
  const OffCpuCounts& c = rec->stats().off_cpu;
  ASSERT_GT(c.recorded, 100u) << "too few intervals to judge";
  uint64_t off_cpu = 0, cpu = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const Profile& p = windows[i].profile;
    EXPECT_TRUE(p.has_off_cpu());
    for (size_t s = 0; s < p.stacks.size(); ++s) {
      uint64_t sum = 0;
      for (const TimedValue& t : p.times[s]) {
        EXPECT_GE(t.time_ns, p.start_time_ns) << "window " << i;
        EXPECT_LT(t.time_ns, p.start_time_ns + p.duration_ns) << "window " << i;
        sum += t.value;
      }
      uint64_t value = p.stacks[s].state == ThreadState::kRunning ? p.counts[s] : p.off_cpu_ns[s];
      EXPECT_EQ(sum, value) << "window " << i << " stack " << s;
      off_cpu += p.Value(s, SampleType::kOffCpu);
      cpu += p.Value(s, SampleType::kSamples);
    }
  }
  EXPECT_EQ(off_cpu, c.recorded_ns);
  EXPECT_EQ(cpu, rec->stats().samples - rec->stats().lost);
}

}  // namespace
}  // namespace stacksym
