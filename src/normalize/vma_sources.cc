#include "normalize/vma_sources.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace stacksym::normalize {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

namespace {

Error SourceErrno(int err, pid_t pid, const char* what) {
  std::string file = "/proc/" + std::to_string(pid) + "/maps";
  if (err == ESRCH || err == ENOENT) {
    return Error(ErrorCode::kNotFound, std::string("process has exited (") + what + ")")
        .WithFile(file);
  }
  return ErrnoError(err, what).WithFile(file);
}

}  // namespace

Result<UniqueFd> OpenProcMaps(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SourceErrno(errno, pid, "open");
  return UniqueFd(fd);
}

bool ProcessAlive(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  // "PID (COMM) STATE ...": COMM may hold ')' so take the last one.
  const char* paren = strrchr(buf, ')');
  if (paren == nullptr || paren[1] != ' ') return false;
  char state = paren[2];
  return state != 'Z' && state != 'X' && state != 'x';
}

// ---------------------------------------------------------------------------------------------

IoctlVmaSource::IoctlVmaSource(pid_t pid, UniqueFd fd, const VmaSourceOptions& options)
    : pid_(pid), fd_(std::move(fd)), options_(options), name_(PATH_MAX + 64) {}

Result<bool> IoctlVmaSource::FindCoveringOrNext(uint64_t addr, Vma* out) {
  return Query(addr, true, options_.kernel_build_ids, out);
}

Result<bool> IoctlVmaSource::Query(uint64_t addr, bool want_name, bool want_build_id, Vma* out) {
  normalize::procmap_query q;
  std::memset(&q, 0, sizeof(q));
  q.size = sizeof(q);
  q.query_flags = normalize::kQueryCoveringOrNextVma;
  if (options_.executable_only) q.query_flags |= normalize::kQueryVmaExecutable;
  q.query_addr = addr;
  if (want_name) {
    q.vma_name_addr = reinterpret_cast<uintptr_t>(name_.data());
    q.vma_name_size = static_cast<uint32_t>(name_.size());
  }
  if (want_build_id) {
    q.build_id_addr = reinterpret_cast<uintptr_t>(build_id_);
    q.build_id_size = sizeof(build_id_);
  }
  ++lookups_;
  if (ioctl(fd_.get(), normalize::kProcmapQuery, &q) != 0) {
    int err = errno;
    if (err == ENOENT) return false;  // nothing at or above addr
    if (err == ENOTTY) return Error(ErrorCode::kUnsupported, "kernel lacks PROCMAP_QUERY");
    return SourceErrno(err, pid_, "ioctl(PROCMAP_QUERY)");
  }
  out->start = q.vma_start;
  out->end = q.vma_end;
  out->offset = q.vma_offset;
  out->inode = q.inode;
  out->dev = (q.dev_major | q.dev_minor) != 0 ? makedev(q.dev_major, q.dev_minor) : 0;
  out->perms = static_cast<uint32_t>(q.vma_flags & 0xf);
  std::string_view name;
  if (q.vma_name_size > 0 && q.vma_name_size <= name_.size()) {
    name = std::string_view(name_.data(), q.vma_name_size - 1);  // size counts the NUL
  }
  out->deleted = false;
  constexpr std::string_view kDeleted = " (deleted)";
  if (out->file_backed() && name.size() > kDeleted.size() && name.ends_with(kDeleted)) {
    name.remove_suffix(kDeleted.size());
    out->deleted = true;
  }
  out->name = name;
  out->has_kernel_build_id = want_build_id;
  out->kernel_build_id =
      want_build_id ? std::span<const uint8_t>(build_id_, std::min<size_t>(q.build_id_size, 64))
                    : std::span<const uint8_t>();
  return true;
}

// ---------------------------------------------------------------------------------------------

TextVmaSource::TextVmaSource(pid_t pid, UniqueFd fd, const VmaSourceOptions& options)
    : pid_(pid), fd_(std::move(fd)) {
  parse_options_.executable_only = options.executable_only;
}

void TextVmaSource::Rewind() {
  filled_ = parsed_ = 0;
  file_pos_ = 0;
  eof_ = false;
  entries_.clear();
}

Result<void> TextVmaSource::ReadMore() {
  // 16 KiB chunks: small enough that low addresses (the main binary) need one read, large
  // enough that a full read of a big process costs few syscalls.
  constexpr size_t kChunk = 16384;
  if (buf_.size() < filled_ + kChunk) buf_.resize(std::max(buf_.size() * 2, filled_ + kChunk));
  ssize_t n;
  do {
    n = pread(fd_.get(), buf_.data() + filled_, kChunk, static_cast<off_t>(file_pos_));
  } while (n < 0 && errno == EINTR);
  ++reads_;
  if (n < 0) return SourceErrno(errno, pid_, "read");
  if (n == 0) {
    eof_ = true;
    // A live process always has VMAs: an empty file means its mm is gone.
    if (file_pos_ == 0) {
      return Error(ErrorCode::kNotFound, "process has exited (empty maps)")
          .WithFile("/proc/" + std::to_string(pid_) + "/maps");
    }
  }
  filled_ += static_cast<size_t>(n);
  file_pos_ += static_cast<uint64_t>(n);
  parsed_ = normalize::ParseMapsLines(std::span<char>(buf_.data(), filled_), parsed_, eof_,
                                      parse_options_, &entries_, &stats_);
  return {};
}

Result<bool> TextVmaSource::FindCoveringOrNext(uint64_t addr, Vma* out) {
  while (!eof_ && (entries_.empty() || entries_.back().end <= addr)) {
    Result<void> r = ReadMore();
    if (!r) return r.error();
  }
  auto it = std::partition_point(entries_.begin(), entries_.end(),
                                 [addr](const normalize::MapsEntry& e) { return e.end <= addr; });
  if (it == entries_.end()) {
    // The file ended below addr; if the process died mid-read the list was cut short.
    if (!ProcessAlive(pid_)) {
      return Error(ErrorCode::kNotFound, "process has exited (maps ended early)");
    }
    return false;
  }
  out->start = it->start;
  out->end = it->end;
  out->offset = it->offset;
  out->dev = it->dev;
  out->inode = it->inode;
  out->perms = it->perms;
  out->deleted = it->deleted;
  out->name = normalize::MapsNameOf(*it, std::span<const char>(buf_.data(), filled_));
  out->has_kernel_build_id = false;
  out->kernel_build_id = {};
  return true;
}

// ---------------------------------------------------------------------------------------------

}  // namespace stacksym::normalize

namespace stacksym {

// normalize.h's.
const char* VmaSourceKindName(VmaSourceKind kind) {
  switch (kind) {
    case VmaSourceKind::kAuto:
      return "auto";
    case VmaSourceKind::kIoctl:
      return "ioctl";
    case VmaSourceKind::kText:
      return "text";
  }
  return "unknown";
}

std::optional<VmaSourceKind> ParseVmaSourceKind(std::string_view name) {
  if (name == "auto") return VmaSourceKind::kAuto;
  if (name == "ioctl") return VmaSourceKind::kIoctl;
  if (name == "text") return VmaSourceKind::kText;
  return std::nullopt;
}

}  // namespace stacksym

namespace stacksym::normalize {

bool ProcmapQuerySupported() {
  static const bool supported = [] {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    normalize::procmap_query q;
    std::memset(&q, 0, sizeof(q));
    q.size = sizeof(q);
    q.query_flags = normalize::kQueryCoveringOrNextVma;
    q.query_addr = 0;
    int rc = ioctl(fd, normalize::kProcmapQuery, &q);
    int err = errno;
    close(fd);
    return rc == 0 || err == ENOENT;  // ENOTTY (or EINVAL on odd kernels): not supported
  }();
  return supported;
}

Result<std::unique_ptr<VmaSource>> OpenVmaSource(pid_t pid, VmaSourceKind kind,
                                                 const VmaSourceOptions& options) {
  if (pid <= 0) return Error(ErrorCode::kInvalidArgument, "pid must be positive");
  if (kind == VmaSourceKind::kAuto) {
    kind = ProcmapQuerySupported() ? VmaSourceKind::kIoctl : VmaSourceKind::kText;
  } else if (kind == VmaSourceKind::kIoctl && !ProcmapQuerySupported()) {
    return Error(ErrorCode::kUnsupported,
                 "this kernel lacks the PROCMAP_QUERY ioctl (Linux 6.11+); use the text source");
  }
  Result<UniqueFd> fd = OpenProcMaps(pid);
  if (!fd) return fd.error();
  if (kind == VmaSourceKind::kIoctl) {
    return std::unique_ptr<VmaSource>(new IoctlVmaSource(pid, std::move(*fd), options));
  }
  return std::unique_ptr<VmaSource>(new TextVmaSource(pid, std::move(*fd), options));
}

Reason ReasonForError(const Error& error) {
  switch (error.code) {
    case ErrorCode::kNotFound:
      return Reason::kProcessGone;
    case ErrorCode::kPermission:
      return Reason::kAccessDenied;
    default:
      return Reason::kFileUnavailable;
  }
}

std::string MapFilesPath(pid_t pid, uint64_t vma_start, uint64_t vma_end) {
  char path[96];
  snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid),
           static_cast<unsigned long long>(vma_start), static_cast<unsigned long long>(vma_end));
  return path;
}

std::string ProcRootPath(pid_t pid, std::string_view path) {
  std::string out = "/proc/" + std::to_string(pid) + "/root";
  if (path.empty() || path.front() != '/') out.push_back('/');
  out.append(path);
  return out;
}

}  // namespace stacksym::normalize
