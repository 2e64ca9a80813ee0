#include <gtest/gtest.h>

#include <filesystem>

#include "stacksym/output.h"
#include "test_profiles.h"

namespace stacksym {
namespace {

TEST(FilesTest, FormatFromFileName) {
  EXPECT_EQ(ProfileFormatFromPath("a/out.pb.gz"), ProfileFormat::kPprof);
  EXPECT_EQ(ProfileFormatFromPath("out.folded"), ProfileFormat::kFolded);
  EXPECT_EQ(ProfileFormatFromPath("out.html"), ProfileFormat::kHtml);
  EXPECT_EQ(ProfileFormatFromPath("out.svg"), ProfileFormat::kSvg);
  EXPECT_EQ(ProfileFormatFromPath("out.gz"), std::nullopt);
  EXPECT_EQ(ParseProfileFormat("svg").value_or(ProfileFormat::kPprof), ProfileFormat::kSvg);
  EXPECT_FALSE(ParseProfileFormat("png"));
}

TEST(FilesTest, WriteProfileDispatchesOnExtensionAndReadDetectsContent) {
  std::string dir = testing::TestOutputDir("files");
  Profile p = testing::MakeSampleProfile();
  for (const char* name : {"p.pb.gz", "p.folded", "p.html", "p.svg"}) {
    Result<void> r = WriteProfile(p, dir + "/" + name);
    ASSERT_TRUE(r) << name << ": " << r.error().ToString();
  }
  std::string pb = testing::ReadFileOrDie(dir + "/p.pb.gz");
  EXPECT_EQ(pb.substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(testing::ReadFileOrDie(dir + "/p.folded"), testing::kSampleFolded);
  EXPECT_EQ(testing::ReadFileOrDie(dir + "/p.html").rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(testing::ReadFileOrDie(dir + "/p.svg").rfind("<?xml", 0), 0u);

  for (const char* name : {"p.pb.gz", "p.folded"}) {
    Result<Profile> back = ReadProfile(dir + "/" + name);
    ASSERT_TRUE(back) << name << ": " << back.error().ToString();
    EXPECT_EQ(FormatFolded(*back), testing::kSampleFolded) << name;
  }
  // No temporary files are left behind.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 4u);
}

TEST(FilesTest, ErrorsNameTheProblem) {
  Result<void> unknown = WriteProfile(testing::MakeSampleProfile(), "/tmp/x.unknown");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find(".pb.gz"), std::string::npos);
  Result<void> no_dir = WriteProfile(testing::MakeSampleProfile(), "/nonexistent/dir/p.folded");
  ASSERT_FALSE(no_dir);
  Result<Profile> missing = ReadProfile("/nonexistent/p.pb.gz");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound) << missing.error().ToString();
}

}  // namespace
}  // namespace stacksym
