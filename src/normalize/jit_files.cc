// ProcessJitFiles: a process's perf map and jitdump, found through its own root.
#include "normalize/jit_files.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace stacksym::normalize {
namespace {

constexpr size_t kMaxJitFileBytes = size_t{1} << 30;

// Opens `path` below `dir_fd` as if `dir_fd` were "/" (symlinks in a container's tree stay in
// it: openat2 RESOLVE_IN_ROOT), or with openat where the kernel has no openat2 (before 5.6).
int OpenBelow(int dir_fd, const std::string& path, int flags) {
  // (openat2 refuses O_PATH with flags other than these: no O_NOCTTY, no O_NONBLOCK.)
  flags |= O_CLOEXEC | ((flags & O_PATH) != 0 ? 0 : O_NOCTTY | O_NONBLOCK);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_IN_ROOT;
  long fd = syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof(how));
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  return openat(dir_fd, path.c_str(), flags);
}

// The whole of a regular file (from its start, whatever the descriptor's position), or nullopt
// (absent, unreadable, not a regular file, too big).
std::optional<std::string> ReadWhole(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxJitFileBytes) {
    return std::nullopt;
  }
  std::string bytes;
  // The file may grow while it is read (a JIT appends): read to its end, within the bound.
  bytes.resize(static_cast<size_t>(st.st_size) + 4096);
  size_t used = 0;
  for (;;) {
    if (used == bytes.size()) {
      if (bytes.size() >= kMaxJitFileBytes) return std::nullopt;
      bytes.resize(std::min(bytes.size() * 2, kMaxJitFileBytes));
    }
    ssize_t n = pread(fd, bytes.data() + used, bytes.size() - used, static_cast<off_t>(used));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  return bytes;
}

std::string_view AsText(const std::string& s) { return s; }

// "NSpid:\t1234\t7" → 7 (the innermost namespace's pid).
std::optional<pid_t> ParseNspid(std::string_view status, bool* malformed) {
  constexpr std::string_view kKey = "NSpid:";
  size_t at = status.starts_with(kKey) ? 0 : status.find("\n" + std::string(kKey));
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = status.substr(at + (at == 0 ? 0 : 1) + kKey.size());
  line = line.substr(0, line.find('\n'));
  std::optional<pid_t> last;
  for (;;) {
    size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string_view::npos) break;
    line.remove_prefix(begin);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || v <= 0 || v > INT32_MAX ||
        (end != line.data() + line.size() && *end != ' ' && *end != '\t')) {
      *malformed = true;
      return std::nullopt;
    }
    last = static_cast<pid_t>(v);
    line.remove_prefix(static_cast<size_t>(end - line.data()));
  }
  if (!last) *malformed = true;
  return last;
}

Error ProcError(pid_t pid, const std::string& what) {
  int err = errno;
  ErrorCode code = err == EACCES || err == EPERM   ? ErrorCode::kPermission
                   : err == ENOENT || err == ESRCH ? ErrorCode::kNotFound
                                                   : ErrorCode::kIo;
  return Error(code, what + " of pid " + std::to_string(pid) + ": " + std::strerror(err));
}

Result<pid_t> NamespacedPidAt(int proc_fd, pid_t pid) {
  int fd = openat(proc_fd, "status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ProcError(pid, "/proc status");
  std::optional<std::string> status = ReadWhole(fd);
  // procfs files have no size: ReadWhole reads them to their end all the same.
  close(fd);
  if (!status) return ProcError(pid, "/proc status");
  bool malformed = false;
  std::optional<pid_t> ns = ParseNspid(AsText(*status), &malformed);
  if (malformed) {
    return Error(ErrorCode::kMalformed, "bad NSpid line")
        .WithFile("/proc/" + std::to_string(pid) + "/status");
  }
  return ns.value_or(pid);  // kernels before 4.1 have no NSpid
}

// Whether a maps line's path names a jitdump (".../jit-N.dump").
std::string_view JitdumpPathIn(std::string_view line) {
  size_t slash = line.find('/');
  if (slash == std::string_view::npos) return {};
  std::string_view path = line.substr(slash);
  std::string_view base = path.substr(path.rfind('/') + 1);
  if (!base.starts_with("jit-") || !base.ends_with(".dump")) return {};
  return path;
}

}  // namespace

Result<pid_t> NamespacedPid(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid);
  int proc_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd < 0) return ProcError(pid, "/proc");
  Result<pid_t> ns = NamespacedPidAt(proc_fd, pid);
  close(proc_fd);
  return ns;
}

Result<ProcessJitFiles> ProcessJitFiles::Open(pid_t pid) {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "invalid pid " + std::to_string(pid));
  ProcessJitFiles files;
  files.pid_ = pid;
  std::string dir = "/proc/" + std::to_string(pid);
  files.proc_fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (files.proc_fd_ < 0) return ProcError(pid, "/proc");
  Result<pid_t> ns = NamespacedPidAt(files.proc_fd_, pid);
  if (!ns) return std::move(ns).error();
  files.ns_pid_ = *ns;
  int root = openat(files.proc_fd_, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return ProcError(pid, "root directory");
  files.tmp_fd_ = OpenBelow(root, "tmp", O_PATH | O_DIRECTORY);  // none: the host's /tmp only
  close(root);
  files.OpenMappedJitdump();
  return files;
}

ProcessJitFiles ProcessJitFiles::HostOnly(pid_t pid) {
  ProcessJitFiles files;
  files.pid_ = files.ns_pid_ = pid;
  return files;
}

ProcessJitFiles::ProcessJitFiles(ProcessJitFiles&& other) noexcept { *this = std::move(other); }

ProcessJitFiles& ProcessJitFiles::operator=(ProcessJitFiles&& other) noexcept {
  if (this != &other) {
    Close();
    proc_fd_ = std::exchange(other.proc_fd_, -1);
    tmp_fd_ = std::exchange(other.tmp_fd_, -1);
    jitdump_fd_ = std::exchange(other.jitdump_fd_, -1);
    pid_ = other.pid_;
    ns_pid_ = other.ns_pid_;
    jitdump_path_ = std::move(other.jitdump_path_);
  }
  return *this;
}

ProcessJitFiles::~ProcessJitFiles() { Close(); }

void ProcessJitFiles::Close() {
  for (int* fd : {&proc_fd_, &tmp_fd_, &jitdump_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

bool ProcessJitFiles::Alive() const {
  if (proc_fd_ < 0) return false;
  // Reads of a /proc/PID directory opened before the process exited fail after (ESRCH).
  int fd = openat(proc_fd_, "stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char c;
  bool alive = read(fd, &c, 1) == 1;
  close(fd);
  return alive;
}

void ProcessJitFiles::OpenMappedJitdump() const {
  if (jitdump_fd_ >= 0 || proc_fd_ < 0) return;
  int fd = openat(proc_fd_, "maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::optional<std::string> maps = ReadWhole(fd);
  close(fd);
  if (!maps) return;
  std::string_view rest = AsText(*maps);
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    std::string_view path = JitdumpPathIn(line);
    if (path.empty()) continue;
    int root = openat(proc_fd_, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return;
    jitdump_fd_ = OpenBelow(root, std::string(path), O_RDONLY);
    close(root);
    if (jitdump_fd_ >= 0) {
      jitdump_path_ = "/proc/" + std::to_string(pid_) + "/root" + std::string(path);
    }
    return;
  }
}

JitFiles ProcessJitFiles::Read() const {
  JitFiles out;
  const std::string ns = std::to_string(ns_pid_), host = std::to_string(pid_);
  const std::string tmp = "/proc/" + host + "/root/tmp/";
  // The first candidate that reads: below the process's /tmp with each pid, then the host's.
  auto read_first = [&](const std::string& prefix, const std::string& suffix, std::string* path,
                        std::string* bytes) {
    std::vector<std::string> names = {prefix + ns + suffix};
    if (ns != host) names.push_back(prefix + host + suffix);
    for (size_t k = 0; k <= names.size(); ++k) {
      bool own = k < names.size();
      if (own && tmp_fd_ < 0) continue;
      std::string shown = own ? tmp + names[k] : "/tmp/" + prefix + host + suffix;
      int fd = own ? OpenBelow(tmp_fd_, names[k], O_RDONLY)
                   : open(shown.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) continue;
      std::optional<std::string> read = ReadWhole(fd);
      close(fd);
      if (!read) continue;
      *path = std::move(shown);
      *bytes = std::move(*read);
      return;
    }
  };
  read_first("perf-", ".map", &out.perf_map_path, &out.perf_map);
  if (jitdump_fd_ < 0 && Alive()) OpenMappedJitdump();
  std::optional<std::string> dump = jitdump_fd_ >= 0 ? ReadWhole(jitdump_fd_) : std::nullopt;
  if (dump) {
    out.jitdump_path = jitdump_path_;
    out.jitdump = std::move(*dump);
  } else {
    read_first("jit-", ".dump", &out.jitdump_path, &out.jitdump);
  }
  return out;
}

}  // namespace stacksym::normalize
