// debuginfod end to end, with Debian's own `debuginfod` server. The test moves itself into a
// private network namespace first (only its own loopback exists there, so the server, which
// listens on every interface, is reachable from nowhere else), serves a directory holding
// remote_prog's debug file and the stripped program, and checks that:
//   - answers through debuginfod equal the local answers (DWARF and the executable fetched);
//   - the second time, libdebuginfod's cache answers (the server is stopped by then);
//   - a stopped server, and one that accepts but never answers, give a reason, quickly.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../symbolize/test_util.h"
#include "debuginfod_server.h"
#include "remote_test_util.h"
#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::DebuginfodServer;
using testing::EnterPrivateNetwork;
using testing::FixturePath;
using testing::ReadFile;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Describe(const SymbolizedAddress& a) {
  std::ostringstream out;
  out << (a.reason ? ReasonName(*a.reason) : "ok") << " " << a.symbol;
  for (const SourceFrame& f : a.frames) {
    out << " | " << f.function << " " << f.file << ":" << f.line << ":" << f.column
        << (f.inlined ? " inlined" : "");
  }
  return out.str();
}

TEST(Debuginfod, FetchesEqualLocalAnswersCachesAndFailsFastWhenDown) {
  std::string why;
  if (::system("command -v debuginfod >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs Debian's debuginfod server (package debuginfod)";
  }
  if (!EnterPrivateNetwork(&why)) GTEST_SKIP() << "needs a private network namespace: " << why;

  TempDir served, local, work, cache, empty;
  std::vector<uint8_t> build_id = testing::BuildIdOf(FixturePath("remote_prog"));
  std::string hex = ToHex(build_id);
  std::filesystem::copy_file(FixturePath("remote_prog.debug"),
                             served.path() + "/remote_prog.debug");
  std::filesystem::copy_file(FixturePath("remote_prog.stripped"), served.path() + "/remote_prog");
  testing::PlaceByBuildId(local.path(), FixturePath("remote_prog.stripped"), "");
  testing::PlaceByBuildId(local.path(), FixturePath("remote_prog.debug"), ".debug");

  DebuginfodServer server;
  ASSERT_TRUE(server.Start(served.path(), work.path(), hex))
      << "debuginfod did not come up; log:\n"
      << ReadFile(work.path() + "/debuginfod.log");
  std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  ::setenv("DEBUGINFOD_URLS", url.c_str(), 1);
  ::setenv("DEBUGINFOD_CACHE_PATH", cache.path().c_str(), 1);
  ::unsetenv("DEBUGINFOD_PROGRESS");

  // 1. The stripped program's DWARF through debuginfod equals the DWARF found locally.
  DebuginfodCounters counters;
  std::shared_ptr<const BuildIdFetcher> fetcher = MakeDebuginfodFetcher({}, &counters);
  ASSERT_NE(fetcher, nullptr);
  std::vector<uint64_t> offsets = testing::RemoteProgOffsets();
  SymbolizeOptions local_options;
  local_options.debug_dirs = {local.path()};
  SymbolizeOptions remote_options;
  remote_options.debug_dirs = {empty.path()};
  remote_options.fetcher = fetcher;
  auto local_sym = ElfSymbolizer::Open(FixturePath("remote_prog.stripped"), local_options);
  auto remote_sym = ElfSymbolizer::Open(FixturePath("remote_prog.stripped"), remote_options);
  ASSERT_TRUE(local_sym && remote_sym);
  std::vector<SymbolizedAddress> expected =
      (*local_sym)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
  std::vector<SymbolizedAddress> got =
      (*remote_sym)->SymbolizeBatch(offsets, AddressKind::kFileOffset);
  size_t with_lines = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(Describe(got[i]), Describe(expected[i])) << testing::Hex(offsets[i]);
    if (!expected[i].frames.empty() && expected[i].frames[0].line > 0) ++with_lines;
  }
  EXPECT_GT(with_lines, offsets.size() / 2);  // the stripped program alone has no lines
  EXPECT_NE((*remote_sym)->debug_file().find(cache.path()), std::string::npos);
  EXPECT_EQ(counters.found.load(), 1u);

  // The executable too: symbolize-profile with no local file at all equals the local run.
  Result<std::string> exe = FindBinaryByBuildId(build_id, {empty.path()}, fetcher.get());
  ASSERT_TRUE(exe) << exe.error().ToString();
  std::string in = work.path() + "/in.pb.gz";
  ASSERT_TRUE(WriteProfileAs(testing::MakeRemoteProgProfile(), ProfileFormat::kPprof, in));
  std::string cli = std::string(STACKSYM_CLI) + " symbolize-profile -q --no-default-debug-dir ";
  int code = -1;
  testing::RunCommand(cli + "--no-debuginfod --debug-dir " + local.path() + " " + in + " " +
                          work.path() + "/local.folded 2>&1",
                      &code);
  ASSERT_EQ(code, 0);
  std::string out = testing::RunCommand(
      cli + "--debug-dir " + empty.path() + " " + in + " " + work.path() + "/fetched.folded 2>&1",
      &code);
  ASSERT_EQ(code, 0) << out;
  std::string local_folded = ReadFile(work.path() + "/local.folded");
  EXPECT_NE(local_folded.find("sum_squares"), std::string::npos);
  EXPECT_EQ(ReadFile(work.path() + "/fetched.folded"), local_folded);

  // 2. Server stopped: the same files come from libdebuginfod's cache.
  server.Stop();
  auto start = Clock::now();
  DebuginfodCounters again;
  std::shared_ptr<const BuildIdFetcher> cached = MakeDebuginfodFetcher({}, &again);
  Result<std::string> debuginfo = cached->Fetch(build_id, BuildIdFetcher::Kind::kDebugInfo);
  ASSERT_TRUE(debuginfo) << debuginfo.error().ToString();
  EXPECT_NE(debuginfo->find(cache.path()), std::string::npos);
  EXPECT_LT(SecondsSince(start), 2.0);

  // 3. Server down and not in the cache: a reason, quickly.
  std::vector<uint8_t> other(20, 0x5a);
  start = Clock::now();
  Result<std::string> down = cached->Fetch(other, BuildIdFetcher::Kind::kDebugInfo);
  ASSERT_FALSE(down);
  EXPECT_NE(down.error().message.find("debuginfod"), std::string::npos);
  EXPECT_LT(SecondsSince(start), 5.0) << down.error().ToString();
  EXPECT_EQ(again.failures.load(), 1u) << down.error().ToString();
  Result<std::string> none = FindBinaryByBuildId(other, {empty.path()}, cached.get());
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("fetch: debuginfod"), std::string::npos)
      << none.error().message;

  // 4. A server that accepts connections but never answers: abandoned after the timeout.
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(silent, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string silent_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  ::setenv("DEBUGINFOD_URLS", silent_url.c_str(), 1);
  DebuginfodOptions quick;
  quick.timeout_seconds = 1;
  std::shared_ptr<const BuildIdFetcher> hung = MakeDebuginfodFetcher(quick);
  start = Clock::now();
  Result<std::string> slow =
      hung->Fetch(std::vector<uint8_t>(20, 0x77), BuildIdFetcher::Kind::kExecutable);
  double took = SecondsSince(start);
  ::close(silent);
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().message.find("no answer within 1.0 s"), std::string::npos)
      << slow.error().ToString();
  EXPECT_LT(took, 6.0);
}

// The llvm-symbolizer drop-in against llvm-symbolizer 16, both with nothing local and the
// same debuginfod server: BUILDID: modules (the debug file debuginfod has) and a stripped
// file module (its debug file fetched), byte for byte in LLVM and JSON layouts; with
// --no-debuginfod, both answer without them (a BUILDID: error each time, no lines).
TEST(Debuginfod, DropInFetchesAsLlvmSymbolizer16) {
  std::string why;
  if (::system("command -v debuginfod >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs Debian's debuginfod server (package debuginfod)";
  }
  if (::system("command -v llvm-symbolizer-16 >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs llvm-symbolizer-16 (package llvm-16) as the reference";
  }
  if (!EnterPrivateNetwork(&why)) GTEST_SKIP() << "needs a private network namespace: " << why;

  TempDir served, work, empty, bin, llvm_cache, our_cache;
  std::string hex = ToHex(testing::BuildIdOf(FixturePath("remote_prog")));
  std::filesystem::copy_file(FixturePath("remote_prog.debug"),
                             served.path() + "/remote_prog.debug");
  std::filesystem::copy_file(FixturePath("remote_prog.stripped"), served.path() + "/remote_prog");
  std::string dropin = bin.path() + "/llvm-symbolizer";
  std::filesystem::create_symlink(STACKSYM_CLI, dropin);

  // CODE at every function symbol of the program and 5 bytes in, by build ID and through the
  // stripped file; DATA and FRAME by build ID; a build ID no one has.
  std::string stripped = FixturePath("remote_prog.stripped");
  std::string requests;
  std::istringstream nm(testing::RunCommand("nm --defined-only " + FixturePath("remote_prog")));
  size_t functions = 0;
  for (std::string address, type, name; nm >> address >> type >> name;) {
    if (type != "T" && type != "t") continue;
    ++functions;
    for (int delta : {0, 5}) {
      char at[32];
      std::snprintf(at, sizeof at, "0x%llx",
                    std::stoull(address, nullptr, 16) + static_cast<unsigned long long>(delta));
      requests += "CODE BUILDID:" + hex + " " + at + "\nCODE \"" + stripped + "\" " + at + "\n";
      requests += "FRAME BUILDID:" + hex + " " + at + "\nDATA BUILDID:" + hex + " " + at + "\n";
    }
  }
  ASSERT_GE(functions, 3u);
  requests += "BUILDID:00ff 0x10\n";
  std::ofstream(work.path() + "/requests") << requests;

  DebuginfodServer server;
  ASSERT_TRUE(server.Start(served.path(), work.path(), hex))
      << "debuginfod did not come up; log:\n"
      << ReadFile(work.path() + "/debuginfod.log");
  std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  ::unsetenv("DEBUGINFOD_PROGRESS");
  auto run = [&](const std::string& tool, const std::string& cache, const std::string& flags) {
    int code = -1;
    std::string out =
        testing::RunCommand("DEBUGINFOD_URLS=" + url + " DEBUGINFOD_CACHE_PATH=" + cache + " " +
                                tool + " --debug-file-directory=" + empty.path() + " " + flags +
                                " <" + work.path() + "/requests 2>/dev/null",
                            &code);
    EXPECT_EQ(code, 0) << tool << " " << flags;
    return out;
  };
  for (const char* flags : {"", "--output-style=JSON", "--no-debuginfod", "-pa --no-debuginfod"}) {
    std::string expected = run("llvm-symbolizer-16", llvm_cache.path(), flags);
    std::string got = run(dropin, our_cache.path(), flags);
    EXPECT_EQ(got, expected) << "flags: " << flags;
    bool fetched = std::string(flags).find("no-debuginfod") == std::string::npos;
    // Lines of remote_prog.c only come with its DWARF, which only debuginfod has.
    EXPECT_EQ(got.find("remote_prog.c") != std::string::npos, fetched) << flags;
  }
}

// libdebuginfod (and libcurl's ~30 libraries behind it) is dlopen'ed on the first fetch: a
// command that never fetches, such as every llvm-symbolizer drop-in start, does not load it.
TEST(Debuginfod, LibraryIsLoadedOnlyWhenAFetchIsWanted) {
  std::string cmd = std::string("readelf -d ") + STACKSYM_CLI + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  ASSERT_NE(out.find("(NEEDED)"), std::string::npos) << out;
  EXPECT_EQ(out.find("libdebuginfod"), std::string::npos) << out;
  EXPECT_EQ(out.find("libcurl"), std::string::npos) << out;
  // Likewise HTTP (libstacksym-http.so, http_transport.h) and with it OpenSSL, and protobuf
  // is linked in: no start-up pays for loading them.
  EXPECT_EQ(out.find("httplib"), std::string::npos) << out;
  EXPECT_EQ(out.find("libssl"), std::string::npos) << out;
  EXPECT_EQ(out.find("libcrypto"), std::string::npos) << out;
  EXPECT_EQ(out.find("libprotobuf"), std::string::npos) << out;
}

}  // namespace
}  // namespace stacksym
