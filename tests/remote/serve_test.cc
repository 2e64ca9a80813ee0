// `stacksym serve` on 127.0.0.1 (an ephemeral port, in process): symbolize-profile --server
// writes the same profile as a local symbolize-profile; 24 concurrent clients all get the
// right answers; garbage, truncated, oversized and slow requests get a 4xx or are cut off and
// the next client is served; /healthz, /metrics and the bounded cache.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "../symbolize/test_util.h"
#include "remote/json.h"
#include "remote/symbolize_api.h"
#include "remote_test_util.h"
#include "stacksym/elf.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

std::string Url(const SymbolServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

// A debug dir holding remote_prog stripped (by build ID) and its debug file.
class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog.stripped"), "");
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog.debug"), ".debug");
    build_id_ = testing::BuildIdOf(FixturePath("remote_prog"));
    ASSERT_EQ(build_id_.size(), 20u);
  }

  std::unique_ptr<SymbolServer> Start(SymbolServerOptions options = {}) {
    options.debug_dirs = {dir_.path()};
    Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start("127.0.0.1", 0, options);
    EXPECT_TRUE(server) << server.error().ToString();
    return server ? *std::move(server) : nullptr;
  }

  std::string Body(const std::vector<uint64_t>& offsets) {
    remote::SymbolizeRequest request;
    request.modules.push_back({build_id_, offsets});
    return remote::WriteSymbolizeRequest(request);
  }

  // What a local symbolizer with the same files answers, per offset.
  std::map<uint64_t, FrameSymbols> LocalAnswers(const std::vector<uint64_t>& offsets) {
    SymbolizeOptions options;
    options.debug_dirs = {dir_.path()};
    std::string hex = ToHex(build_id_);
    auto sym = ElfSymbolizer::Open(
        dir_.path() + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2), options);
    EXPECT_TRUE(sym);
    std::map<uint64_t, FrameSymbols> out;
    if (!sym) return out;
    std::vector<SymbolizedAddress> r = (*sym)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
    for (size_t i = 0; i < offsets.size(); ++i) {
      FrameSymbols f;
      if (!r[i].frames.empty()) {
        f.lines = r[i].frames;
      } else if (!r[i].symbol.empty()) {
        f.lines.push_back({r[i].symbol, r[i].raw_symbol, "", 0, 0, false});
      } else {
        f.reason = r[i].reason.value_or(Reason::kNoSymbol);
      }
      out[offsets[i]] = f;
    }
    return out;
  }

  TempDir dir_;
  std::vector<uint8_t> build_id_;
};

bool SameSymbols(const FrameSymbols& a, const FrameSymbols& b) {
  if (a.reason != b.reason || a.lines.size() != b.lines.size()) return false;
  for (size_t i = 0; i < a.lines.size(); ++i) {
    const SourceFrame& x = a.lines[i];
    const SourceFrame& y = b.lines[i];
    if (x.function != y.function || x.raw_function != y.raw_function || x.file != y.file ||
        x.line != y.line || x.column != y.column || x.inlined != y.inlined) {
      return false;
    }
  }
  return true;
}

TEST_F(ServeTest, SymbolizeProfileThroughTheServerEqualsLocal) {
  std::unique_ptr<SymbolServer> server = Start();
  ASSERT_TRUE(server);
  TempDir work;
  std::string in = work.path() + "/in.pb.gz";
  ASSERT_TRUE(WriteProfileAs(testing::MakeRemoteProgProfile(), ProfileFormat::kPprof, in));
  std::string common = std::string(STACKSYM_CLI) +
                       " symbolize-profile -q --no-debuginfod --kallsyms /proc/kallsyms ";
  for (const char* ext : {".folded", ".pb.gz"}) {
    std::string local = work.path() + "/local" + ext;
    std::string remote = work.path() + "/remote" + ext;
    int code = -1;
    RunCommand(common + "--no-default-debug-dir --debug-dir " + dir_.path() + " " + in + " " +
                   local + " 2>&1",
               &code);
    ASSERT_EQ(code, 0);
    RunCommand(common + "--no-default-debug-dir --server " + Url(*server) + " " + in + " " +
                   remote + " 2>&1",
               &code);
    ASSERT_EQ(code, 0);
    std::string expected = ReadFile(local);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(ReadFile(remote), expected) << ext;
    if (std::string(ext) == ".folded") {
      // Not vacuous: functions, an inlined one, and the unknown module were there.
      EXPECT_NE(expected.find("sum_squares"), std::string::npos) << expected;
      EXPECT_NE(expected.find("square"), std::string::npos);
      EXPECT_NE(expected.find("fib"), std::string::npos);
    }
  }
  // An unreachable server is an error, not a silent local answer.
  int code = -1;
  std::string out = RunCommand(
      common + "--server http://127.0.0.1:1 " + in + " " + work.path() + "/x.folded 2>&1", &code);
  EXPECT_EQ(code, 1) << out;
}

TEST_F(ServeTest, TwentyFourConcurrentClientsAllGetTheRightAnswers) {
  SymbolServerOptions options;
  options.threads = 6;
  options.max_concurrent = 64;
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  std::vector<uint64_t> offsets = testing::RemoteProgOffsets();
  std::map<uint64_t, FrameSymbols> expected = LocalAnswers(offsets);
  ASSERT_FALSE(expected.empty());

  std::vector<std::string> failures(24);
  std::vector<std::thread> clients;
  for (int t = 0; t < 24; ++t) {
    clients.emplace_back([&, t] {
      std::vector<uint64_t> mine = offsets;
      std::shuffle(mine.begin(), mine.end(), std::mt19937(t));
      mine.resize(mine.size() / 2 + static_cast<size_t>(t) % 7);
      httplib::Client client("127.0.0.1", server->port());
      client.set_read_timeout(std::chrono::seconds(60));
      for (int round = 0; round < 3; ++round) {
        httplib::Result res = client.Post("/v1/symbolize", Body(mine), "application/json");
        if (!res || res->status != 200) {
          failures[t] = "no 200: " + (res ? std::to_string(res->status) + res->body
                                          : httplib::to_string(res.error()));
          return;
        }
        Result<remote::SymbolizeResponse> r = remote::ParseSymbolizeResponse(res->body);
        if (!r || r->modules.size() != 1 || r->modules[0].offsets != mine) {
          failures[t] = "unexpected response: " + res->body.substr(0, 200);
          return;
        }
        for (size_t i = 0; i < mine.size(); ++i) {
          if (!SameSymbols(r->modules[0].answers[i], expected[mine[i]])) {
            failures[t] = "wrong answer for offset " + testing::Hex(mine[i]);
            return;
          }
        }
      }
    });
  }
  for (std::thread& c : clients) c.join();
  for (int t = 0; t < 24; ++t) EXPECT_EQ(failures[t], "") << "client " << t;
}

// With an index cache the server writes each build ID's index on first use, a restarted
// server answers from it (not rebuilt), and the answers are those of the direct path.
TEST_F(ServeTest, PersistedIndexIsWrittenOnceAndAnswersLikeTheDirectPath) {
  TempDir cache;
  std::vector<uint64_t> offsets = testing::RemoteProgOffsets();
  std::map<uint64_t, FrameSymbols> expected = LocalAnswers(offsets);
  ASSERT_FALSE(expected.empty());
  auto ask = [&](const SymbolServer& server) -> std::string {
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(std::chrono::seconds(60));
    httplib::Result res = client.Post("/v1/symbolize", Body(offsets), "application/json");
    if (!res || res->status != 200) {
      return "no 200: " + (res ? res->body : httplib::to_string(res.error()));
    }
    Result<remote::SymbolizeResponse> r = remote::ParseSymbolizeResponse(res->body);
    if (!r || r->modules.size() != 1 || r->modules[0].answers.size() != offsets.size()) {
      return "unexpected response: " + res->body.substr(0, 200);
    }
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (!SameSymbols(r->modules[0].answers[i], expected[offsets[i]])) {
        return "wrong answer for offset " + testing::Hex(offsets[i]);
      }
    }
    return "";
  };
  // Path → inode: an index is replaced by renaming a new file over it (its time stamps
  // change on every use, for LRU pruning).
  auto index_files = [&] {
    std::map<std::string, ino_t> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(cache.path())) {
      struct stat st;
      if (e.is_regular_file() && ::stat(e.path().c_str(), &st) == 0) {
        files[e.path().string()] = st.st_ino;
      }
    }
    return files;
  };
  SymbolServerOptions options;
  options.index_cache_dir = cache.path();
  {
    std::unique_ptr<SymbolServer> server = Start(options);
    ASSERT_TRUE(server);
    EXPECT_EQ(ask(*server), "");
  }
  auto written = index_files();
  ASSERT_FALSE(written.empty()) << "the server wrote no index into " << cache.path();
  {
    std::unique_ptr<SymbolServer> server = Start(options);
    ASSERT_TRUE(server);
    EXPECT_EQ(ask(*server), "");
  }
  EXPECT_EQ(index_files(), written) << "the restarted server rewrote the index";
}

TEST_F(ServeTest, BadRequestsGet4xxAndTheNextClientIsServed) {
  SymbolServerOptions options;
  options.threads = 4;
  options.max_body_bytes = 64 << 10;
  options.max_offsets = 1000;
  options.read_timeout_seconds = 1;
  options.keep_alive_seconds = 1;
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  client.set_read_timeout(std::chrono::seconds(20));
  std::string good = Body({0x1000, 0x1100});
  auto served = [&] {
    httplib::Result res = client.Post("/v1/symbolize", good, "application/json");
    return res && res->status == 200 && remote::ParseSymbolizeResponse(res->body);
  };
  auto expect_status = [&](const std::string& body, int status, const std::string& error) {
    httplib::Result res = client.Post("/v1/symbolize", body, "application/json");
    ASSERT_TRUE(res) << body.substr(0, 80);
    EXPECT_EQ(res->status, status) << body.substr(0, 80) << " → " << res->body;
    Result<remote::JsonValue> json = remote::ParseJson(res->body);
    ASSERT_TRUE(json) << res->body;
    ASSERT_NE(json->Find("error"), nullptr);
    EXPECT_EQ(json->Find("error")->string(), error);
    EXPECT_TRUE(served()) << "after " << body.substr(0, 80);
  };
  expect_status("garbage", 400, "bad_json");
  expect_status("{\"modules\":[{\"build_id\":\"ab", 400, "bad_json");  // truncated
  expect_status("{\"modules\":[],\"paths\":[\"/etc/passwd\"]}", 400, "bad_request");
  expect_status("{\"modules\":[{\"build_id\":\"xyz1\",\"offsets\":[1]}]}", 400, "bad_request");
  std::vector<uint64_t> many(1001, 0x1000);
  expect_status(Body(many), 400, "bad_request");                      // too many offsets
  expect_status(std::string(100 << 10, ' '), 413, "body_too_large");  // oversized

  httplib::Result missing = client.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(remote::ParseJson(missing->body));

  // Not HTTP at all.
  std::string answer = testing::RawExchange(server->port(), "HELLO\r\n\r\n");
  EXPECT_NE(answer.find(" 400 "), std::string::npos) << answer;
  EXPECT_TRUE(served());

  // Truncated: the body announced is never sent; slow: headers stop halfway. Both are cut off
  // after the read timeout (1 s here, then 1 s of keep-alive), well before the client's 10 s.
  double closed_after = 0;
  answer = testing::RawExchange(server->port(),
                                "POST /v1/symbolize HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                "5000\r\nConnection: close\r\n\r\n{\"modules\":",
                                0, &closed_after);
  EXPECT_LT(closed_after, 5.0);
  EXPECT_TRUE(served());
  testing::RawExchange(server->port(), "POST /v1/symbolize HTTP/1.1\r\nHost:", 0, &closed_after);
  EXPECT_LT(closed_after, 5.0);
  EXPECT_TRUE(served());

  // While slow clients hold connections, others are still served.
  std::vector<std::thread> slow;
  for (int i = 0; i < 2; ++i) {
    slow.emplace_back([&] { testing::RawExchange(server->port(), "GET /healthz HTTP/1.1\r\n"); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(served());
  for (std::thread& t : slow) t.join();

  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(ServeTest, MetricsCountRequestsErrorsLatencyAndCache) {
  std::unique_ptr<SymbolServer> server = Start();
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  // One connection: its worker counts an answer (after sending it) before reading the next
  // request, so /metrics sees every earlier answer.
  client.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    httplib::Result res = client.Post("/v1/symbolize", Body({0x1000}), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
  ASSERT_TRUE(client.Post("/v1/symbolize", "[", "application/json"));
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  const std::string& m = metrics->body;
  EXPECT_NE(m.find("# TYPE stacksym_symbolize_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(m.find("stacksym_symbolize_duration_seconds_count 4\n"), std::string::npos) << m;
  EXPECT_NE(m.find("stacksym_symbolize_duration_seconds_bucket{le=\"+Inf\"} 4\n"),
            std::string::npos);
  EXPECT_NE(m.find("stacksym_requests_total 4\n"), std::string::npos) << m;  // before /metrics
  EXPECT_NE(m.find("stacksym_request_errors_total{class=\"4xx\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("stacksym_cache_misses_total 1\n"), std::string::npos);
  EXPECT_NE(m.find("stacksym_cache_hits_total 2\n"), std::string::npos);
  EXPECT_NE(m.find("stacksym_debuginfod_fetches_total{outcome=\"found\"} 0\n"), std::string::npos);
}

TEST_F(ServeTest, ParsedFilesAreKeptWithinTheMemoryBudget) {
  SymbolServerOptions options;
  options.cache_bytes = 1;  // nothing fits: every request opens the file again
  std::unique_ptr<SymbolServer> server = Start(options);
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  std::string first, second;
  for (std::string* body : {&first, &second}) {
    httplib::Result res = client.Post("/v1/symbolize", Body({0x1000, 0x1180}), "application/json");
    ASSERT_TRUE(res);
    *body = res->body;
  }
  EXPECT_EQ(first, second);
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("stacksym_cache_misses_total 2\n"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("stacksym_cache_evictions_total 2\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("stacksym_cache_bytes 0\n"), std::string::npos);
}

TEST_F(ServeTest, UnknownBuildIdIsAnsweredWithAReason) {
  std::unique_ptr<SymbolServer> server = Start();
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  httplib::Result res = client.Post(
      "/v1/symbolize", R"({"modules":[{"build_id":"00112233445566778899","offsets":[16,32]}]})",
      "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  Result<remote::SymbolizeResponse> r = remote::ParseSymbolizeResponse(res->body);
  ASSERT_TRUE(r) << res->body;
  ASSERT_EQ(r->modules[0].answers.size(), 2u);
  EXPECT_EQ(r->modules[0].answers[1].reason, Reason::kNotFound);
  EXPECT_NE(r->modules[0].message.find("00112233445566778899"), std::string::npos);
}

}  // namespace
}  // namespace stacksym
