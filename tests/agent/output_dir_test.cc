// --output-dir: one readable pprof per window, named by its start, the oldest removed past the
// byte bound (never the newest).
#include "agent/output_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "stacksym/output.h"

namespace stacksym::agent {
namespace {

Profile Window(uint64_t start_ns, uint64_t stacks) {
  Profile p;
  p.period_ns = 1000000;
  p.start_time_ns = start_ns;
  p.duration_ns = 10'000'000'000;
  uint32_t m = p.AddModule({ModuleKind::kElf, "/usr/bin/app", {1, 2, 3, 4}});
  for (uint64_t s = 0; s < stacks; ++s) {
    uint32_t f = p.InternFrame({FrameKind::kUser, m, 0x1000 + s * 16});
    p.AddSample({.pid = 7, .tid = 7, .comm = "app", .frames = {f}}, s + 1);
  }
  return p;
}

TEST(OutputDirTest, FileNamesSortByTime) {
  EXPECT_EQ(WindowFileName(1764312312345000000ull), "stacksym-20251128T064512.345Z.pb.gz");
  EXPECT_LT(WindowFileName(1764312312345000000ull), WindowFileName(1764312322345000000ull));
}

TEST(OutputDirTest, WritesReadableWindowsAndTrimsTheOldest) {
  std::string dir = testing::TempDir() + "/stacksym_output_dir_test";
  std::filesystem::remove_all(dir);
  Result<OutputDir> out = OutputDir::Open(dir, 1);  // any second file passes the bound
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  Result<std::string> first = out->Write(Window(1764312312000000000ull, 50));
  ASSERT_TRUE(first.ok());
  Result<Profile> again = ReadProfile(*first);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->total_samples(), 50u * 51 / 2);
  Result<std::string> second = out->Write(Window(1764312322000000000ull, 5));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(std::filesystem::exists(*first)) << "the oldest goes past the bound";
  EXPECT_TRUE(std::filesystem::exists(*second)) << "the newest stays";
  EXPECT_EQ(out->files_removed(), 1u);
  // Files of others in the directory are left alone.
  std::filesystem::path other = std::filesystem::path(dir) / "notes.txt";
  { std::ofstream(other) << "keep"; }
  ASSERT_TRUE(out->Write(Window(1764312332000000000ull, 5)).ok());
  EXPECT_TRUE(std::filesystem::exists(other));
  std::filesystem::remove_all(dir);
}

TEST(OutputDirTest, NotADirectoryIsAClearError) {
  Result<OutputDir> out = OutputDir::Open("/proc/self/status/x", 1);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("--output-dir"), std::string::npos);
}

}  // namespace
}  // namespace stacksym::agent
