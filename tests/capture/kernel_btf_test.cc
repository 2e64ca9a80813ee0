// KernelTypesFile: the build's cut of its kernel's BTF is used only on that kernel (same
// /sys/kernel/notes, with a build ID); elsewhere libbpf reads the running kernel's BTF.
#include "capture/kernel_btf.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
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

// BtfHasName: a whole name of the string section, mapped or read; nothing from a file that is
// not BTF. (A regular file maps; the kernel's maps since Linux 6.16, else it is read.)
TEST(KernelBtfTest, HasNameFindsWholeNamesOfTheStrings) {
  static const char kStrings[] = "\0int\0btf_trace_sched_switch\0task_struct\0";
  const std::string strings(kStrings, sizeof(kStrings) - 1);  // (not the literal's own NUL)
  struct {
    uint16_t magic = 0xEB9F;
    uint8_t version = 1, flags = 0;
    uint32_t hdr_len = 24, type_off = 0, type_len = 8, str_off = 8, str_len;
  } header;
  header.str_len = static_cast<uint32_t>(strings.size());
  const std::string path = ::testing::TempDir() + "kernel_btf_test.btf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&header), 24);
    out.write("\x01\x00\x00\x00\x00\x00\x00\x01", 8);  // a type's bytes, not strings
    out << strings;
  }
  EXPECT_TRUE(capture::BtfHasName(path.c_str(), "btf_trace_sched_switch"));
  EXPECT_TRUE(capture::BtfHasName(path.c_str(), "int"));
  EXPECT_TRUE(capture::BtfHasName(path.c_str(), "task_struct"));
  EXPECT_FALSE(capture::BtfHasName(path.c_str(), "sched_switch"));  // a part of a name
  EXPECT_FALSE(capture::BtfHasName(path.c_str(), "btf_trace_sched_switc"));
  EXPECT_FALSE(capture::BtfHasName(path.c_str(), "btf_trace_sched_wakeup"));
  // A header that claims more strings than the file holds: no answer, no fault.
  header.str_len += 4096;
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.write(reinterpret_cast<const char*>(&header), 24);
  }
  EXPECT_FALSE(capture::BtfHasName(path.c_str(), "int"));
  header.str_len -= 4096;
  header.magic = 0x9FEB;  // another byte order, or not BTF
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.write(reinterpret_cast<const char*>(&header), 2);
  }
  EXPECT_FALSE(capture::BtfHasName(path.c_str(), "int"));
  std::remove(path.c_str());
  EXPECT_FALSE(capture::BtfHasName("/nonexistent/vmlinux", "int"));

  // The running kernel's, when it has BTF: every kernel with tp_btf names sched_switch's.
  if (access("/sys/kernel/btf/vmlinux", R_OK) == 0) {
    EXPECT_TRUE(capture::BtfHasName("/sys/kernel/btf/vmlinux", "task_struct"));
    EXPECT_FALSE(capture::BtfHasName("/sys/kernel/btf/vmlinux", "no_such_type_in_any_kernel"));
  }
}

}  // namespace
}  // namespace stacksym
