#include "stacksym/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

// Resident pages of the file-backed mappings (statm's third field, "shared"), in pages.
long ResidentFilePages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0, shared = 0;
  statm >> size >> resident >> shared;
  return shared;
}

TEST(MappedFile, ReleasedPagesLeaveTheResidentSetAndReadTheSame) {
  const std::string path = ::testing::TempDir() + "/mapped_release_" + std::to_string(getpid());
  const size_t size = size_t{16} << 20;
  {
    std::ofstream out(path, std::ios::binary);
    for (size_t i = 0; i < size; i += 4096) {
      std::string page(4096, static_cast<char>('a' + (i / 4096) % 26));
      out << page;
    }
  }
  Result<MappedFile> file = MappedFile::Open(path);
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->is_mapping());
  const long page_kb = ::sysconf(_SC_PAGESIZE) / 1024;
  const long before = ResidentFilePages();
  uint64_t sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += file->data()[i];
  const long touched = ResidentFilePages();
  EXPECT_GE((touched - before) * page_kb, 15 << 10) << "the file's pages were not made resident";
  file->ReleasePages();
  const long released = ResidentFilePages();
  EXPECT_LE((released - before) * page_kb, 1 << 10) << "released pages are still resident";
  uint64_t again = 0;
  for (size_t i = 0; i < size; i += 4096) again += file->data()[i];
  EXPECT_EQ(again, sum);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stacksym
