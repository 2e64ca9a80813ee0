// JIT frames in recordings (issue 39): Node with --perf-basic-prof, Java with its perf map
// written at exit (-XX:+DumpPerfMapAtExit), CPython 3.12 with -X perf, each running a hot
// function for a few seconds under the recorder. Their frames lie in anonymous memory: the
// profile keeps their addresses with the process's pid, the recorder reads the perf maps at the
// end (the JVM's only exists once it has exited), and the one profile symbolizer names them.
// Goals from the issue: ≥ 75 % of Node's main-thread samples name a JS function, ≥ 75 % of the
// Java main thread's. And the two paths agree: the same recording written without names and
// named later by `stacksym symbolize-profile --perf-map-dir` names every JIT frame as `record`
// did.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "record_test_util.h"
#include "stacksym/capture.h"
#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kScripts = std::string(STACKSYM_SOURCE_DIR) + "/tests/capture/scripts/";

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string TempDir(const std::string& tag) {
  std::string templ = "/tmp/stacksym-jit-" + tag + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  return mkdtemp(buf.data()) != nullptr ? std::string(buf.data()) : std::string();
}

// Records `command` to its end (at most `seconds` + 10 s) with the defaults `record` uses.
Result<Profile> RecordCommand(const std::vector<std::string>& command, bool python,
                              std::string* skip, std::string* described = nullptr) {
  RecordOptions options;
  options.command = command;
  options.frequency_hz = 199;
  options.python = python;
  options.duration_s = 20;
  Result<std::unique_ptr<Recorder>> rec = Recorder::Create(options);
  if (!rec) {
    if (Refused(rec.error()))
      *skip = "kernel refused the capture backend: " + rec.error().ToString();
    return rec.error();
  }
  if (Result<void> run = (*rec)->Run(); !run) return run.error();
  if (described != nullptr) {
    const RecordStats& st = (*rec)->stats();
    *described = "samples " + std::to_string(st.samples) + ", lost " + std::to_string(st.lost) +
                 ", aggregated " + std::to_string(st.aggregated) + ", frames not normalized " +
                 std::to_string(st.frames_not_normalized) + ", user stacks empty " +
                 std::to_string(st.user_stacks_empty) + ", modules " +
                 std::to_string((*rec)->profile().modules.size());
  }
  return std::move((*rec)->profile());
}

bool IsJitModule(const Profile& p, uint32_t frame) {
  const ProfileFrame& f = p.frames[frame];
  return f.kind == FrameKind::kUser && f.module < p.modules.size() &&
         p.modules[f.module].kind == ModuleKind::kAnonymous && p.modules[f.module].pid != 0;
}

std::string NameOf(const Profile& p, uint32_t frame) {
  if (frame >= p.symbols.size() || !p.symbols[frame] || p.symbols[frame]->lines.empty()) return "";
  return p.symbols[frame]->lines.back().function;
}

struct Shares {
  uint64_t samples = 0;     // of the chosen thread(s)
  uint64_t naming = 0;      // of those, samples with a frame whose name `wanted` accepts
  uint64_t jit_frames = 0;  // JIT frames in those samples (with counts)
  uint64_t jit_named = 0;   // of those, named
  std::string example;      // a stack of the chosen threads, for messages
};

template <typename ThreadPred, typename NamePred>
Shares Measure(const Profile& p, ThreadPred thread, NamePred wanted) {
  Shares s;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const ProfileStack& st = p.stacks[i];
    if (!thread(st) || p.counts[i] == 0) continue;
    s.samples += p.counts[i];
    bool names = false;
    std::string described;
    for (uint32_t f : st.frames) {
      std::string name = NameOf(p, f);
      if (wanted(name)) names = true;
      if (IsJitModule(p, f)) {
        s.jit_frames += p.counts[i];
        if (!name.empty()) s.jit_named += p.counts[i];
      }
      described += " " + (name.empty() ? "?" : name);
    }
    if (names) s.naming += p.counts[i];
    if (s.example.empty() || !names) s.example = described;
  }
  return s;
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : std::to_string(100 * part / whole) + " %";
}

// The JIT frames of `p` by (pid, address) → name.
std::map<std::pair<uint32_t, uint64_t>, std::string> JitNames(const Profile& p) {
  std::map<std::pair<uint32_t, uint64_t>, std::string> out;
  for (uint32_t f = 0; f < p.frames.size(); ++f) {
    if (IsJitModule(p, f))
      out[{p.modules[p.frames[f].module].pid, p.frames[f].address}] = NameOf(p, f);
  }
  return out;
}

TEST(JitRecordTest, NodeJsFramesNamedAndBothPathsAgree) {
  if (!Executable("/usr/bin/node")) GTEST_SKIP() << "node (Debian's nodejs) is not installed";
  std::string skip, described;
  Result<Profile> recorded =
      RecordCommand({"/usr/bin/node", "--perf-basic-prof", kScripts + "jit_hot.js", "2"}, true,
                    &skip, &described);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(recorded) << recorded.error().ToString();
  Profile& profile = *recorded;
  ASSERT_EQ(profile.jit_files.size(), 1u) << "the recorder read no perf map; " << described;
  const uint32_t pid = profile.jit_files.begin()->first;
  const JitFiles& files = *profile.jit_files.begin()->second;
  EXPECT_NE(files.perf_map.find("leafHot"), std::string::npos) << files.perf_map_path;

  // The frames as recorded, without names: what `record --no-symbolize` writes.
  Result<std::string> unnamed = EncodePprof(profile, /*gzip=*/false);
  ASSERT_TRUE(unnamed) << unnamed.error().ToString();

  // `record`: the profile symbolizer with the files the recorder read.
  ProfileSymbolizeStats stats = SymbolizeProfile(profile);
  EXPECT_GT(stats.jit_frames, 0u);
  Shares main = Measure(
      profile, [&](const ProfileStack& s) { return s.pid == pid && s.tid == pid; },
      [](const std::string& name) { return name.starts_with("JS:"); });
  std::printf("node: %llu main-thread samples, %s name a JS function; JIT frames named: %s\n",
              static_cast<unsigned long long>(main.samples),
              Percent(main.naming, main.samples).c_str(),
              Percent(main.jit_named, main.jit_frames).c_str());
  ASSERT_GT(main.samples, 100u);
  EXPECT_GE(main.naming * 100, main.samples * 75) << "a stack:" << main.example;
  Shares hot = Measure(
      profile, [&](const ProfileStack& s) { return s.pid == pid && s.tid == pid; },
      [](const std::string& name) {
        return name.find("leafHot") != std::string::npos ||
               name.find("callerHot") != std::string::npos;
      });
  EXPECT_GE(hot.naming * 100, hot.samples * 50) << "a stack:" << hot.example;

  // `symbolize-profile --perf-map-dir`: the unnamed recording and a copy of the map.
  std::string dir = TempDir("node");
  ASSERT_FALSE(dir.empty());
  std::string in = dir + "/unnamed.pb", out = dir + "/named.pb";
  std::ofstream(in, std::ios::binary) << *unnamed;
  std::ofstream(dir + "/perf-" + std::to_string(pid) + ".map", std::ios::binary) << files.perf_map;
  std::string cmd = std::string(STACKSYM_BINARY_DIR) + "/stacksym symbolize-profile -q " + in +
                    " " + out + " --perf-map-dir " + dir + " --no-debuginfod";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Result<Profile> later = ReadProfile(out);
  std::system(("rm -rf " + dir).c_str());
  std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  ASSERT_TRUE(later) << later.error().ToString();
  std::map<std::pair<uint32_t, uint64_t>, std::string> now = JitNames(profile);
  std::map<std::pair<uint32_t, uint64_t>, std::string> then = JitNames(*later);
  ASSERT_FALSE(now.empty());
  EXPECT_EQ(now, then);
}

// The agent's path: a recording cut into windows, each named by one ProfileSymbolizer kept
// across them. Every window with JIT frames read the perf map as it closed (node writes it as it
// compiles), so each window's JS frames are named, not only the last one's.
TEST(JitRecordTest, NodeJsFramesNamedInEveryWindow) {
  if (!Executable("/usr/bin/node")) GTEST_SKIP() << "node (Debian's nodejs) is not installed";
  RecordOptions options;
  options.command = {"/usr/bin/node", "--perf-basic-prof", kScripts + "jit_hot.js", "3"};
  options.frequency_hz = 199;
  options.duration_s = 20;
  options.window_s = 1;
  Result<std::unique_ptr<Recorder>> rec = Recorder::Create(options);
  if (!rec && Refused(rec.error())) GTEST_SKIP() << rec.error().ToString();
  ASSERT_TRUE(rec) << rec.error().ToString();
  ProfileSymbolizer symbolizer(ProfileSymbolizeOptions{});
  int windows_with_jit = 0, windows_named = 0;
  uint32_t pid = 0;
  ASSERT_TRUE((*rec)->Run({}, [&](Profile&& window, const RecordStats&) {
    symbolizer.Symbolize(window);
    Shares main = Measure(
        window, [&](const ProfileStack& s) { return s.pid == s.tid; },
        [](const std::string& name) { return name.starts_with("JS:"); });
    if (main.jit_frames < 20) return;  // start-up or the last moments: too few to judge
    ++windows_with_jit;
    if (!window.jit_files.empty()) pid = window.jit_files.begin()->first;
    std::printf("window: %llu main-thread samples, %s name a JS function\n",
                static_cast<unsigned long long>(main.samples),
                Percent(main.naming, main.samples).c_str());
    if (main.naming * 100 >= main.samples * 75) ++windows_named;
  }));
  if (pid != 0) std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  EXPECT_GE(windows_with_jit, 2);
  EXPECT_EQ(windows_named, windows_with_jit);
}

TEST(JitRecordTest, JavaFramesNamedFromTheMapWrittenAtExit) {
  if (!Executable("/usr/bin/java") || !Executable("/usr/bin/javac")) {
    GTEST_SKIP() << "java and javac (Debian's openjdk-17) are not installed";
  }
  std::string dir = TempDir("java");
  ASSERT_FALSE(dir.empty());
  std::string javac = "/usr/bin/javac -d " + dir + " " + kScripts + "Hot.java";
  ASSERT_EQ(std::system(javac.c_str()), 0) << javac;
  std::string skip;
  Result<Profile> recorded =
      RecordCommand({"/usr/bin/java", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit",
                     "-XX:+PreserveFramePointer", "-cp", dir, "Hot", "2"},
                    true, &skip);
  std::system(("rm -rf " + dir).c_str());
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(recorded) << recorded.error().ToString();
  Profile& profile = *recorded;
  ASSERT_EQ(profile.jit_files.size(), 1u) << "the recorder read no perf map";
  const uint32_t pid = profile.jit_files.begin()->first;
  std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  SymbolizeProfile(profile);
  // The thread that runs main() is the launcher's second, named "java" like the first.
  Shares main = Measure(
      profile,
      [&](const ProfileStack& s) { return s.pid == pid && s.tid != pid && s.comm == "java"; },
      [](const std::string& name) {
        // The JVM's names: "double Hot.leafHot(int)".
        return name.find(" Hot.leafHot(") != std::string::npos ||
               name.find(" Hot.callerHot(") != std::string::npos;
      });
  std::printf("java: %llu main-thread samples, %s name a Hot method; JIT frames named: %s\n",
              static_cast<unsigned long long>(main.samples),
              Percent(main.naming, main.samples).c_str(),
              Percent(main.jit_named, main.jit_frames).c_str());
  ASSERT_GT(main.samples, 100u);
  EXPECT_GE(main.naming * 100, main.samples * 75) << "a stack:" << main.example;
}

TEST(JitRecordTest, Python312PerfTrampolinesNamed) {
  const std::string python = "/root/.pyenv/versions/3.12.1/bin/python3.12";
  if (!Executable(python))
    GTEST_SKIP() << "pyenv's CPython 3.12 is not installed (" << python << ")";
  std::string skip;
  // --no-python: the trampolines' names alone, not the recorder's own Python frames.
  Result<Profile> recorded =
      RecordCommand({python, "-X", "perf", kScripts + "jit_hot.py", "2"}, false, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(recorded) << recorded.error().ToString();
  Profile& profile = *recorded;
  ASSERT_EQ(profile.jit_files.size(), 1u) << "the recorder read no perf map";
  const uint32_t pid = profile.jit_files.begin()->first;
  std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
  SymbolizeProfile(profile);
  Shares main = Measure(
      profile, [&](const ProfileStack& s) { return s.pid == pid && s.tid == pid; },
      [](const std::string& name) { return name.starts_with("py::leaf_hot:"); });
  std::printf(
      "python3.12 -X perf: %llu main-thread samples, %s name py::leaf_hot; JIT frames "
      "named: %s\n",
      static_cast<unsigned long long>(main.samples), Percent(main.naming, main.samples).c_str(),
      Percent(main.jit_named, main.jit_frames).c_str());
  ASSERT_GT(main.samples, 100u);
  EXPECT_GE(main.naming * 100, main.samples * 75) << "a stack:" << main.example;
}

}  // namespace
}  // namespace stacksym
