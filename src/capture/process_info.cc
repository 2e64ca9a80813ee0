#include "capture/process_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace stacksym::capture {
namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// A small /proc file, whole (the first 64 KiB: a cgroup file is a few lines).
std::string ReadSmallFile(const std::string& path) {
  std::string text;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  while (text.size() < (64u << 10)) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

}  // namespace

std::string ContainerIdFromCgroup(std::string_view text) {
  std::string_view found;
  // Every run of exactly 64 hex digits bounded by a non-hex character (or the line's ends);
  // the last one wins: the innermost cgroup names the container.
  size_t i = 0;
  while (i < text.size()) {
    if (!IsHex(text[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && IsHex(text[i])) ++i;
    bool bounded_before = start == 0 || text[start - 1] == '/' || text[start - 1] == '-' ||
                          text[start - 1] == ':' || text[start - 1] == '\n';
    if (i - start == 64 && bounded_before) found = text.substr(start, 64);
  }
  return std::string(found);
}

ProfileProcess ReadProcessInfo(pid_t pid) {
  ProfileProcess info;
  info.pid = static_cast<uint32_t>(pid);
  std::string base = "/proc/" + std::to_string(pid);
  char exe[4096];
  ssize_t n = readlink((base + "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n > 0) {
    info.executable.assign(exe, static_cast<size_t>(n));
    constexpr std::string_view kDeleted = " (deleted)";
    if (info.executable.size() > kDeleted.size() && info.executable.ends_with(kDeleted)) {
      info.executable.resize(info.executable.size() - kDeleted.size());
    }
  }
  info.name = ReadSmallFile(base + "/comm");
  while (!info.name.empty() && info.name.back() == '\n') info.name.pop_back();
  info.container_id = ContainerIdFromCgroup(ReadSmallFile(base + "/cgroup"));
  return info;
}

}  // namespace stacksym::capture
