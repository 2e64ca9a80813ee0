// Records the capture fixture (known call chains, frame pointers on) through each backend and
// checks the profile against what the fixture does: the hot leaf dominates, whole caller
// chains appear, the .so function is attributed to the .so, the read(2) thread shows kernel
// frames, and counts add up to samples minus lost. Needs root; skips where the kernel refuses
// BPF or perf events.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stacksym/capture.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/capture_app";

bool Refused(const Error& e) {
  return e.code == ErrorCode::kPermission || e.code == ErrorCode::kUnsupported ||
         e.message.find("not supported") != std::string::npos;
}

#define CREATE_RECORDER_OR_SKIP(var, opts)                                           \
  auto var##_result = Recorder::Create(opts);                                        \
  if (!var##_result) {                                                               \
    if (Refused(var##_result.error())) {                                             \
      GTEST_SKIP() << "kernel refused the capture backend (needs root with CAP_BPF/" \
                      "CAP_PERFMON): "                                               \
                   << var##_result.error().ToString();                               \
    }                                                                                \
    FAIL() << var##_result.error().ToString();                                       \
  }                                                                                  \
  std::unique_ptr<Recorder> var = std::move(*var##_result);

// A running fixture process, killed and reaped at scope exit.
class Fixture {
 public:
  Fixture(const std::string& path, double seconds, const std::string& mode = "") {
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      std::string secs = std::to_string(seconds);
      execl(path.c_str(), path.c_str(), secs.c_str(), mode.empty() ? nullptr : mode.c_str(),
            nullptr);
      _exit(127);
    }
    // Let it start its threads and name them.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  ~Fixture() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Waits for exit; true when it exited with status 0.
  bool Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Symbolized view of one stack: function names, leaf first ("" when unknown).
struct NamedStack {
  uint32_t pid, tid;
  std::string comm;
  uint64_t count;
  std::vector<std::string> kernel;  // kernel part, innermost first
  std::vector<std::string> user;    // user part, innermost first
  std::vector<std::string> user_modules;
  std::vector<std::string> user_unnamed_why;  // per user frame: why it has no name, or ""
};

std::vector<NamedStack> Named(const Profile& p) {
  std::vector<NamedStack> out;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    NamedStack n{p.stacks[i].pid, p.stacks[i].tid, p.stacks[i].comm, p.counts[i], {}, {}, {}, {}};
    for (uint32_t f : p.stacks[i].frames) {
      const ProfileFrame& frame = p.frames[f];
      std::string name;
      if (f < p.symbols.size() && p.symbols[f] && !p.symbols[f]->lines.empty()) {
        name = p.symbols[f]->lines.back().function;  // the out-of-line function
      }
      if (frame.kind == FrameKind::kKernel) {
        n.kernel.push_back(name);
      } else {
        n.user.push_back(name);
        n.user_modules.push_back(frame.kind == FrameKind::kUser ? p.modules[frame.module].path
                                                                : "");
        std::string why;
        if (name.empty()) {
          char where[64];
          snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(frame.address));
          why = frame.kind == FrameKind::kUserRaw ? std::string("raw ") + where
                                                  : n.user_modules.back() + "+" + where;
          if (f < p.symbols.size() && p.symbols[f] && p.symbols[f]->reason) {
            why += std::string(": ") + ReasonName(*p.symbols[f]->reason);
          }
        }
        n.user_unnamed_why.push_back(why);
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

// "kernel frames | user frames", innermost first, for failure messages.
std::string Describe(const NamedStack& s) {
  std::string out;
  for (const std::string& k : s.kernel) out += (k.empty() ? "?" : k) + " ";
  out += "|";
  for (size_t i = 0; i < s.user.size(); ++i) {
    out += " " + (s.user[i].empty() ? "?[" + s.user_unnamed_why[i] + "]" : s.user[i]);
  }
  return out + " (x" + std::to_string(s.count) + ")";
}

bool HasChain(const std::vector<std::string>& frames, const std::vector<std::string>& chain) {
  if (chain.size() > frames.size()) return false;
  for (size_t i = 0; i + chain.size() <= frames.size(); ++i) {
    if (std::equal(chain.begin(), chain.end(), frames.begin() + static_cast<long>(i))) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string> kHotChain = {"cap_hot_leaf", "cap_middle_b", "cap_outer_a",
                                            "cap_hot_thread"};

void Symbolize(Recorder& rec) {
  SymbolizeProfileOptions so;
  so.module_files = rec.module_files();
  SymbolizeProfile(rec.profile(), so);
}

// Options every test starts from: one backend, 499 Hz (enough samples in a second or two,
// and not a multiple of the kernel's tick).
RecordOptions Sampling(CaptureBackend backend) {
  RecordOptions o;
  o.backend = backend;
  o.frequency_hz = 499;
  return o;
}

// The checks shared by every backend on the default fixture mode.
void ExpectKnownChains(Recorder& rec, const std::set<pid_t>& pids) {
  const RecordStats& st = rec.stats();
  const Profile& p = rec.profile();
  ASSERT_GT(st.samples, 30u) << "too few samples to judge";
  // Nothing vanishes between the kernel and the profile.
  EXPECT_EQ(p.total_samples(), st.samples - st.lost);
  EXPECT_EQ(st.aggregated, st.samples - st.lost);
  EXPECT_EQ(st.distinct_stacks, p.stacks.size());

  std::map<std::string, uint64_t> user_leaf;
  uint64_t hot_leaf_samples = 0, hot_chain_samples = 0, lib_samples = 0, sys_kernel_samples = 0;
  uint64_t sys_read_frames = 0, sys_chain_samples = 0;
  // The read(2) thread also enters the kernel outside cap_sys_read: naming itself, open(2)
  // and close(2) through libc wrappers without frame pointers, and thread exit.
  std::ostringstream sys_other_stacks;
  bool lib_in_so = false;
  for (const NamedStack& s : Named(p)) {
    EXPECT_TRUE(pids.count(static_cast<pid_t>(s.pid))) << "sample of pid " << s.pid;
    if (!s.user.empty()) user_leaf[s.user.front()] += s.count;
    if (!s.user.empty() && s.user.front() == "cap_hot_leaf") {
      hot_leaf_samples += s.count;
      if (HasChain(s.user, kHotChain)) hot_chain_samples += s.count;
      EXPECT_EQ(s.comm, "cap_hot");
    }
    if (HasChain(s.user, {"capture_lib_spin", "cap_lib_thread"})) {
      lib_samples += s.count;
      if (s.user_modules.front().find("libcapture_lib.so") != std::string::npos) {
        lib_in_so = true;
      }
    }
    if (s.comm == "cap_sys" && !s.kernel.empty()) {
      sys_kernel_samples += s.count;
      if (HasChain(s.user, {"cap_sys_read", "cap_sys_thread"})) {
        sys_chain_samples += s.count;
      } else {
        sys_other_stacks << "\n  " << Describe(s);
      }
      for (const std::string& k : s.kernel) {
        if (k.find("read") != std::string::npos) {
          ++sys_read_frames;
          break;
        }
      }
    }
  }
  // The hot leaf dominates: two threads spin in it, versus one in each other function.
  std::string top;
  uint64_t top_count = 0;
  for (auto& [name, count] : user_leaf) {
    if (count > top_count) top = name, top_count = count;
  }
  EXPECT_EQ(top, "cap_hot_leaf");
  EXPECT_GT(hot_leaf_samples, st.samples / 5);
  // Frame pointers are on everywhere: the chain is whole in (nearly) every hot sample.
  EXPECT_GE(hot_chain_samples * 10, hot_leaf_samples * 9)
      << hot_chain_samples << " of " << hot_leaf_samples << " hot samples had the whole chain";
  EXPECT_GT(lib_samples, 0u);
  EXPECT_TRUE(lib_in_so) << "capture_lib_spin not attributed to libcapture_lib.so";
  EXPECT_GT(sys_kernel_samples, 0u) << "no kernel frames for the read(2) thread";
  EXPECT_GE(sys_chain_samples * 10, sys_kernel_samples * 9)
      << sys_chain_samples << " of " << sys_kernel_samples
      << " kernel samples of the read(2) thread had its user part; the others:"
      << sys_other_stacks.str();
  EXPECT_GT(sys_read_frames, 0u) << "no kernel read path symbol in the read(2) thread";
}

// Two seconds of a running fixture through `backend`, checked against its known chains.
void RecordKnownChains(CaptureBackend backend) {
  Fixture app(kFixture, 3.0);
  RecordOptions o = Sampling(backend);
  o.pids = {app.pid()};
  o.duration_s = 2.0;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  EXPECT_EQ(rec->stats().backend, backend);
  if (backend == CaptureBackend::kBpf) {
    EXPECT_EQ(rec->stats().lost, 0u);
  }
  Symbolize(*rec);
  ExpectKnownChains(*rec, {app.pid()});
}

TEST(RecordTest, BpfRingBufferKnownChains) { RecordKnownChains(CaptureBackend::kBpf); }

TEST(RecordTest, PerfBackendKnownChains) { RecordKnownChains(CaptureBackend::kPerf); }

TEST(RecordTest, CommandAndDescendantsUntilExit) {
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.command = {kFixture, "1.5", "fork"};
  CREATE_RECORDER_OR_SKIP(rec, o);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(rec->Run().ok());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(rec->command_status().has_value()) << "Run returned before the command exited";
  EXPECT_TRUE(WIFEXITED(*rec->command_status()) && WEXITSTATUS(*rec->command_status()) == 0);
  EXPECT_LT(took, 10.0);
  Symbolize(*rec);
  pid_t parent = rec->command_pid();
  std::set<pid_t> pids;
  uint64_t child_hot = 0;
  for (const NamedStack& s : Named(rec->profile())) {
    pids.insert(static_cast<pid_t>(s.pid));
    if (static_cast<pid_t>(s.pid) != parent && HasChain(s.user, kHotChain)) child_hot += s.count;
  }
  EXPECT_TRUE(pids.count(parent));
  EXPECT_GT(child_hot, 0u) << "the forked child was not followed";
  EXPECT_LE(pids.size(), 2u) << "samples of processes outside the command's tree";
  // Both processes exit before the recorder has read their last samples: those still
  // normalize from the remembered VMAs.
  EXPECT_LE(rec->stats().frames_not_normalized * 50, rec->stats().samples)
      << rec->stats().frames_not_normalized << " frames of " << rec->stats().samples
      << " samples not normalized";
  // The parent alone passes the known-chain checks.
  ExpectKnownChains(*rec, pids);
}

TEST(RecordTest, PerfBackendFollowsCommand) {
  RecordOptions o = Sampling(CaptureBackend::kPerf);
  o.command = {kFixture, "1.5", "fork"};
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ASSERT_TRUE(rec->command_status().has_value());
  Symbolize(*rec);
  std::set<pid_t> pids;
  for (const NamedStack& s : Named(rec->profile())) pids.insert(static_cast<pid_t>(s.pid));
  EXPECT_EQ(pids.size(), 2u) << "expected the command and its forked child";
  ExpectKnownChains(*rec, pids);
}

TEST(RecordTest, ExitedProcessWithDeletedBinaryStillSymbolizes) {
  // A private copy of the fixture that is deleted while it runs and exits before recording
  // ends: only the normalization done in time and the file kept open can name its frames.
  std::string dir =
      std::string(STACKSYM_BINARY_DIR) + "/capture_test_tmp_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string copy = dir + "/capture_app_copy";
  std::filesystem::copy_file(kFixture, copy, std::filesystem::copy_options::overwrite_existing);
  Fixture app(copy, 0.8);
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.pids = {app.pid()};
  o.duration_s = 2.0;
  CREATE_RECORDER_OR_SKIP(rec, o);
  std::filesystem::remove(copy);
  ASSERT_TRUE(rec->Run().ok());
  EXPECT_TRUE(app.Wait());
  EXPECT_EQ(kill(app.pid(), 0), -1) << "the fixture should have exited during recording";
  std::filesystem::remove_all(dir);
  Symbolize(*rec);
  uint64_t named = 0, in_copy = 0;
  for (const NamedStack& s : Named(rec->profile())) {
    if (HasChain(s.user, kHotChain)) {
      named += s.count;
      if (s.user_modules.front().find("capture_app_copy") != std::string::npos) {
        in_copy += s.count;
      }
    }
  }
  EXPECT_GT(named, 0u) << "no symbolized hot chain after the process exited";
  EXPECT_EQ(in_copy, named) << "frames should be attributed to the deleted copy";
  // The samples of its last moments reach the recorder after it is gone; the VMAs remembered
  // while it lived still normalize them (before they were kept, a busy CI machine once lost
  // 50 frames of 392 samples here). A frame or two of slack: a sample can catch the process
  // half-way through exec or exit.
  EXPECT_LE(rec->stats().frames_not_normalized * 50, rec->stats().samples)
      << rec->stats().frames_not_normalized << " frames of " << rec->stats().samples
      << " samples not normalized";
}

TEST(RecordTest, StackMapCollidesWhereRingBufferDoesNot) {
  {
    Fixture app(kFixture, 3.0, "many");
    RecordOptions o;
    o.backend = CaptureBackend::kStackMap;
    o.stackmap_size = 64;
    o.frequency_hz = 999;
    o.pids = {app.pid()};
    o.duration_s = 1.5;
    CREATE_RECORDER_OR_SKIP(rec, o);
    ASSERT_TRUE(rec->Run().ok());
    const RecordStats& st = rec->stats();
    ASSERT_GT(st.samples, 30u);
    EXPECT_GT(st.stackmap_collisions, 0u)
        << "a 64-entry stack map with thousands of distinct stacks must collide";
    // Every sample is still counted (with the colliding stack missing).
    EXPECT_EQ(rec->profile().total_samples() + st.stackmap_counts_full, st.samples);
  }
  {
    Fixture app(kFixture, 3.0, "many");
    RecordOptions o;
    o.backend = CaptureBackend::kBpf;
    o.frequency_hz = 999;
    o.pids = {app.pid()};
    o.duration_s = 1.5;
    CREATE_RECORDER_OR_SKIP(rec, o);
    ASSERT_TRUE(rec->Run().ok());
    const RecordStats& st = rec->stats();
    EXPECT_EQ(st.lost, 0u);
    EXPECT_EQ(st.stackmap_collisions, 0u);
    EXPECT_EQ(rec->profile().total_samples(), st.samples);
    EXPECT_GT(st.distinct_stacks, 64u) << "the ring buffer should keep more stacks than 64";
  }
}

pid_t FindThread(pid_t pid, const std::string& comm) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path() / "comm");
    std::string name;
    std::getline(f, name);
    if (name == comm) return static_cast<pid_t>(std::stoi(e.path().filename().string()));
  }
  return -1;
}

TEST(RecordTest, ThreadFilterKeepsOnlyThatThread) {
  Fixture app(kFixture, 3.0);
  pid_t tid = FindThread(app.pid(), "cap_sys");
  ASSERT_GT(tid, 0);
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.tids = {tid};
  o.duration_s = 1.0;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ASSERT_GT(rec->stats().samples, 0u);
  for (const ProfileStack& s : rec->profile().stacks) EXPECT_EQ(s.tid, static_cast<uint32_t>(tid));
}

std::string Cgroup2Mount() {
  std::ifstream mounts("/proc/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
    if (type == "cgroup2") return dir;
  }
  return "";
}

TEST(RecordTest, CgroupFilterKeepsOnlyThatCgroup) {
  std::string root = Cgroup2Mount();
  if (root.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  std::string cg = root + "/stacksym_capture_test_" + std::to_string(getpid());
  if (mkdir(cg.c_str(), 0755) != 0) GTEST_SKIP() << "cannot create a cgroup under " << root;
  Fixture app(kFixture, 3.0);
  {
    std::ofstream procs(cg + "/cgroup.procs");
    procs << app.pid() << std::endl;
  }
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.cgroup_path = cg;
  o.duration_s = 1.0;
  auto rec = Recorder::Create(o);
  if (rec) {
    EXPECT_TRUE((*rec)->Run().ok());
    EXPECT_GT((*rec)->stats().samples, 0u);
    for (const ProfileStack& s : (*rec)->profile().stacks) {
      EXPECT_EQ(s.pid, static_cast<uint32_t>(app.pid()));
    }
  }
  kill(app.pid(), SIGKILL);
  app.Wait();
  rmdir(cg.c_str());
  if (!rec && Refused(rec.error())) GTEST_SKIP() << rec.error().ToString();
  ASSERT_TRUE(rec.ok()) << rec.error().ToString();
}

TEST(RecordTest, KernelBuildIdsNormalizeInKernel) {
  Fixture app(kFixture, 3.0);
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.pids = {app.pid()};
  o.duration_s = 1.5;
  o.kernel_build_ids = true;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  EXPECT_GT(st.build_id_frames + st.build_id_fallbacks, 0u);
  EXPECT_GT(st.build_id_frames, 0u) << "the kernel gave no build-ID frame at all";
  Symbolize(*rec);
  uint64_t hot = 0;
  for (const NamedStack& s : Named(rec->profile())) {
    if (HasChain(s.user, kHotChain)) hot += s.count;
  }
  EXPECT_GT(hot, 0u);
}

TEST(RecordTest, BadArgumentsFailBeforeAttaching) {
  RecordOptions o;
  o.frequency_hz = 0;
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kInvalidArgument);
  o.frequency_hz = 1000000;
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kInvalidArgument);
  o = {};
  o.pids = {0x3ffffff0};
  auto r = Recorder::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("pid"), std::string::npos);
  o = {};
  o.tids = {0x3ffffff0};
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kNotFound);
  o = {};
  o.cgroup_path = "/nonexistent/cgroup";
  EXPECT_FALSE(Recorder::Create(o).ok());
  o = {};
  o.command = {"/nonexistent/stacksym-test-command"};
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kNotFound);
  o = {};
  o.command = {"true"};
  o.pids = {getpid()};
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kInvalidArgument);
  o = {};
  o.ringbuf_size = 100;
  EXPECT_EQ(Recorder::Create(o).error().code, ErrorCode::kInvalidArgument);
}

// The command line: `stacksym record ... -- CMD` writes folded stacks with the whole chain.
TEST(RecordTest, CliWritesFoldedStacks) {
  std::string bin = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
  std::string out =
      std::string(STACKSYM_BINARY_DIR) + "/capture_test_" + std::to_string(getpid()) + ".folded";
  std::string cmd = bin + " record -q -F 499 -o " + out + " -- " + kFixture + " 1 > /dev/null";
  int rc = system(cmd.c_str());
  if (rc != 0) {
    // Distinguish "refused" from a real failure by trying the perf backend too.
    std::string perf = bin + " record -q --backend perf -d 0.2 -o /dev/null --format folded -a";
    if (system(perf.c_str()) != 0) GTEST_SKIP() << "neither BPF nor perf events usable here";
  }
  ASSERT_EQ(rc, 0) << cmd;
  std::ifstream f(out);
  std::string line;
  uint64_t total = 0, chain = 0;
  while (std::getline(f, line)) {
    size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    uint64_t count = std::stoull(line.substr(sp + 1));
    total += count;
    if (line.find("cap_hot_thread;cap_outer_a;cap_middle_b;cap_hot_leaf") != std::string::npos) {
      chain += count;
      EXPECT_EQ(line.rfind("cap_hot;", 0), 0u) << "folded lines start with the thread name";
    }
  }
  std::remove(out.c_str());
  EXPECT_GT(total, 0u);
  EXPECT_GT(chain, total / 5);

  // Bad arguments: clear message, non-zero exit, nothing recorded.
  EXPECT_NE(system((bin + " record -q -F 0 -d 1 -o /dev/null --format folded 2>/dev/null").c_str()),
            0);
  EXPECT_NE(
      system(
          (bin + " record -q -p 1073741808 -d 1 -o /dev/null --format folded 2>/dev/null").c_str()),
      0);
}

}  // namespace
}  // namespace stacksym

namespace stacksym {
namespace {

// Ctrl-C stops recording cleanly and the output is still written.
TEST(RecordTest, CliSigintStillWritesOutput) {
  std::string bin = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
  std::string out =
      std::string(STACKSYM_BINARY_DIR) + "/capture_sigint_" + std::to_string(getpid()) + ".folded";
  Fixture app(kFixture, 4.0);
  std::string pid = std::to_string(app.pid());
  pid_t rec = fork();
  if (rec == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(bin.c_str(), bin.c_str(), "record", "-q", "-F", "499", "-p", pid.c_str(), "-o",
          out.c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  kill(rec, SIGINT);
  int status = 0;
  waitpid(rec, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "stacksym record died from a signal";
  if (WEXITSTATUS(status) != 0) {
    std::remove(out.c_str());
    GTEST_SKIP() << "stacksym record could not attach here (exit " << WEXITSTATUS(status) << ")";
  }
  std::ifstream f(out);
  std::string line;
  size_t lines = 0;
  while (std::getline(f, line)) ++lines;
  std::remove(out.c_str());
  EXPECT_GT(lines, 0u) << "no folded stacks written after SIGINT";
}

}  // namespace
}  // namespace stacksym
