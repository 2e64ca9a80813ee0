// `stacksym serve` as a debuginfod server (docs/remote.md), checked with elfutils' own client:
//   - debuginfod-find debuginfo / executable / section against serve gets byte-identical
//     files and sections, and fails for a build ID serve does not have;
//   - HEAD gives the size and no body; malformed paths get 400 and serve goes on;
//   - federation: a serve with no files and another serve as its upstream hands out the
//     upstream's files, and still does from its cache once the upstream is gone;
//   - a 1 GiB file is streamed without serve's memory growing by it.
// Servers listen on 127.0.0.1 only, and stop by themselves.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../symbolize/test_util.h"
#include "remote/debuginfod_path.h"
#include "remote_test_util.h"
#include "serve_process.h"
#include "stacksym/hex.h"
#include "stacksym/remote.h"

namespace stacksym {
namespace {

using remote::BuildIdArtifact;
using remote::ParseBuildIdPath;
using testing::FixturePath;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

bool HaveTool(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

std::string ShellQuote(const std::string& s) { return "'" + s + "'"; }

// `debuginfod-find ARGS` with serve at `url` as its only server and a cache of its own: the
// path it printed (the file in its cache), and its exit code in *code.
std::string DebuginfodFind(const std::string& url, const std::string& cache,
                           const std::string& args, int* code) {
  std::string out = RunCommand("env -u DEBUGINFOD_PROGRESS DEBUGINFOD_URLS=" + ShellQuote(url) +
                                   " DEBUGINFOD_CACHE_PATH=" + ShellQuote(cache) +
                                   " debuginfod-find " + args + " 2>/dev/null",
                               code);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The section's bytes as binutils extracts them (a second implementation to compare with).
std::string ObjcopySection(const std::string& file, const std::string& section,
                           const std::string& dir) {
  std::string out = dir + "/section.bin";
  int code = -1;
  RunCommand("objcopy --dump-section " + section + "=" + out + " " + file + " " + dir +
                 "/objcopy-scratch 2>&1",
             &code);
  return code == 0 ? ReadFile(out) : std::string("objcopy failed");
}

TEST(DebuginfodApiPath, ParsesTheThreeArtifactsAndRefusesEverythingOdd) {
  std::string id = "0123456789abcdef0123456789abcdef01234567";
  Result<remote::BuildIdPath> p = ParseBuildIdPath("/buildid/" + id + "/debuginfo");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->artifact, BuildIdArtifact::kDebugInfo);
  EXPECT_EQ(ToHex(p->build_id), id);
  p = ParseBuildIdPath("/buildid/" + id + "/executable");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->artifact, BuildIdArtifact::kExecutable);
  p = ParseBuildIdPath("/buildid/0123456789ABCDEF/section/.debug_info");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->artifact, BuildIdArtifact::kSection);
  EXPECT_EQ(p->section, ".debug_info");
  EXPECT_EQ(ToHex(p->build_id), "0123456789abcdef");
  p = ParseBuildIdPath("/buildid/" + id + "/source/usr/include/stdio.h");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->artifact, BuildIdArtifact::kSource);

  std::vector<std::string> bad_paths = {"/buildid/",
                                        "/buildid/" + id,
                                        "/buildid/" + id + "/",
                                        "/buildid//debuginfo",
                                        "/buildid/abc/debuginfo",
                                        "/buildid/ab/debuginfo",
                                        "/buildid/zz" + id + "/debuginfo",
                                        "/buildid/" + id + "/debuginfo/",
                                        "/buildid/" + id + "/debuginfox",
                                        "/buildid/" + id + "/section/",
                                        "/buildid/" + id + "/section/a/b",
                                        "/buildid/" + id + "/section/a b",
                                        "/buildid/" + id + "/section/" + std::string(300, 'a'),
                                        "/buildid/" + std::string(130, 'a') + "/debuginfo",
                                        "/other/" + id + "/debuginfo",
                                        "/buildid/" + id + "/section/" + std::string(".a\0b", 4)};
  for (const std::string& bad : bad_paths) {
    EXPECT_FALSE(ParseBuildIdPath(bad)) << bad;
    if (Result<remote::BuildIdPath> r = ParseBuildIdPath(bad); !r) {
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << bad;
    }
  }
}

// A serve in this process over a debug dir that holds remote_prog stripped (the executable)
// and its debug file, by build ID.
class DebuginfodApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog.stripped"), "");
    testing::PlaceByBuildId(dir_.path(), FixturePath("remote_prog.debug"), ".debug");
    hex_ = ToHex(testing::BuildIdOf(FixturePath("remote_prog")));
    ASSERT_EQ(hex_.size(), 40u);
    SymbolServerOptions options;
    options.debug_dirs = {dir_.path()};
    Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start("127.0.0.1", 0, options);
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = *std::move(server);
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::string Metrics() {
    httplib::Client client("127.0.0.1", server_->port());
    httplib::Result res = client.Get("/metrics");
    return res ? res->body : "";
  }

  TempDir dir_;
  std::string hex_;
  std::unique_ptr<SymbolServer> server_;
};

TEST_F(DebuginfodApiTest, DebuginfodFindGetsByteIdenticalFilesAndSections) {
  if (!HaveTool("debuginfod-find")) {
    GTEST_SKIP() << "needs elfutils' debuginfod-find (package debuginfod)";
  }
  TempDir cache, scratch;
  int code = -1;
  std::string got = DebuginfodFind(Url(), cache.path(), "debuginfo " + hex_, &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got), ReadFile(FixturePath("remote_prog.debug")));
  got = DebuginfodFind(Url(), cache.path(), "executable " + hex_, &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got), ReadFile(FixturePath("remote_prog.stripped")));

  // Sections, each with a cache of its own so that the client cannot cut them from a file it
  // already has: .debug_info is in the debug file; .text only in the executable (the debug
  // file's is SHT_NOBITS).
  for (const char* section : {".debug_info", ".debug_line", ".text"}) {
    TempDir own;
    got = DebuginfodFind(Url(), own.path(), std::string("section ") + hex_ + " " + section, &code);
    ASSERT_EQ(code, 0) << section << ": " << got;
    const char* from =
        std::string(section) == ".text" ? "remote_prog.stripped" : "remote_prog.debug";
    std::string expected = ObjcopySection(FixturePath(from), section, scratch.path());
    EXPECT_GT(expected.size(), 16u) << section;
    EXPECT_EQ(ReadFile(got), expected) << section;
  }
  std::string metrics = Metrics();
  EXPECT_NE(metrics.find("stacksym_buildid_requests_total{endpoint=\"section\",code=\"200\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("stacksym_buildid_requests_total{endpoint=\"debuginfo\",code=\"200\"} 1"),
            std::string::npos)
      << metrics;

  // Unknown: a build ID nobody has, and a section neither file has.
  std::string unknown(40, 'e');
  got = DebuginfodFind(Url(), cache.path(), "debuginfo " + unknown, &code);
  EXPECT_NE(code, 0) << got;
  got = DebuginfodFind(Url(), cache.path(), "executable " + unknown, &code);
  EXPECT_NE(code, 0) << got;
  TempDir own;
  got = DebuginfodFind(Url(), own.path(), "section " + hex_ + " .no_such_section", &code);
  EXPECT_NE(code, 0) << got;
  metrics = Metrics();
  EXPECT_NE(metrics.find("{endpoint=\"debuginfo\",code=\"404\"}"), std::string::npos) << metrics;
}

TEST_F(DebuginfodApiTest, HeadGivesTheSizeAndNoBody) {
  httplib::Client client("127.0.0.1", server_->port());
  httplib::Result res = client.Head("/buildid/" + hex_ + "/debuginfo");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::string size = std::to_string(std::filesystem::file_size(FixturePath("remote_prog.debug")));
  EXPECT_EQ(res->get_header_value("Content-Length"), size);
  EXPECT_EQ(res->get_header_value("X-DEBUGINFOD-SIZE"), size);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_NE(res->get_header_value("X-DEBUGINFOD-FILE").find(".debug"), std::string::npos);
  EXPECT_FALSE(res->get_header_value("Last-Modified").empty());

  // On the wire: the headers end the answer (the server closes after them, as asked).
  std::string raw = testing::RawExchange(
      server_->port(),
      "HEAD /buildid/" + hex_ + "/executable HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  size_t end = raw.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << raw;
  EXPECT_EQ(raw.substr(0, 12), "HTTP/1.1 200") << raw;
  EXPECT_EQ(raw.size(), end + 4) << "a HEAD answer carried a body";
  std::string exe_size =
      std::to_string(std::filesystem::file_size(FixturePath("remote_prog.stripped")));
  EXPECT_NE(raw.find("Content-Length: " + exe_size + "\r\n"), std::string::npos) << raw;

  res = client.Head("/buildid/" + std::string(40, 'e') + "/executable");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

// Not what debuginfod clients send, but what HTTP caches and download tools do.
TEST_F(DebuginfodApiTest, RangesGetTheirBytesOr416) {
  httplib::Client client("127.0.0.1", server_->port());
  std::string path = "/buildid/" + hex_ + "/executable";
  std::string file = ReadFile(FixturePath("remote_prog.stripped"));
  httplib::Result res = client.Get(path, {{"Range", "bytes=100-199"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 206);
  EXPECT_EQ(res->body, file.substr(100, 100));
  EXPECT_EQ(res->get_header_value("Content-Range"), "bytes 100-199/" + std::to_string(file.size()));
  res = client.Get(path, {{"Range", "bytes=-64"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 206);
  EXPECT_EQ(res->body, file.substr(file.size() - 64));
  for (std::string beyond :
       {"bytes=" + std::to_string(file.size()) + "-", "bytes=0-" + std::to_string(file.size())}) {
    res = client.Get(path, {{"Range", beyond}});
    ASSERT_TRUE(res) << beyond;
    EXPECT_EQ(res->status, 416) << beyond;
    EXPECT_EQ(res->body, "") << beyond;
  }
  res = client.Get(path);  // the connection is still in step
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, file);
}

TEST_F(DebuginfodApiTest, OddRequestsGet400Or404AndTheServerGoesOn) {
  httplib::Client client("127.0.0.1", server_->port());
  struct Case {
    std::string path;
    int status;
  };
  std::vector<Case> cases = {
      {"/buildid/xyz/debuginfo", 400},
      {"/buildid/abc/debuginfo", 400},
      {"/buildid/" + hex_ + "/frobnicate", 400},
      {"/buildid/" + hex_ + "/section/", 400},
      {"/buildid/" + hex_ + "/section/%2e%2e%2fetc", 400},  // a '/' once decoded
      {"/buildid/" + hex_ + "/section/.a%00b", 400},
      {"/buildid/" + hex_ + "/source/usr/include/stdio.h", 404},
      {"/buildid/" + hex_ + "/section/.nothing", 404},
      {"/buildid/" + std::string(7000, 'a') + "/debuginfo", 400},
      {"/buildid/" + hex_ + "/section/.bss", 404},  // SHT_NOBITS in both files
  };
  for (const Case& c : cases) {
    httplib::Result res = client.Get(c.path);
    ASSERT_TRUE(res) << c.path.substr(0, 80);
    EXPECT_EQ(res->status, c.status) << c.path.substr(0, 80) << ": " << res->body;
  }
  // A POST to the API is not the API.
  httplib::Result post = client.Post("/buildid/" + hex_ + "/debuginfo", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 404);
  // Still serving, and counted.
  httplib::Result ok = client.Get("/buildid/" + hex_ + "/executable");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, ReadFile(FixturePath("remote_prog.stripped")));
  std::string metrics = Metrics();
  EXPECT_NE(metrics.find("{endpoint=\"invalid\",code=\"400\"} 7"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("{endpoint=\"section\",code=\"404\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("{endpoint=\"source\",code=\"404\"} 1"), std::string::npos) << metrics;
}

// debuginfo is the .debug file, else a binary that carries its own DWARF; a stripped binary
// alone has none to give (but is the executable).
TEST(DebuginfodApiLookup, DebuginfoIsAnUnstrippedBinaryWhenNoDebugFileIsThere) {
  std::string hex = ToHex(testing::BuildIdOf(FixturePath("remote_prog")));
  for (const char* file : {"remote_prog", "remote_prog.stripped"}) {
    TempDir dir;
    testing::PlaceByBuildId(dir.path(), FixturePath(file), "");
    SymbolServerOptions options;
    options.debug_dirs = {dir.path()};
    Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start("127.0.0.1", 0, options);
    ASSERT_TRUE(server) << server.error().ToString();
    httplib::Client client("127.0.0.1", (*server)->port());
    httplib::Result debuginfo = client.Get("/buildid/" + hex + "/debuginfo");
    httplib::Result executable = client.Get("/buildid/" + hex + "/executable");
    ASSERT_TRUE(debuginfo && executable);
    EXPECT_EQ(executable->status, 200) << file;
    EXPECT_EQ(executable->body, ReadFile(FixturePath(file))) << file;
    if (std::string(file) == "remote_prog") {
      EXPECT_EQ(debuginfo->status, 200);
      EXPECT_EQ(debuginfo->body, ReadFile(FixturePath(file)));
    } else {
      EXPECT_EQ(debuginfo->status, 404) << debuginfo->body;
      EXPECT_NE(debuginfo->body.find("holds no DWARF"), std::string::npos) << debuginfo->body;
    }
  }
}

// serve A has no files; its upstream (DEBUGINFOD_URLS) is serve B, which has them.
TEST_F(DebuginfodApiTest, ServeFederatesAnUpstreamAndKeepsWhatItFetched) {
  if (!HaveTool("debuginfod-find")) {
    GTEST_SKIP() << "needs elfutils' debuginfod-find (package debuginfod)";
  }
  TempDir empty, a_cache, client_cache;
  testing::ServeProcess a;
  std::string why;
  ASSERT_TRUE(a.Start(
      {"--no-default-debug-dir", "--debug-dir", empty.path(), "--debuginfod-cache", a_cache.path()},
      {"DEBUGINFOD_URLS=" + Url()}, &why))
      << why;
  int code = -1;
  std::string got = DebuginfodFind(a.url(), client_cache.path(), "debuginfo " + hex_, &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got), ReadFile(FixturePath("remote_prog.debug")));
  got = DebuginfodFind(a.url(), client_cache.path(), "executable " + hex_, &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got), ReadFile(FixturePath("remote_prog.stripped")));
  // B answered A (not the client directly).
  std::string b_metrics = Metrics();
  EXPECT_NE(b_metrics.find("{endpoint=\"executable\",code=\"200\"} 1"), std::string::npos)
      << b_metrics;

  // With B gone, A still has what it fetched; a build ID B never had is still a 404.
  server_->Stop();
  server_->Wait();
  TempDir fresh;
  got = DebuginfodFind(a.url(), fresh.path(), "executable " + hex_, &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got), ReadFile(FixturePath("remote_prog.stripped")));
  // A cache of its own: libdebuginfod 0.188 does not ask a server for a section its cached
  // executable lacks.
  TempDir fresh_for_section;
  got =
      DebuginfodFind(a.url(), fresh_for_section.path(), "section " + hex_ + " .debug_info", &code);
  ASSERT_EQ(code, 0) << got;
  EXPECT_EQ(ReadFile(got),
            ObjcopySection(FixturePath("remote_prog.debug"), ".debug_info", fresh.path()));
  got = DebuginfodFind(a.url(), fresh.path(), "debuginfo " + std::string(40, 'e'), &code);
  EXPECT_NE(code, 0) << got;
}

// A debug file made 1 GiB long (sparse zeros after its own bytes) goes out whole, and serve's
// peak resident memory grows by far less than the file.
TEST(DebuginfodApiBigFile, OneGibibyteIsStreamedNotHeld) {
  TempDir dir;
  std::string hex = ToHex(testing::BuildIdOf(FixturePath("remote_prog.debug")));
  testing::PlaceByBuildId(dir.path(), FixturePath("remote_prog.debug"), ".debug");
  testing::PlaceByBuildId(dir.path(), FixturePath("remote_prog.stripped"), "");
  std::string big = dir.path() + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  constexpr uint64_t kSize = uint64_t{1} << 30;
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kSize)), 0);
  std::string original = ReadFile(FixturePath("remote_prog.debug"));

  testing::ServeProcess serve;
  std::string why;
  ASSERT_TRUE(serve.Start({"--no-default-debug-dir", "--debug-dir", dir.path(), "--no-debuginfod"},
                          {}, &why))
      << why;
  httplib::Client client("127.0.0.1", serve.port());
  client.set_read_timeout(std::chrono::seconds(120));
  // A first small answer (the executable) loads what any answer needs (the HTTP module, its
  // threads); the peak is measured from there, over the big file's HEAD and GET.
  httplib::Result small = client.Get("/buildid/" + hex + "/executable");
  ASSERT_TRUE(small);
  ASSERT_EQ(small->status, 200);
  long before_kb = serve.StatusKb("VmHWM");
  ASSERT_GT(before_kb, 0);
  httplib::Result head = client.Head("/buildid/" + hex + "/debuginfo");
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(kSize));

  uint64_t received = 0;
  bool same = true;
  httplib::Result res =
      client.Get("/buildid/" + hex + "/debuginfo", [&](const char* data, size_t length) {
        // Every byte: the debug file's own, then the zeros the truncate added.
        for (size_t i = 0; i < length && same; ++i) {
          uint64_t at = received + i;
          same = data[i] == (at < original.size() ? original[at] : '\0');
        }
        received += length;
        return true;
      });
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(received, kSize);
  EXPECT_TRUE(same);
  long after_kb = serve.StatusKb("VmHWM");
  EXPECT_LT(after_kb - before_kb, 64 * 1024)
      << "serve's peak RSS went from " << before_kb << " kB to " << after_kb << " kB";
}

}  // namespace
}  // namespace stacksym
