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

#include "../remote/remote_test_util.h"
#include "record_test_util.h"
#include "stacksym/capture.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/capture_app";

const std::vector<std::string> kHotChain = {"cap_hot_leaf", "cap_middle_b", "cap_outer_a",
                                            "cap_hot_thread"};

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
void RecordKnownChains(CaptureBackend backend, CallGraph call_graph = CallGraph::kDwarf) {
  Fixture app(kFixture, 3.0);
  RecordOptions o = Sampling(backend);
  o.call_graph = call_graph;
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

TEST(RecordTest, BpfFramePointerKnownChains) {
  RecordKnownChains(CaptureBackend::kBpf, CallGraph::kFramePointers);
}

TEST(RecordTest, PerfFramePointerKnownChains) {
  RecordKnownChains(CaptureBackend::kPerf, CallGraph::kFramePointers);
}

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
  // Long enough to be sampled after a slow BPF load on a busy machine, short enough to exit
  // well before recording ends.
  Fixture app(copy, 1.5);
  RecordOptions o = Sampling(CaptureBackend::kBpf);
  o.pids = {app.pid()};
  o.duration_s = 3.0;
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
    o.call_graph = CallGraph::kFramePointers;
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
  o.call_graph = CallGraph::kFramePointers;
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
  // A directory that is no cgroup v2 one is said at once (perf_event_open failed with EBADF
  // after loading, and the BPF filter matched nothing).
  for (CaptureBackend backend : {CaptureBackend::kBpf, CaptureBackend::kPerf}) {
    o = {};
    o.backend = backend;
    o.cgroup_path = "/tmp";
    Result<std::unique_ptr<Recorder>> rec = Recorder::Create(o);
    ASSERT_FALSE(rec.ok());
    EXPECT_EQ(rec.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(rec.error().message.find("not a cgroup v2 directory"), std::string::npos)
        << rec.error().ToString();
  }
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

struct FoldedCounts {
  uint64_t total = 0;  // samples in the file
  uint64_t chain = 0;  // samples whose stack holds the whole hot chain
};

// Counts of a folded-stacks file written by `stacksym record`; every line is checked to end in
// a count, and every hot-chain line to start with the thread name.
FoldedCounts CountHotChain(const std::string& path) {
  FoldedCounts counts;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos) {
      ADD_FAILURE() << "folded line without a count: " << line;
      continue;
    }
    uint64_t count = std::stoull(line.substr(sp + 1));
    counts.total += count;
    if (line.find("cap_hot_thread;cap_outer_a;cap_middle_b;cap_hot_leaf") != std::string::npos) {
      counts.chain += count;
      EXPECT_EQ(line.rfind("cap_hot;", 0), 0u) << "folded lines start with the thread name";
    }
  }
  return counts;
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
  FoldedCounts counts = CountHotChain(out);
  std::remove(out.c_str());
  EXPECT_GT(counts.total, 0u);
  EXPECT_GT(counts.chain, counts.total / 5);

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

// The body of a GET on 127.0.0.1:port, "" when nothing came back.
std::string HttpGet(int port, const std::string& path) {
  std::string response = testing::RawExchange(
      port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// The value of an unlabelled Prometheus metric in /metrics text, or -1.
double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// `record --server URL`: the user frames go to a `stacksym serve` on loopback (which has the
// fixture by build ID in its own debug dir) and come back named; /metrics shows the server did
// the work, and the folded stacks carry the whole known chain.
TEST(RecordTest, CliRecordSymbolizesThroughAServer) {
  std::string bin = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
  std::string work =
      std::string(STACKSYM_BINARY_DIR) + "/capture_server_" + std::to_string(getpid());
  std::filesystem::remove_all(work);
  ASSERT_EQ(testing::BuildIdOf(kFixture).size(), 20u) << "the fixture has no GNU build ID";
  testing::PlaceByBuildId(work + "/debug", kFixture, "");

  // The server, its stdout on a pipe for the "listening on" line; it stops by itself.
  int out_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  pid_t server = fork();
  if (server == 0) {
    dup2(out_pipe[1], 1);
    close(out_pipe[0]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    std::string dir = work + "/debug";
    execl(bin.c_str(), bin.c_str(), "serve", "--listen", "127.0.0.1:0", "--no-default-debug-dir",
          "--debug-dir", dir.c_str(), "--no-cache", "--no-debuginfod", "--exit-after", "60",
          nullptr);
    _exit(127);
  }
  close(out_pipe[1]);
  std::string first_line;
  char c;
  while (read(out_pipe[0], &c, 1) == 1 && c != '\n') first_line += c;
  close(out_pipe[0]);
  struct Stop {
    pid_t pid;
    ~Stop() {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  } stop{server};
  size_t colon = first_line.rfind(':');
  ASSERT_NE(colon, std::string::npos) << "serve printed '" << first_line << "'";
  int port = std::stoi(first_line.substr(colon + 1));
  std::string url = "http://127.0.0.1:" + std::to_string(port);

  std::string out = work + "/out.folded";
  std::string cmd = bin + " record -q --no-debuginfod --no-cache -F 499 --call-graph fp --server " +
                    url + " -o " + out + " -- " + kFixture + " 1 > /dev/null 2> " + work + "/err";
  int rc = system(cmd.c_str());
  if (rc != 0) {
    std::string perf = bin + " record -q --backend perf -d 0.2 -o /dev/null --format folded -a";
    if (system(perf.c_str()) != 0) GTEST_SKIP() << "neither BPF nor perf events usable here";
  }
  ASSERT_EQ(rc, 0) << cmd;
  std::string metrics = HttpGet(port, "/metrics");
  EXPECT_GE(Metric(metrics, "stacksym_requests_total"), 1) << metrics;
  EXPECT_GE(Metric(metrics, "stacksym_offsets_total"), 4) << metrics;
  EXPECT_GE(Metric(metrics, "stacksym_cache_misses_total"), 1) << metrics;

  FoldedCounts counts = CountHotChain(out);
  EXPECT_GT(counts.total, 0u);
  EXPECT_GT(counts.chain, counts.total / 5);
  std::filesystem::remove_all(work);
}

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
