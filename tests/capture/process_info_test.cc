// ContainerIdFromCgroup against the cgroup paths each runtime writes (v1 and v2), and
// ReadProcessInfo on this very process.
#include "capture/process_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace stacksym::capture {
namespace {

const std::string kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(ContainerIdTest, EveryRuntimesPath) {
  EXPECT_EQ(ContainerIdFromCgroup("0::/system.slice/docker-" + kId + ".scope\n"), kId);
  EXPECT_EQ(
      ContainerIdFromCgroup("12:cpu,cpuacct:/docker/" + kId + "\n11:memory:/docker/" + kId + "\n"),
      kId);
  EXPECT_EQ(ContainerIdFromCgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                                  "kubepods-burstable-pod1234.slice/cri-containerd-" +
                                  kId + ".scope\n"),
            kId);
  EXPECT_EQ(ContainerIdFromCgroup("0::/kubepods/besteffort/pod5678/" + kId + "\n"), kId);
  EXPECT_EQ(ContainerIdFromCgroup("0::/machine.slice/libpod-" + kId + ".scope/container\n"), kId);
  EXPECT_EQ(ContainerIdFromCgroup("0::/system.slice/crio-" + kId + ".scope\n"), kId);
}

TEST(ContainerIdTest, NoneOutsideAContainer) {
  EXPECT_EQ(ContainerIdFromCgroup("0::/user.slice/user-0.slice/session-1.scope\n"), "");
  EXPECT_EQ(ContainerIdFromCgroup("0::/\n"), "");
  EXPECT_EQ(ContainerIdFromCgroup(""), "");
  // 63 or 65 hex digits are not an ID, nor are 64 glued to other letters.
  EXPECT_EQ(ContainerIdFromCgroup("0::/docker/" + kId.substr(1) + "\n"), "");
  EXPECT_EQ(ContainerIdFromCgroup("0::/docker/" + kId + "a\n"), "");
  EXPECT_EQ(ContainerIdFromCgroup("0::/x" + kId + "\n"), "");
}

TEST(ProcessInfoTest, ThisProcess) {
  ProfileProcess me = ReadProcessInfo(getpid());
  EXPECT_EQ(me.pid, static_cast<uint32_t>(getpid()));
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(me.executable, std::string(exe, static_cast<size_t>(n)));
  EXPECT_FALSE(me.name.empty());
  EXPECT_EQ(me.name.find('\n'), std::string::npos);
  ProfileProcess gone = ReadProcessInfo(0x3fffffff);
  EXPECT_TRUE(gone.executable.empty());
  EXPECT_TRUE(gone.name.empty());
}

}  // namespace
}  // namespace stacksym::capture
