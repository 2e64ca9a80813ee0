#include "stacksym/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace stacksym {
namespace {

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + std::to_string(::getpid());
}

TEST(MappedFile, MapsRegularFile) {
  std::string path = TempPath("mapped");
  std::ofstream(path) << "hello";
  auto f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.error().ToString();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), f->size()), "hello");
  EXPECT_EQ(f->identity().size, 5u);
  EXPECT_NE(f->identity().inode, 0u);
  MappedFile moved = std::move(*f);
  EXPECT_EQ(moved.size(), 5u);
  std::remove(path.c_str());
}

TEST(MappedFile, EmptyFileIsEmptySpan) {
  std::string path = TempPath("empty");
  std::ofstream(path).close();
  auto f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 0u);
  std::remove(path.c_str());
}

TEST(MappedFile, ProcFilesAreRead) {
  auto f = MappedFile::Open("/proc/self/maps");
  ASSERT_TRUE(f.ok()) << f.error().ToString();
  EXPECT_GT(f->size(), 0u);
}

TEST(MappedFile, ErrorsNameTheFile) {
  auto missing = MappedFile::Open("/nonexistent/file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().ToString().find("/nonexistent/file"), std::string::npos);
  auto dir = MappedFile::Open("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().ToString().find("directory"), std::string::npos);
}

}  // namespace
}  // namespace stacksym
