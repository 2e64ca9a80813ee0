// serve's symbolizing proxies on 127.0.0.1 (in process), with a tiny downstream in the test:
// an OTLP request laid out as the OpenTelemetry eBPF profiler lays it out, and a Pyroscope
// Push, for the stripped remote_prog whose debug file only serve has, come out the other side
// with the names and inline chains llvm-symbolizer gives on the unstripped binary (decoded by
// python3-protobuf, a second protobuf implementation: check_proxy.py); kernel, interpreter and
// already-named frames untouched; the downstream's answers (503, 429 + Retry-After) passed
// back, a downstream down or resetting → 503 + Retry-After; malformed, oversized, over the
// concurrency or time limit.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "../symbolize/test_util.h"
#include "otlp_profiles.pb.h"
#include "output/gzip.h"
#include "profile.pb.h"
#include "pyroscope_push.pb.h"
#include "remote/json.h"
#include "remote_test_util.h"
#include "stacksym/elf.h"
#include "stacksym/export.h"
#include "stacksym/hex.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::RunCommand;
using testing::TempDir;
namespace otlp = stacksym::otlp;
namespace pprof = perftools::profiles;

constexpr char kOtlpPath[] = "/v1development/profiles";
constexpr char kPushPath[] = "/push.v1.PusherService/Push";
// remote_prog not position-independent: its code's virtual addresses are not its file offsets.
constexpr char kFixture[] = "remote_prog_nopie";
// Where the pprof's process mapped the binary (memory_start, file offset 0): not where the
// ELF file says (0x400000), as a process address and a virtual address differ for a PIE.
constexpr uint64_t kLoadBase = 0x555555554000;

// A downstream on 127.0.0.1 that records what it receives and answers with `status`,
// `headers` and `body`. It stops by itself after 60 s (a test that hangs cannot keep it).
class Downstream {
 public:
  struct Received {
    std::string path, body, content_encoding, content_type, tenant, authorization;
  };

  Downstream(int status, httplib::Headers headers, std::string body) {
    auto handler = [this, status, headers, body](const httplib::Request& req,
                                                 httplib::Response& res) {
      {
        std::lock_guard lock(mutex_);
        received_.push_back({req.path, req.body, req.get_header_value("Content-Encoding"),
                             req.get_header_value("Content-Type"),
                             req.get_header_value("X-Scope-OrgID"),
                             req.get_header_value("Authorization")});
      }
      res.status = status;
      for (const auto& [k, v] : headers) res.set_header(k, v);
      res.set_content(body, "application/x-protobuf");
    };
    server_.Post(kOtlpPath, handler);
    server_.Post(kPushPath, handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    watchdog_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      done_.wait_for(lock, std::chrono::seconds(60), [this] { return stopping_; });
      server_.stop();
    });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Downstream() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    done_.notify_all();
    watchdog_.join();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_, watchdog_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool stopping_ = false;
  std::vector<Received> received_;
};

// A downstream that accepts connections and resets them (RST, no answer), for up to 60 s.
class ResettingDownstream {
 public:
  ResettingDownstream() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!stop_ && std::chrono::steady_clock::now() < end) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        char buf[4096];
        (void)::recv(c, buf, sizeof buf, 0);  // part of the request, then the reset
        linger l{1, 0};
        ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        ::close(c);
      }
    });
  }
  ~ResettingDownstream() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The Python with python3-protobuf (Debian's, which a pyenv python3 first on PATH lacks).
std::string Python() {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    int status = -1;
    RunCommand(std::string(python) + " -c 'import google.protobuf' 2>/dev/null", &status);
    if (status == 0) return python;
  }
  return "";
}

// A string table that hands out indices.
template <typename Table>
int32_t Intern(Table* table, const std::string& s) {
  for (int i = 0; i < table->size(); ++i) {
    if (table->Get(i) == s) return i;
  }
  table->Add(std::string(s));
  return table->size() - 1;
}

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog_nopie.stripped"), "");
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog_nopie.debug"), ".debug");
    build_id_ = ToHex(testing::BuildIdOf(FixturePath(kFixture)));
    ASSERT_EQ(build_id_.size(), 40u);
    offsets_ = testing::CodeOffsets(FixturePath(kFixture));
    ASSERT_GT(offsets_.size(), 8u);
    // And every byte of the two functions `square` is inlined into: inline chains.
    auto elf = ElfFile::Open(FixturePath(kFixture));
    ASSERT_TRUE(elf);
    for (const testing::NmSymbol& sym : testing::RunNm(FixturePath(kFixture), "")) {
      if (sym.name != "sum_squares" && sym.name != "mix") continue;
      for (uint64_t a = sym.address; a < sym.address + sym.size; ++a) {
        offsets_.push_back((*elf)->VaddrToFileOffset(a).value());
      }
    }
  }

  std::unique_ptr<SymbolServer> Start(SymbolServerOptions options = {}) {
    options.debug_dirs = {dir_.path()};
    Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start("127.0.0.1", 0, options);
    EXPECT_TRUE(server) << server.error().ToString();
    return server ? *std::move(server) : nullptr;
  }

  // remote_prog's offsets as ELF virtual addresses (those outside every segment as they are).
  std::vector<uint64_t> Vaddrs() const {
    auto elf = ElfFile::Open(FixturePath(kFixture));
    std::vector<uint64_t> out;
    for (uint64_t o : offsets_) out.push_back((*elf)->FileOffsetToVaddr(o).value_or(o));
    return out;
  }

  // As the OpenTelemetry eBPF profiler lays a request out: one dictionary; the executable's
  // mapping with process.executable.build_id.gnu; native locations with the ELF virtual
  // address and no lines; plus, on the same mapping, a kernel frame, an interpreter frame and
  // a native frame that already has lines, which must all come back as they were.
  otlp::ExportProfilesServiceRequest OtlpRequest() const {
    otlp::ExportProfilesServiceRequest r;
    otlp::ProfilesDictionary* d = r.mutable_dictionary();
    d->add_string_table("");
    d->add_mapping_table();
    d->add_location_table();
    d->add_function_table();
    d->add_link_table();
    d->add_attribute_table();
    d->add_stack_table();
    auto str = [&](const std::string& s) { return Intern(d->mutable_string_table(), s); };
    auto attribute = [&](const std::string& key, const std::string& value) {
      otlp::KeyValueAndUnit* a = d->add_attribute_table();
      a->set_key_strindex(str(key));
      a->mutable_value()->set_string_value(value);
      return d->attribute_table_size() - 1;
    };
    int32_t build_id = attribute("process.executable.build_id.gnu", build_id_);
    int32_t native = attribute("profile.frame.type", "native");
    int32_t kernel = attribute("profile.frame.type", "kernel");
    int32_t python = attribute("profile.frame.type", "cpython");
    otlp::Mapping* m = d->add_mapping_table();
    m->set_memory_start(0x1000);
    m->set_memory_limit(0x8000000);
    m->set_filename_strindex(str("/usr/bin/remote_prog"));
    m->add_attribute_indices(build_id);
    otlp::Function* named = d->add_function_table();
    named->set_name_strindex(str("already_named"));
    auto location = [&](uint64_t address, int32_t type) {
      otlp::Location* l = d->add_location_table();
      l->set_mapping_index(1);
      l->set_address(address);
      l->add_attribute_indices(type);
      return d->location_table_size() - 1;
    };
    std::vector<int32_t> leaves;
    for (uint64_t vaddr : Vaddrs()) leaves.push_back(location(vaddr, native));
    int32_t k = location(Vaddrs()[1], kernel);
    int32_t py = location(Vaddrs()[2], python);
    int32_t with_lines = location(Vaddrs()[3], native);
    otlp::Line* line = d->mutable_location_table(with_lines)->add_lines();
    line->set_function_index(1);
    line->set_line(77);
    otlp::ScopeProfiles* scope = r.add_resource_profiles()->add_scope_profiles();
    otlp::Profile* p = scope->add_profiles();
    p->mutable_sample_type()->set_type_strindex(str("samples"));
    p->mutable_sample_type()->set_unit_strindex(str("count"));
    for (size_t i = 0; i < leaves.size(); ++i) {
      otlp::Stack* s = d->add_stack_table();
      s->add_location_indices(leaves[i]);
      s->add_location_indices(leaves[(i * 7 + 3) % leaves.size()]);
      if (i % 3 == 0) s->add_location_indices(k);
      if (i % 4 == 0) s->add_location_indices(py);
      if (i % 5 == 0) s->add_location_indices(with_lines);
      otlp::Sample* sample = p->add_samples();
      sample->set_stack_index(d->stack_table_size() - 1);
      sample->add_values(1 + static_cast<int64_t>(i % 3));
    }
    return r;
  }

  // A Pyroscope Push of one series whose raw_profile (gzipped pprof) has the binary mapped
  // at kLoadBase (addresses are the process's), a kernel mapping and a named location.
  std::string PushRequest() const {
    pprof::Profile p;
    p.add_string_table("");
    auto str = [&](const std::string& s) { return Intern(p.mutable_string_table(), s); };
    pprof::ValueType* type = p.add_sample_type();
    type->set_type(str("cpu"));
    type->set_unit(str("nanoseconds"));
    pprof::Mapping* exe = p.add_mapping();
    exe->set_id(1);
    exe->set_memory_start(kLoadBase);
    exe->set_memory_limit(kLoadBase + 0x8000000);
    exe->set_file_offset(0);
    exe->set_filename(str("/usr/bin/remote_prog"));
    exe->set_build_id(str(build_id_));
    pprof::Mapping* kernel = p.add_mapping();
    kernel->set_id(2);
    kernel->set_filename(str("[kernel.kallsyms]"));
    kernel->set_build_id(str(build_id_));  // even with a build ID: not a file's addresses
    pprof::Function* named = p.add_function();
    named->set_id(1);
    named->set_name(str("already_named"));
    uint64_t id = 0;
    for (uint64_t offset : offsets_) {
      pprof::Location* l = p.add_location();
      l->set_id(++id);
      l->set_mapping_id(1);
      l->set_address(kLoadBase + offset);
    }
    pprof::Location* k = p.add_location();
    k->set_id(++id);
    k->set_mapping_id(2);
    k->set_address(0xffffffff81000000);
    pprof::Location* with_lines = p.add_location();
    with_lines->set_id(++id);
    with_lines->set_mapping_id(1);
    with_lines->set_address(kLoadBase + offsets_[3]);
    with_lines->add_line()->set_function_id(1);
    for (uint64_t i = 1; i <= offsets_.size(); ++i) {
      pprof::Sample* s = p.add_sample();
      s->add_location_id(i);
      s->add_location_id(offsets_.size() + 1 + i % 2);
      s->add_value(10000000);
    }
    pyroscope::PushRequest push;
    pyroscope::RawProfileSeries* series = push.add_series();
    pyroscope::LabelPair* name = series->add_labels();
    name->set_name("__name__");
    name->set_value("process_cpu");
    Result<std::string> gz = output::GzipCompress(p.SerializeAsString());
    EXPECT_TRUE(gz);
    series->add_samples()->set_raw_profile(gz ? *gz : "");
    return push.SerializeAsString();
  }

  // check_proxy.py's verdict on `body`: "" when every location of the build ID is named as
  // llvm-symbolizer names it; *named: how many were named.
  std::string Check(const std::string& kind, const std::string& body, int64_t* named) {
    std::string python = Python();
    if (python.empty()) return "needs python3-protobuf (Debian's /usr/bin/python3)";
    TempDir work;
    std::string file = work.path() + "/body";
    std::ofstream(file, std::ios::binary) << body;
    int status = -1;
    std::string out =
        RunCommand(python + " " + PROXY_SCRIPTS_DIR + "/check_proxy.py --proto-dir " +
                       PROXY_PY_DIR + " --kind " + kind + " --build-id " + build_id_ + " --elf " +
                       FixturePath(kFixture) + " --preset already_named " + file + " 2>&1",
                   &status);
    Result<remote::JsonValue> json = remote::ParseJson(out);
    if (!json || !json->is_object()) return "check_proxy.py: " + out;
    const remote::JsonValue* n = json->Find("named");
    *named = n != nullptr && n->is_uint64() ? static_cast<int64_t>(n->uint64()) : -1;
    return status == 0 ? "" : out;
  }

  TempDir dir_;
  std::string build_id_;
  std::vector<uint64_t> offsets_;
};

httplib::Result Post(const SymbolServer& server, const std::string& path, const std::string& body,
                     httplib::Headers headers = {}) {
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(std::chrono::seconds(30));
  return client.Post(path.c_str(), headers, body, "application/x-protobuf");
}

// Every location of `sent` that must come back as it was did (kernel, interpreter, with
// lines), and the tables it did not touch are the same.
void ExpectUntouched(const otlp::ExportProfilesServiceRequest& sent,
                     const otlp::ExportProfilesServiceRequest& got) {
  const otlp::ProfilesDictionary& a = sent.dictionary();
  const otlp::ProfilesDictionary& b = got.dictionary();
  ASSERT_EQ(a.location_table_size(), b.location_table_size());
  int untouched = 0;
  for (int i = 1; i < a.location_table_size(); ++i) {
    const otlp::Location& l = a.location_table(i);
    bool native_unnamed = l.lines_size() == 0 && l.attribute_indices(0) == 2;
    if (native_unnamed) continue;
    EXPECT_EQ(l.SerializeAsString(), b.location_table(i).SerializeAsString()) << "location " << i;
    ++untouched;
  }
  EXPECT_EQ(untouched, 3);
  EXPECT_EQ(a.mapping_table_size(), b.mapping_table_size());
  EXPECT_EQ(a.stack_table_size(), b.stack_table_size());
  EXPECT_EQ(sent.resource_profiles(0).SerializeAsString(),
            got.resource_profiles(0).SerializeAsString());
}

// A forward URL with credentials (a hosted store's USER:TOKEN@) sends them as Basic
// authorization; a client that sent its own Authorization keeps it.
TEST_F(ProxyTest, ForwardUrlCredentialsBecomeBasicAuthorization) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = "http://tenant:p%40ss@" + downstream.url().substr(7);
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  std::string body = OtlpRequest().SerializeAsString();
  httplib::Result res = Post(*server, kOtlpPath, body);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = Post(*server, kOtlpPath, body, {{"Authorization", "Bearer client"}});
  ASSERT_TRUE(res);
  std::vector<Downstream::Received> got = downstream.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].authorization, "Basic dGVuYW50OnBAc3M=");  // base64 of "tenant:p@ss"
  EXPECT_EQ(got[1].authorization, "Bearer client");
}

TEST_F(ProxyTest, OtlpForwardedNamesEqualLlvmSymbolizers) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = downstream.url();
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  otlp::ExportProfilesServiceRequest request = OtlpRequest();
  Result<std::string> gz = output::GzipCompress(request.SerializeAsString());
  ASSERT_TRUE(gz);
  httplib::Result res =
      Post(*server, kOtlpPath, *gz, {{"Content-Encoding", "gzip"}, {"X-Scope-OrgID", "tenant-7"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  std::vector<Downstream::Received> got = downstream.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, kOtlpPath);
  EXPECT_EQ(got[0].content_encoding, "gzip");  // sent on as it came
  EXPECT_EQ(got[0].tenant, "tenant-7");        // the client's headers go along
  int64_t named = 0;
  EXPECT_EQ(Check("otlp", got[0].body, &named), "");
  EXPECT_GE(named, static_cast<int64_t>(offsets_.size()) - 2);  // all but the two non-code
  otlp::ExportProfilesServiceRequest forwarded;
  ASSERT_TRUE(forwarded.ParseFromString(got[0].body));
  ExpectUntouched(request, forwarded);
  int inlined = 0;
  for (const otlp::Location& l : forwarded.dictionary().location_table()) {
    inlined += l.lines_size() >= 2;
  }
  EXPECT_GE(inlined, 5);  // inline chains were compared, not only single frames

  httplib::Client client("127.0.0.1", server->port());
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find("stacksym_proxy_requests_total{route=\"otlp\",outcome=\"forwarded\"} 1"),
      std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("stacksym_proxy_locations_total{route=\"otlp\",result=\"named\"} " +
                               std::to_string(named)),
            std::string::npos);
  EXPECT_NE(metrics->body.find("stacksym_proxy_duration_seconds_count{route=\"otlp\"} 1\n"),
            std::string::npos);
  // Each distinct (build ID, address) once.
  std::vector<uint64_t> vaddrs = Vaddrs();
  size_t distinct = std::set<uint64_t>(vaddrs.begin(), vaddrs.end()).size();
  EXPECT_NE(
      metrics->body.find("stacksym_proxy_frames_total{route=\"otlp\"} " + std::to_string(distinct)),
      std::string::npos);
}

TEST_F(ProxyTest, WithoutForwardTheAnswerIsTheSymbolizedRequest) {
  std::unique_ptr<SymbolServer> server = Start();
  ASSERT_TRUE(server);
  otlp::ExportProfilesServiceRequest request = OtlpRequest();
  httplib::Result res = Post(*server, kOtlpPath, request.SerializeAsString());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  int64_t named = 0;
  EXPECT_EQ(Check("otlp", res->body, &named), "");
  EXPECT_GE(named, static_cast<int64_t>(offsets_.size()) - 2);
  otlp::ExportProfilesServiceRequest answered;
  ASSERT_TRUE(answered.ParseFromString(res->body));
  ExpectUntouched(request, answered);
}

TEST_F(ProxyTest, PyroscopePushForwardedNamesEqualLlvmSymbolizers) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.pyroscope_forward = downstream.url() + "/";  // a trailing slash adds nothing
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  std::string push = PushRequest();
  httplib::Result res = Post(*server, kPushPath, push, {{"Connect-Protocol-Version", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  std::vector<Downstream::Received> got = downstream.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, kPushPath);
  int64_t named = 0;
  EXPECT_EQ(Check("push", got[0].body, &named), "");
  EXPECT_GE(named, static_cast<int64_t>(offsets_.size()) - 2);
  // The kernel location and the named one are as they were.
  pyroscope::PushRequest forwarded;
  ASSERT_TRUE(forwarded.ParseFromString(got[0].body));
  Result<std::string> raw = output::GzipDecompress(
      {reinterpret_cast<const uint8_t*>(forwarded.series(0).samples(0).raw_profile().data()),
       forwarded.series(0).samples(0).raw_profile().size()});
  ASSERT_TRUE(raw);
  pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(*raw));
  ASSERT_EQ(p.location_size(), static_cast<int>(offsets_.size()) + 2);
  EXPECT_EQ(p.location(offsets_.size()).line_size(), 0);  // kernel
  ASSERT_EQ(p.location(offsets_.size() + 1).line_size(), 1);
  EXPECT_EQ(p.location(offsets_.size() + 1).line(0).function_id(), 1u);
  EXPECT_FALSE(p.mapping(0).has_functions());  // two offsets are not code: not all named
}

// The agent's own Pyroscope pushes (--symbolize none: its pprof layout, each module at a base
// of its own) come back from the proxy named as a local symbolization of the same profile
// names them, frame by frame.
TEST_F(ProxyTest, TheAgentsPushesAreNamedAsALocalSymbolizationNamesThem) {
  std::unique_ptr<SymbolServer> server = Start();
  ASSERT_TRUE(server);
  Profile profile;
  std::optional<std::vector<uint8_t>> id = FromHex(build_id_);
  ASSERT_TRUE(id);
  uint32_t module = profile.AddModule({ModuleKind::kElf, "/nonexistent/remote_prog", *id});
  for (size_t i = 0; i < offsets_.size(); ++i) {
    uint32_t leaf = profile.InternFrame({FrameKind::kUser, module, offsets_[i]});
    uint32_t caller =
        profile.InternFrame({FrameKind::kUser, module, offsets_[(i * 7 + 3) % offsets_.size()]});
    profile.AddSample({7, 7, "remote_prog", {leaf, caller}}, 1);
  }
  profile.period_ns = 10101010;
  Result<std::vector<ExportRequest>> requests =
      MakePyroscopeExporter()->Encode({.profile = profile, .start_ns = 1, .end_ns = 2});
  ASSERT_TRUE(requests);
  ASSERT_EQ(requests->size(), 1u);
  const ExportRequest& r = (*requests)[0];
  httplib::Headers headers(r.headers.begin(), r.headers.end());
  httplib::Client client("127.0.0.1", server->port());
  httplib::Result res = client.Post(r.path.c_str(), headers, r.body, r.content_type.c_str());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  pyroscope::PushRequest answered;
  ASSERT_TRUE(answered.ParseFromString(res->body));
  ASSERT_EQ(answered.series_size(), 1);
  const std::string& raw = answered.series(0).samples(0).raw_profile();
  Result<Profile> named = DecodePprof({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()});
  ASSERT_TRUE(named) << named.error().ToString();

  ProfileSymbolizeOptions local;
  local.symbolize.debug_dirs = {dir_.path()};
  local.kallsyms_path.clear();
  SymbolizeProfile(profile, local);
  auto chains = [](const Profile& p) {
    std::map<uint64_t, std::vector<std::tuple<std::string, std::string, uint32_t, uint32_t>>> out;
    for (size_t f = 0; f < p.frames.size(); ++f) {
      auto& chain = out[p.frames[f].address];
      if (f >= p.symbols.size() || !p.symbols[f]) continue;
      for (const SourceFrame& l : p.symbols[f]->lines) {
        chain.emplace_back(l.function, l.file, l.line, l.column);
      }
    }
    return out;
  };
  auto want = chains(profile);
  auto got = chains(*named);
  EXPECT_EQ(got, want);
  size_t with_names = 0;
  for (const auto& [address, chain] : got) with_names += !chain.empty();
  EXPECT_GE(with_names, want.size() - 2);  // all but the two offsets outside the code
}

TEST_F(ProxyTest, DownstreamAnswersArePassedBackAsTheyCame) {
  for (int status : {503, 429}) {
    Downstream downstream(status, {{"Retry-After", "7"}}, "slow down");
    SymbolServerOptions options;
    options.otlp_forward = downstream.url();
    std::unique_ptr<SymbolServer> server = Start(options);
    ASSERT_TRUE(server);
    httplib::Result res = Post(*server, kOtlpPath, OtlpRequest().SerializeAsString());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status);
    EXPECT_EQ(res->get_header_value("Retry-After"), "7");
    EXPECT_EQ(res->body, "slow down");
    EXPECT_EQ(downstream.received().size(), 1u);
  }
}

// The google.rpc.Status in `body`, as protoc --decode_raw reads it ("1: 3\n2: \"...\"\n").
std::string DecodeRaw(const std::string& body) {
  TempDir work;
  std::string file = work.path() + "/status";
  std::ofstream(file, std::ios::binary) << body;
  return RunCommand("protoc --decode_raw < " + file + " 2>&1");
}

TEST_F(ProxyTest, DownstreamDownOrResettingGives503WithRetryAfter) {
  ResettingDownstream resetting;
  int closed_port = 0;
  {
    Downstream gone(200, {}, "");  // a port that was just free, now closed again
    closed_port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  for (const std::string& url :
       {resetting.url(), "http://127.0.0.1:" + std::to_string(closed_port)}) {
    SymbolServerOptions options;
    options.pyroscope_forward = url;
    options.forward_timeout_seconds = 5;
    std::unique_ptr<SymbolServer> server = Start(options);
    ASSERT_TRUE(server);
    httplib::Result res = Post(*server, kPushPath, PushRequest());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503) << url;
    EXPECT_EQ(res->get_header_value("Retry-After"), "5");
    EXPECT_NE(DecodeRaw(res->body).find("1: 14"), std::string::npos) << DecodeRaw(res->body);
  }
}

TEST_F(ProxyTest, MalformedRequestGets400WithRpcStatusAndIsNotForwarded) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = downstream.url();
  options.pyroscope_forward = downstream.url();
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  otlp::ExportProfilesServiceRequest bad_index = OtlpRequest();
  bad_index.mutable_dictionary()->mutable_location_table(1)->set_mapping_index(99);
  pyroscope::PushRequest bad_profile;
  bad_profile.add_series()->add_samples()->set_raw_profile("\xff\xff not pprof");
  const std::pair<const char*, std::string> cases[] = {
      {kOtlpPath, "\x0a\xff\xff\xff\xff garbage"},  // a length past the end
      {kOtlpPath, bad_index.SerializeAsString()},
      {kOtlpPath, std::string("\x1f\x8b\x08\x00 corrupt gzip", 18)},
      {kPushPath, "\x0a\x05\x0a\x03"},  // truncated
      {kPushPath, bad_profile.SerializeAsString()},
  };
  for (const auto& [path, body] : cases) {
    httplib::Result res = Post(*server, path, body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/x-protobuf");
    std::string status = DecodeRaw(res->body);
    EXPECT_NE(status.find("1: 3\n"), std::string::npos) << status;
    EXPECT_NE(status.find("2: \""), std::string::npos) << status;
  }
  EXPECT_TRUE(downstream.received().empty());
}

TEST_F(ProxyTest, OversizeRequestIsRejectedAndNotForwarded) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = downstream.url();
  options.max_proxy_body_bytes = 100 << 10;
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  otlp::ExportProfilesServiceRequest big = OtlpRequest();
  big.mutable_dictionary()->add_string_table(std::string(200 << 10, 'x'));
  std::string body = big.SerializeAsString();
  Result<std::string> gz = output::GzipCompress(body);  // small on the wire, large inflated
  ASSERT_TRUE(gz);
  ASSERT_LT(gz->size(), size_t{100} << 10);
  for (const auto& [sent, headers] :
       {std::pair{body, httplib::Headers{}}, std::pair{*gz, httplib::Headers{}},
        std::pair{*gz, httplib::Headers{{"Content-Encoding", "gzip"}}}}) {
    httplib::Result res = Post(*server, kOtlpPath, sent, headers);
    ASSERT_TRUE(res);
    EXPECT_TRUE(res->status == 413 || res->status == 400) << res->status;
  }
  EXPECT_TRUE(downstream.received().empty());
}

// `bytes` zeros, gzipped a megabyte at a time (a gzip bomb: about a thousandth of its size).
std::string GzippedZeros(size_t bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::string chunk(1 << 20, '\0');
  std::string out;
  char buffer[1 << 16];
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(chunk.size(), bytes - done);
    done += n;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z.avail_in = static_cast<uInt>(n);
    const int flush = done == bytes ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      deflate(&z, flush);
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  }
  return -1;
}

// httplib inflates gzip bodies itself; the transport reads them inflated chunk by chunk and
// stops at the limit, so 512 MiB of zeros in a 0.5 MB request never sit in memory.
TEST_F(ProxyTest, GzipBombStopsAtTheBodyLimit) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = downstream.url();
  options.max_proxy_body_bytes = 1 << 20;
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  const std::string bomb = GzippedZeros(size_t{512} << 20);
  ASSERT_LT(bomb.size(), size_t{1} << 20);
  const long before_kb = PeakRssKb();
  httplib::Result res = Post(*server, kOtlpPath, bomb, {{"Content-Encoding", "gzip"}});
  const long after_kb = PeakRssKb();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_LT(after_kb - before_kb, 64 << 10)
      << "peak RSS grew by " << (after_kb - before_kb) << " KiB for a 1 MiB body limit";
  EXPECT_TRUE(downstream.received().empty());
}

TEST_F(ProxyTest, OverTheConcurrencyLimitGets503WithRetryAfter) {
  SymbolServerOptions options;
  options.max_concurrent = 0;  // every request is one too many
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  httplib::Result res = Post(*server, kOtlpPath, OtlpRequest().SerializeAsString());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
}

TEST_F(ProxyTest, PastTheTimeLimitLocationsStayUnnamedAndAreCounted) {
  Downstream downstream(200, {}, "");
  SymbolServerOptions options;
  options.otlp_forward = downstream.url();
  options.proxy_symbolize_seconds = 0;
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  otlp::ExportProfilesServiceRequest request = OtlpRequest();
  httplib::Result res = Post(*server, kOtlpPath, request.SerializeAsString());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::vector<Downstream::Received> got = downstream.received();
  ASSERT_EQ(got.size(), 1u);
  otlp::ExportProfilesServiceRequest forwarded;
  ASSERT_TRUE(forwarded.ParseFromString(got[0].body));
  EXPECT_EQ(got[0].body, request.SerializeAsString());  // byte for byte: nothing named
  httplib::Client client("127.0.0.1", server->port());
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find("stacksym_proxy_locations_total{route=\"otlp\",result=\"timed_out\"} " +
                         std::to_string(offsets_.size())),
      std::string::npos)
      << metrics->body;
}

}  // namespace
}  // namespace stacksym
