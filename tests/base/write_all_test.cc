// WriteAll: every byte of every piece, in order, at the file position or at an offset, empty
// pieces skipped, more pieces than one writev takes, and the errno of a write that fails.
#include "base/write_all.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace stacksym {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Contents(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buffer, sizeof(buffer), at)) > 0) {
    out.append(buffer, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

int TempFile() {
  char name[] = "/tmp/stacksym-write-all-XXXXXX";
  int fd = ::mkstemp(name);
  if (fd >= 0) ::unlink(name);
  return fd;
}

TEST(WriteAllTest, ManyPiecesWithEmptyOnesInOrder) {
  // More pieces than IOV_MAX (1024): several writev calls.
  std::vector<std::string> texts;
  std::string whole;
  for (int i = 0; i < 3000; ++i) {
    texts.push_back(i % 7 == 0 ? std::string() : std::to_string(i) + ",");
    whole += texts.back();
  }
  std::vector<std::span<const uint8_t>> pieces;
  for (const std::string& t : texts) pieces.push_back(Bytes(t));
  int fd = TempFile();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(WriteAll(fd, pieces), 0);
  EXPECT_EQ(Contents(fd), whole);
  ::close(fd);
}

TEST(WriteAllTest, AtAnOffsetLeavesTheRestAlone) {
  int fd = TempFile();
  ASSERT_GE(fd, 0);
  std::string head = "0123456789";
  std::span<const uint8_t> first[] = {Bytes(head)};
  ASSERT_EQ(WriteAll(fd, first), 0);
  std::string a = "ab", b = "", c = "cde";
  std::span<const uint8_t> middle[] = {Bytes(a), Bytes(b), Bytes(c)};
  EXPECT_EQ(WriteAll(fd, middle, 3), 0);
  EXPECT_EQ(Contents(fd), "012abcde89");
  ::close(fd);
}

TEST(WriteAllTest, OnlyEmptyPiecesWriteNothingAndSucceed) {
  int fd = TempFile();
  ASSERT_GE(fd, 0);
  std::string empty;
  std::span<const uint8_t> pieces[] = {Bytes(empty), Bytes(empty)};
  EXPECT_EQ(WriteAll(fd, pieces), 0);
  EXPECT_EQ(Contents(fd), "");
  ::close(fd);
}

TEST(WriteAllTest, FailedWriteGivesItsErrno) {
  std::string text = "x";
  std::span<const uint8_t> pieces[] = {Bytes(text)};
  int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(WriteAll(fd, pieces), EBADF);
  ::close(fd);
}

}  // namespace
}  // namespace stacksym
