// KernelTypesFile: the build's cut of its kernel's BTF is used only on that kernel (same
// /sys/kernel/notes, with a build ID); elsewhere libbpf reads the running kernel's BTF.
#include "capture/kernel_btf.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace stacksym {
namespace {

std::vector<uint8_t> ReadFile(const char* path) {
  std::vector<uint8_t> bytes;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) bytes.insert(bytes.end(), buf, buf + n);
  close(fd);
  return bytes;
}

TEST(KernelBtfTest, CutOnlyForTheBuildKernel) {
  std::vector<uint8_t> notes = ReadFile("/sys/kernel/notes");
  if (notes.size() < 36) GTEST_SKIP() << "no /sys/kernel/notes";
  std::span<const uint8_t> types = capture::BuildKernelTypesFor(notes);
  capture::KernelTypesFile file;
  // Built and tested on one machine, the cut is this kernel's; the file holds the same bytes.
  ASSERT_EQ(file.path() != nullptr, !types.empty());
  if (types.empty()) GTEST_SKIP() << "built on another kernel, or without kernel BTF";
  EXPECT_EQ(file.bytes(), types.size());
  EXPECT_EQ(ReadFile(file.path()), std::vector<uint8_t>(types.begin(), types.end()));
  // Raw BTF: magic 0xeb9f.
  ASSERT_GE(types.size(), 2u);
  EXPECT_EQ(types[0] | (types[1] << 8), 0xeb9f);

  // Another kernel: a build ID that differs in one byte, notes cut short, or longer.
  for (size_t at : {size_t{16}, size_t{35}}) {
    std::vector<uint8_t> other = notes;
    other[at] ^= 1;
    EXPECT_TRUE(capture::BuildKernelTypesFor(other).empty()) << "byte " << at;
  }
  std::vector<uint8_t> shorter(notes.begin(), notes.end() - 4);
  EXPECT_TRUE(capture::BuildKernelTypesFor(shorter).empty());
  std::vector<uint8_t> longer = notes;
  longer.resize(notes.size() + 4);
  EXPECT_TRUE(capture::BuildKernelTypesFor(longer).empty());
  EXPECT_TRUE(capture::BuildKernelTypesFor({}).empty());
}

}  // namespace
}  // namespace stacksym
