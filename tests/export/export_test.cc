// The exporters' requests, decoded by a second protobuf implementation (python3-protobuf with
// the project's .proto files, in check_otlp.py and check_push.py) and checked against the
// fixture's readelf, llvm-symbolizer and `go tool pprof` answers.
#include "stacksym/export.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "export/htlhash.h"
#include "remote/json.h"
#include "stacksym/capture.h"
#include "stacksym/elf.h"
#include "stacksym/hex.h"
#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using remote::JsonValue;

constexpr uint64_t kWindowStart = 1'760'000'000'000'000'000;
constexpr uint64_t kWindowLength = 10'000'000'000;
constexpr uint32_t kAppPid = 100;
constexpr uint32_t kOtherPid = 200;

std::string Fixture() { return std::string(STACKSYM_FIXTURE_DIR) + "/export_target"; }

std::string Shell(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

// The Python with python3-protobuf (Debian's, which a pyenv python3 first on PATH lacks).
std::string Python() {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    int status = 0;
    Shell(std::string(python) + " -c 'import google.protobuf' 2>/dev/null", &status);
    if (status == 0) return python;
  }
  return "";
}

std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(STACKSYM_BINARY_DIR) / "test-artifacts" / "export" /
                 (std::string(info->test_suite_name()) + "." + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A profile of the fixture binary, symbolized by the profile symbolizer:
//   pid 100 (export_target), tid 100 "main", tid 101 "worker": a stack at every byte of
//   caller_work (some in its inlined inlined_middle), under main; one at leaf_work; a kernel
//   frame on top of one; a Python frame; off-CPU intervals (sleeping, uninterruptible);
//   pid 200, unknown to the profile, tid 200 "other": a raw address.
// With keep_times every sample and interval has its time inside the window.
struct FixtureProfile {
  Profile profile;
  std::vector<uint64_t> offsets;  // file offsets of the fixture's frames
  uint64_t app_samples = 0, other_samples = 0, app_off_cpu = 0, app_intervals = 0;
};

FixtureProfile MakeFixtureProfile(bool keep_times) {
  FixtureProfile f;
  Profile& p = f.profile;
  p.keep_times = keep_times;
  p.period_ns = 1'000'000'000 / 19;
  p.start_time_ns = kWindowStart;
  p.duration_ns = kWindowLength;
  p.event = "cpu-clock";
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(Fixture());
  EXPECT_TRUE(elf) << elf.error().message;
  if (!elf) return f;
  Module kernel{ModuleKind::kKernel, "[kernel.kallsyms]", {}};
  uint32_t kernel_module = p.AddModule(kernel);  // first, so the writers must reorder
  Module exe{ModuleKind::kElf, Fixture(),
             std::vector<uint8_t>((*elf)->build_id().begin(), (*elf)->build_id().end())};
  uint32_t exe_module = p.AddModule(exe);
  p.files.Keep(exe, *elf);
  uint32_t python_module =
      p.AddModule({ModuleKind::kAnonymous, std::string(kPythonModulePath), {}});
  auto offset_of = [&](std::string_view name, uint64_t delta) -> uint64_t {
    for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
      if (s.name == name) {
        std::optional<uint64_t> off = (*elf)->VaddrToFileOffset(s.address + delta);
        EXPECT_TRUE(off);
        return off.value_or(0);
      }
    }
    ADD_FAILURE() << "no symbol " << name;
    return 0;
  };
  uint64_t caller_size = 0;
  for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
    if (s.name == "caller_work") caller_size = s.size;
  }
  EXPECT_GT(caller_size, 0u);
  uint32_t main_frame = p.InternFrame({FrameKind::kUser, exe_module, offset_of("main", 4)});
  f.offsets.push_back(p.frames[main_frame].address);
  uint64_t t = kWindowStart + 1000;
  auto sample = [&](uint32_t pid, uint32_t tid, const char* comm, std::vector<uint32_t> frames,
                    uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
      p.AddSample({.pid = pid, .tid = tid, .comm = comm, .frames = frames}, 1, t += 1'000'000);
    }
    (pid == kAppPid ? f.app_samples : f.other_samples) += count;
  };
  for (uint64_t delta = 0; delta < caller_size; ++delta) {
    uint32_t frame = p.InternFrame({FrameKind::kUser, exe_module, offset_of("caller_work", delta)});
    f.offsets.push_back(p.frames[frame].address);
    sample(kAppPid, 100 + delta % 2, delta % 2 ? "worker" : "main", {frame, main_frame},
           1 + delta % 3);
  }
  uint32_t leaf = p.InternFrame({FrameKind::kUser, exe_module, offset_of("leaf_work", 1)});
  f.offsets.push_back(p.frames[leaf].address);
  uint32_t kframe = p.InternFrame({FrameKind::kKernel, kernel_module, 0xffffffff81000100});
  sample(kAppPid, 100, "main", {kframe, leaf, main_frame}, 7);
  uint32_t py = p.InternFrame({FrameKind::kPython, python_module, 0});
  sample(kAppPid, 101, "worker", {py, main_frame}, 3);
  uint32_t raw = p.InternFrame({FrameKind::kUserRaw, 0, 0x7f0000001234});
  sample(kOtherPid, 200, "other", {raw}, 4);
  for (uint64_t i = 0; i < 5; ++i) {
    ThreadState state = i % 2 ? ThreadState::kUninterruptible : ThreadState::kSleeping;
    p.AddOffCpu({.pid = kAppPid,
                 .tid = 101,
                 .comm = "worker",
                 .frames = {kframe, leaf, main_frame},
                 .state = state},
                2'000'000 * (i + 1), t += 3'000'000);
    f.app_off_cpu += 2'000'000 * (i + 1);
    ++f.app_intervals;
  }
  p.AddProcess({.pid = kAppPid,
                .executable = Fixture(),
                .name = "export_target",
                .container_id = "0123456789abcdef"});
  ProfileSymbolizeOptions options;
  options.kallsyms_path = "";  // kernel frames stay unnamed
  SymbolizeProfile(p, options);
  SourceFrame python_line{"module.run", "run", "/srv/app.py", 42, 0, false};
  python_line.start_line = 40;
  p.symbols.resize(p.frames.size());
  p.symbols[py] = FrameSymbols{.reason = std::nullopt, .lines = {python_line}};
  return f;
}

// The JSON line a checker printed for each body.
std::vector<JsonValue> ParseLines(const std::string& out) {
  std::vector<JsonValue> lines;
  size_t begin = 0;
  while (begin < out.size()) {
    size_t end = out.find('\n', begin);
    if (end == std::string::npos) end = out.size();
    Result<JsonValue> v = remote::ParseJson(out.substr(begin, end - begin));
    EXPECT_TRUE(v) << out.substr(begin, end - begin);
    if (v) lines.push_back(std::move(*v));
    begin = end + 1;
  }
  return lines;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = Python();
    if (python_.empty()) GTEST_SKIP() << "needs python3-protobuf (Debian's /usr/bin/python3)";
    dir_ = TestDir();
  }

  // Writes the bodies and runs `script` on them; returns its JSON lines (one per body).
  std::vector<JsonValue> Check(const std::string& script,
                               const std::vector<ExportRequest>& requests,
                               const std::string& extra = "") {
    std::string files;
    for (size_t i = 0; i < requests.size(); ++i) {
      std::string path = dir_ + "/body" + std::to_string(i);
      WriteFile(path, requests[i].body);
      files += " " + path;
    }
    int status = 0;
    std::string out = Shell(python_ + " " + EXPORT_SCRIPTS_DIR + "/" + script +
                                " --proto-dir " EXPORT_PY_DIR " " + extra + files,
                            &status);
    EXPECT_EQ(status, 0) << out;
    return ParseLines(out);
  }

  std::string python_;
  std::string dir_;
};

const JsonValue* Resource(const JsonValue& line, uint64_t pid) {
  for (const JsonValue& r : line.Find("resources")->array()) {
    const JsonValue* p = r.Find("attributes")->Find("process.pid");
    if (p != nullptr && p->is_uint64() && p->uint64() == pid) return &r;
  }
  return nullptr;
}

const JsonValue* ProfileOf(const JsonValue& resource, const std::string& type) {
  for (const JsonValue& p : resource.Find("profiles")->array()) {
    if (p.Find("sample_type")->string() == type) return &p;
  }
  return nullptr;
}

TEST(HtlHashTest, Sha256MatchesTheStandardAndSha256sum) {
  std::string abc = "abc";
  std::array<uint8_t, 32> d =
      exporter::Sha256({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()});
  EXPECT_EQ(ToHex(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(exporter::Sha256({})),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(Fixture());
  ASSERT_TRUE(elf);
  int status = 0;
  std::string sum = Shell("sha256sum " + Fixture(), &status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(ToHex(exporter::Sha256((*elf)->bytes())), sum.substr(0, 64));
}

TEST_F(ExportTest, OtlpRequestFollowsTheRulesAndTheFixture) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  ExportWindow window{.profile = f.profile,
                      .start_ns = kWindowStart,
                      .end_ns = kWindowStart + kWindowLength,
                      .host_name = "web-1"};
  Result<std::vector<ExportRequest>> requests = MakeOtlpExporter({})->Encode(window);
  ASSERT_TRUE(requests) << requests.error().message;
  ASSERT_EQ(requests->size(), 1u);
  const ExportRequest& r = (*requests)[0];
  EXPECT_EQ(r.path, "/v1development/profiles");
  EXPECT_EQ(r.content_type, "application/x-protobuf");
  EXPECT_EQ(r.headers,
            (std::vector<std::pair<std::string, std::string>>{{"Content-Encoding", "gzip"}}));
  EXPECT_EQ(r.samples, f.app_samples + f.other_samples + f.app_intervals);
  std::string offsets;
  for (uint64_t o : f.offsets) offsets += (offsets.empty() ? "" : ",") + std::to_string(o);
  std::vector<JsonValue> lines =
      Check("check_otlp.py", *requests, "--elf " + Fixture() + ":" + offsets);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].Find("resources")->array().size(), 2u);

  const JsonValue* app = Resource(lines[0], kAppPid);
  ASSERT_NE(app, nullptr);
  const JsonValue* attrs = app->Find("attributes");
  EXPECT_EQ(attrs->Find("service.name")->string(), "export_target");
  EXPECT_EQ(attrs->Find("process.executable.path")->string(), Fixture());
  EXPECT_EQ(attrs->Find("process.executable.name")->string(), "export_target");
  EXPECT_EQ(attrs->Find("container.id")->string(), "0123456789abcdef");
  EXPECT_EQ(attrs->Find("host.name")->string(), "web-1");
  const JsonValue* cpu = ProfileOf(*app, "samples/count");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->Find("total")->uint64(), f.app_samples);
  EXPECT_EQ(cpu->Find("timestamps")->uint64(), f.app_samples);  // one timestamp a sample
  EXPECT_EQ(cpu->Find("period")->uint64(), f.profile.period_ns);
  EXPECT_EQ(cpu->Find("time")->uint64(), kWindowStart);
  EXPECT_EQ(cpu->Find("duration")->uint64(), kWindowLength);
  const JsonValue* off = ProfileOf(*app, "off_cpu/nanoseconds");
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(off->Find("total")->uint64(), f.app_off_cpu);
  EXPECT_EQ(off->Find("timestamps")->uint64(), f.app_intervals);
  // The inlined callee comes first in a location's Lines: some caller_work address is named
  // inlined_middle, under caller_work (checked line by line against llvm-symbolizer above).
  bool inlined_leaf = false;
  for (const JsonValue& s : cpu->Find("samples")->array()) {
    inlined_leaf |= s.Find("stack")->array()[0].string() == "inlined_middle";
  }
  EXPECT_TRUE(inlined_leaf);

  const JsonValue* other = Resource(lines[0], kOtherPid);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->Find("attributes")->Find("service.name")->string(), "other");  // its comm
  EXPECT_EQ(other->Find("attributes")->Find("process.executable.path"), nullptr);
  ASSERT_NE(ProfileOf(*other, "samples/count"), nullptr);
  EXPECT_EQ(ProfileOf(*other, "samples/count")->Find("total")->uint64(), f.other_samples);
  EXPECT_EQ(ProfileOf(*other, "off_cpu/nanoseconds"), nullptr);  // none recorded for it
}

TEST_F(ExportTest, OtlpWithoutTimesCarriesTotals) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/false);
  ExportWindow window{.profile = f.profile,
                      .start_ns = kWindowStart,
                      .end_ns = kWindowStart + kWindowLength,
                      .host_name = "",
                      .service_name = "checkout"};
  Result<std::vector<ExportRequest>> requests = MakeOtlpExporter({})->Encode(window);
  ASSERT_TRUE(requests);
  std::vector<JsonValue> lines = Check("check_otlp.py", *requests);
  ASSERT_EQ(lines.size(), 1u);
  const JsonValue* app = Resource(lines[0], kAppPid);
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->Find("attributes")->Find("service.name")->string(), "checkout");
  EXPECT_EQ(app->Find("attributes")->Find("host.name"), nullptr);
  EXPECT_EQ(ProfileOf(*app, "samples/count")->Find("total")->uint64(), f.app_samples);
  EXPECT_EQ(ProfileOf(*app, "samples/count")->Find("timestamps")->uint64(), 0u);
  EXPECT_EQ(ProfileOf(*app, "off_cpu/nanoseconds")->Find("total")->uint64(), f.app_off_cpu);
}

// A profile read from disk keeps no ELF files: native addresses cannot be placed and stay
// unset, and unsymbolized frames of one module become one location, their samples combined.
TEST_F(ExportTest, OtlpWithoutKeptFilesLeavesAddressesUnset) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  f.profile.files = ModuleFiles();
  f.profile.symbols.clear();
  ExportWindow window{
      .profile = f.profile, .start_ns = kWindowStart, .end_ns = kWindowStart + kWindowLength};
  Result<std::vector<ExportRequest>> requests = MakeOtlpExporter({})->Encode(window);
  ASSERT_TRUE(requests);
  std::vector<JsonValue> lines = Check("check_otlp.py", *requests);
  ASSERT_EQ(lines.size(), 1u);
  const JsonValue* app = Resource(lines[0], kAppPid);
  ASSERT_NE(app, nullptr);
  const JsonValue* cpu = ProfileOf(*app, "samples/count");
  EXPECT_EQ(cpu->Find("total")->uint64(), f.app_samples);
  EXPECT_EQ(cpu->Find("timestamps")->uint64(), f.app_samples);
  // caller_work's stacks of each thread, the kernel one and the Python one.
  EXPECT_EQ(cpu->Find("samples")->array().size(), 4u);
}

TEST_F(ExportTest, OtlpSplitsAboveTheRequestLimit) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  ExportWindow window{
      .profile = f.profile, .start_ns = kWindowStart, .end_ns = kWindowStart + kWindowLength};
  Result<std::vector<ExportRequest>> whole = MakeOtlpExporter({})->Encode(window);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->size(), 1u);
  // By process first; a limit below one process's size splits its stacks too.
  for (uint64_t limit : {uint64_t{2000}, uint64_t{1}}) {
    Result<std::vector<ExportRequest>> split =
        MakeOtlpExporter({.max_request_bytes = limit})->Encode(window);
    ASSERT_TRUE(split);
    EXPECT_GT(split->size(), 1u) << limit;
    std::vector<JsonValue> lines = Check("check_otlp.py", *split);
    uint64_t samples = 0, off_cpu = 0, carried = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      carried += (*split)[i].samples;
      for (const JsonValue& r : lines[i].Find("resources")->array()) {
        for (const JsonValue& p : r.Find("profiles")->array()) {
          (p.Find("sample_type")->string() == "samples/count" ? samples : off_cpu) +=
              p.Find("total")->uint64();
        }
      }
    }
    EXPECT_EQ(samples, f.app_samples + f.other_samples) << limit;
    EXPECT_EQ(off_cpu, f.app_off_cpu) << limit;
    EXPECT_EQ(carried, (*whole)[0].samples) << limit;
  }
}

TEST_F(ExportTest, PyroscopeSeriesPerProcessAndTypeReadByGoPprof) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  ExportWindow window{.profile = f.profile,
                      .start_ns = kWindowStart,
                      .end_ns = kWindowStart + kWindowLength,
                      .host_name = "web-1"};
  Result<std::vector<ExportRequest>> requests = MakePyroscopeExporter({})->Encode(window);
  ASSERT_TRUE(requests) << requests.error().message;
  ASSERT_EQ(requests->size(), 1u);
  EXPECT_EQ((*requests)[0].path, "/push.v1.PusherService/Push");
  EXPECT_EQ((*requests)[0].content_type, "application/proto");
  std::vector<JsonValue> lines = Check("check_push.py", *requests, "--dump-dir " + dir_);
  ASSERT_EQ(lines.size(), 1u);
  const auto& series = lines[0].Find("series")->array();
  ASSERT_EQ(series.size(), 3u);  // app CPU, app off-CPU, other CPU
  int app_series = 0;
  for (const JsonValue& s : series) {
    const JsonValue* labels = s.Find("labels");
    const JsonValue& profile = s.Find("profiles")->array().at(0);
    bool app = labels->Find("process_pid")->string() == std::to_string(kAppPid);
    bool off_cpu = labels->Find("__name__")->string() == "off_cpu";
    EXPECT_EQ(labels->Find("host_name")->string(), "web-1");
    if (app) {
      ++app_series;
      EXPECT_EQ(labels->Find("service_name")->string(), "export_target");
      EXPECT_EQ(labels->Find("container_id")->string(), "0123456789abcdef");
      EXPECT_EQ(profile.Find("first_mapping")->string(), Fixture());
      EXPECT_EQ(profile.Find("time_nanos")->uint64(), kWindowStart);
      // samples/count, cpu/nanoseconds[, off_cpu/nanoseconds]
      EXPECT_EQ(profile.Find("totals")->array().at(off_cpu ? 2 : 0).uint64(),
                off_cpu ? f.app_off_cpu : f.app_samples);
      EXPECT_EQ(profile.Find("sample_types")->array().size(), off_cpu ? 3u : 2u);
    } else {
      EXPECT_EQ(labels->Find("service_name")->string(), "other");
      EXPECT_FALSE(off_cpu);
      EXPECT_EQ(profile.Find("totals")->array().at(0).uint64(), f.other_samples);
    }
  }
  EXPECT_EQ(app_series, 2);
  // go tool pprof reads every profile, and names the executable as the profile's file.
  int status = 0;
  Shell("go version 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "needs go (golang-go) for go tool pprof";
  for (size_t i = 0; i < series.size(); ++i) {
    std::string file = dir_ + "/body0-" + std::to_string(i) + "-0.pb";  // check_push.py's dump
    std::string raw = Shell("go tool pprof -raw " + file + " 2>&1", &status);
    EXPECT_EQ(status, 0) << raw;
    EXPECT_NE(raw.find("Samples:"), std::string::npos) << raw;
    std::string top = Shell("go tool pprof -top " + file + " 2>&1", &status);
    EXPECT_EQ(status, 0) << top;
    bool app = series[i].Find("labels")->Find("process_pid")->string() == std::to_string(kAppPid);
    // pid 200's only frame is a raw address, in no module: pprof then names no file.
    EXPECT_NE(top.find(app ? "File: export_target\n" : "Main binary filename not available."),
              std::string::npos)
        << top;
  }
}

TEST_F(ExportTest, PyroscopeSplitsASeriesWithinTheLimits) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  ExportWindow window{
      .profile = f.profile, .start_ns = kWindowStart, .end_ns = kWindowStart + kWindowLength};
  for (PyroscopeExportOptions options :
       {PyroscopeExportOptions{.max_profile_bytes = 4 << 20, .max_samples = 4, .max_labels = 30},
        PyroscopeExportOptions{
            .max_profile_bytes = 1500, .max_samples = 16000, .max_labels = 30}}) {
    Result<std::vector<ExportRequest>> requests = MakePyroscopeExporter(options)->Encode(window);
    ASSERT_TRUE(requests);
    EXPECT_GT(requests->size(), 1u);
    std::vector<JsonValue> lines = Check("check_push.py", *requests);
    uint64_t app_samples = 0, other_samples = 0, off_cpu = 0;
    for (const JsonValue& line : lines) {
      for (const JsonValue& s : line.Find("series")->array()) {
        bool app = s.Find("labels")->Find("process_pid")->string() == std::to_string(kAppPid);
        bool off = s.Find("labels")->Find("__name__")->string() == "off_cpu";
        for (const JsonValue& p : s.Find("profiles")->array()) {
          EXPECT_LE(p.Find("samples")->uint64(), options.max_samples);
          if (p.Find("samples")->uint64() > 1) {
            EXPECT_LE(p.Find("bytes")->uint64(), options.max_profile_bytes);
          }
          if (off) {
            off_cpu += p.Find("totals")->array().at(2).uint64();
          } else {
            (app ? app_samples : other_samples) += p.Find("totals")->array().at(0).uint64();
          }
        }
      }
    }
    EXPECT_EQ(app_samples, f.app_samples);
    EXPECT_EQ(other_samples, f.other_samples);
    EXPECT_EQ(off_cpu, f.app_off_cpu);
  }
}

// A real recording of the fixture spinning (what the agent's windows hold), through both
// exporters: the ELF addresses, Lines and build IDs of every frame in the fixture are checked
// against readelf and llvm-symbolizer, the pprof against go tool pprof.
TEST_F(ExportTest, RecordedProfileThroughBothExporters) {
  pid_t child = fork();
  if (child == 0) {
    execl(Fixture().c_str(), Fixture().c_str(), "3", nullptr);
    _exit(127);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{child};
  RecordOptions options;
  options.pids = {child};
  options.frequency_hz = 199;
  options.duration_s = 1.0;
  Result<std::unique_ptr<Recorder>> recorder = Recorder::Create(options);
  if (!recorder && (recorder.error().code == ErrorCode::kPermission ||
                    recorder.error().code == ErrorCode::kUnsupported)) {
    GTEST_SKIP() << "needs BPF or perf events (root with CAP_BPF/CAP_PERFMON): "
                 << recorder.error().ToString();
  }
  ASSERT_TRUE(recorder) << recorder.error().ToString();
  ASSERT_TRUE((*recorder)->Run());
  Profile& p = (*recorder)->profile();
  ASSERT_GT(p.total_samples(), 20u);
  SymbolizeProfile(p, {});
  if (p.FindProcess(child) == nullptr) {  // what the agent's recorder reads from /proc
    p.AddProcess({.pid = static_cast<uint32_t>(child),
                  .executable = Fixture(),
                  .name = "export_target",
                  .container_id = ""});
  }
  std::string offsets;
  for (const ProfileFrame& frame : p.frames) {
    if (frame.kind == FrameKind::kUser && p.modules[frame.module].path == Fixture()) {
      offsets += (offsets.empty() ? "" : ",") + std::to_string(frame.address);
    }
  }
  ASSERT_FALSE(offsets.empty());
  ExportWindow window{
      .profile = p, .start_ns = p.start_time_ns, .end_ns = p.start_time_ns + p.duration_ns + 1};
  Result<std::vector<ExportRequest>> otlp = MakeOtlpExporter({})->Encode(window);
  ASSERT_TRUE(otlp) << otlp.error().message;
  std::vector<JsonValue> lines =
      Check("check_otlp.py", *otlp, "--elf " + Fixture() + ":" + offsets);
  ASSERT_EQ(lines.size(), 1u);
  const JsonValue* app = Resource(lines[0], child);
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(ProfileOf(*app, "samples/count")->Find("total")->uint64(), p.total_samples());

  Result<std::vector<ExportRequest>> push = MakePyroscopeExporter({})->Encode(window);
  ASSERT_TRUE(push);
  lines = Check("check_push.py", *push, "--dump-dir " + dir_);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].Find("series")->array().size(), 1u);
  int status = 0;
  Shell("go version 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "needs go (golang-go) for go tool pprof";
  std::string top = Shell("go tool pprof -top " + dir_ + "/body0-0-0.pb 2>&1", &status);
  EXPECT_EQ(status, 0) << top;
  EXPECT_NE(top.find("File: export_target\n"), std::string::npos) << top;
}

TEST(PprofMainBinaryTest, TheExecutableIsTheFirstMapping) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/false);
  ASSERT_EQ(f.profile.modules[0].kind, ModuleKind::kKernel);
  Result<std::string> pprof = EncodePprof(f.profile);
  ASSERT_TRUE(pprof);
  Result<Profile> back =
      DecodePprof({reinterpret_cast<const uint8_t*>(pprof->data()), pprof->size()});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->modules[0].path, Fixture());
  // Without process information: the first ELF module frames lie in.
  Profile unknown = FilterProfile(f.profile, {});
  unknown.processes.clear();
  pprof = EncodePprof(unknown);
  ASSERT_TRUE(pprof);
  back = DecodePprof({reinterpret_cast<const uint8_t*>(pprof->data()), pprof->size()});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->modules[0].path, Fixture());
}

TEST(FilterProfileTest, OneProcessCarriesItsOwnModulesProcessesAndTimes) {
  FixtureProfile f = MakeFixtureProfile(/*keep_times=*/true);
  f.profile.lost_samples = 9;
  Profile other = FilterProfile(f.profile, {.comm = std::nullopt, .pid = kOtherPid});
  EXPECT_EQ(other.modules.size(), 0u);  // a raw address lies in no module
  ASSERT_EQ(other.frames.size(), 1u);
  EXPECT_EQ(other.frames[0].kind, FrameKind::kUserRaw);
  EXPECT_TRUE(other.processes.empty());  // pid 200 is unknown
  EXPECT_EQ(other.total_samples(), f.other_samples);
  EXPECT_EQ(other.event, "cpu-clock");
  EXPECT_EQ(other.lost_samples, 9u);
  Profile app = FilterProfile(f.profile, {.comm = std::nullopt, .pid = kAppPid});
  ASSERT_EQ(app.processes.size(), 1u);
  EXPECT_EQ(app.processes[0].executable, Fixture());
  EXPECT_EQ(app.modules.size(), 3u);
  EXPECT_NE(app.files.Find(f.profile.modules[1]), nullptr);  // the kept ELF file goes along
  EXPECT_EQ(app.total_samples(), f.app_samples);
  EXPECT_EQ(app.Total(SampleType::kOffCpu), f.app_off_cpu);
  ASSERT_TRUE(app.keep_times);
  ASSERT_EQ(app.times.size(), app.stacks.size());
  uint64_t timed = 0;
  for (size_t s = 0; s < app.stacks.size(); ++s) {
    uint64_t sum = 0;
    for (const TimedValue& t : app.times[s]) sum += t.value;
    EXPECT_EQ(sum,
              app.Value(s, app.stacks[s].state == ThreadState::kRunning ? SampleType::kSamples
                                                                        : SampleType::kOffCpu));
    timed += app.times[s].size();
  }
  EXPECT_EQ(timed, f.app_samples + f.app_intervals);  // one time per sample of count 1
  // Symbols follow their frames.
  for (size_t i = 0; i < app.frames.size(); ++i) {
    if (app.frames[i].kind == FrameKind::kPython) {
      ASSERT_TRUE(app.symbols[i]);
      EXPECT_EQ(app.symbols[i]->lines[0].function, "module.run");
    }
  }
}

}  // namespace
}  // namespace stacksym
