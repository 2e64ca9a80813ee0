// What a profile store labels a process's samples with, read from /proc while it lives:
// its executable, its name and the container it runs in (ProfileProcess).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "stacksym/profile.h"

namespace stacksym::capture {

// /proc/PID/exe, /proc/PID/comm and /proc/PID/cgroup; a field that cannot be read stays empty
// (the process exited, or a kernel thread has no executable).
ProfileProcess ReadProcessInfo(pid_t pid);

// The container ID in the text of /proc/PID/cgroup (cgroup v1 or v2): the last 64-hex-digit
// name in any line's path, as docker (`/docker/ID`, `docker-ID.scope`), containerd and cri-o
// (`cri-containerd-ID.scope`, `crio-ID.scope`), podman (`libpod-ID.scope`) and Kubernetes
// (`/kubepods/.../ID`) name them. Empty outside a container.
std::string ContainerIdFromCgroup(std::string_view cgroup_text);

}  // namespace stacksym::capture
