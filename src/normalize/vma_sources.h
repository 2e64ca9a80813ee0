// VMA sources: what the Normalizer's walk reads a process's VMAs through (VmaSource, and its
// two implementations: PROCMAP_QUERY ioctls and the text of /proc/PID/maps), and the /proc
// paths the library opens a mapping's file by. Internal to the library: the public
// normalize.h offers the Normalizer over them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normalize/maps_text.h"
#include "normalize/procmap_query.h"
#include "stacksym/normalize.h"

namespace stacksym::normalize {

// Whether this kernel supports PROCMAP_QUERY (probed once per process on /proc/self/maps).
bool ProcmapQuerySupported();

// VMA permission bits (Vma::perms).
inline constexpr uint32_t kVmaRead = 1;
inline constexpr uint32_t kVmaWrite = 2;
inline constexpr uint32_t kVmaExec = 4;
inline constexpr uint32_t kVmaShared = 8;

// One virtual memory area of a process. Views point into the source's buffers and stay valid
// until the next call on that source.
struct Vma {
  uint64_t start = 0;
  uint64_t end = 0;      // exclusive
  uint64_t offset = 0;   // file offset mapped at `start` (0 when not file-backed)
  uint64_t dev = 0;      // makedev(major, minor) of the backing file, 0 if none
  uint64_t inode = 0;    // 0 if not file-backed
  uint32_t perms = 0;    // kVma* bits
  bool deleted = false;  // the backing file was unlinked (" (deleted)" stripped from name)
  // Path as the process sees it, or "[vdso]", "[heap]", "[stack]", "[anon:NAME]", or empty.
  std::string_view name;
  // Set only by the ioctl source when it was asked for build IDs: the kernel's answer.
  bool has_kernel_build_id = false;          // true: kernel_build_id is the kernel's answer
  std::span<const uint8_t> kernel_build_id;  // empty: the kernel found none (or could not read)

  bool contains(uint64_t addr) const { return addr >= start && addr < end; }
  bool file_backed() const { return inode != 0 || dev != 0; }
};

struct VmaSourceOptions {
  bool executable_only = false;   // skip VMAs without exec permission (ioctl: kernel filter)
  bool kernel_build_ids = false;  // ioctl source: ask the kernel for each VMA's build ID
};

// Reads the VMAs of one process. Not thread-safe; one per process and thread.
class VmaSource {
 public:
  virtual ~VmaSource() = default;
  virtual VmaSourceKind kind() const = 0;
  // The VMA containing `addr`, or else the lowest one above it. Returns false when there is
  // none. Errors: ErrorCode::kNotFound when the process has gone, kPermission, kIo.
  // Addresses queried in ascending order are cheapest (the text source walks forward).
  virtual Result<bool> FindCoveringOrNext(uint64_t addr, Vma* out) = 0;
  // Number of expensive operations done so far (ioctls, or maps-file reads for text).
  virtual uint64_t lookups() const = 0;
};

// Opens /proc/PID/maps. kAuto picks PROCMAP_QUERY when supported.
Result<std::unique_ptr<VmaSource>> OpenVmaSource(pid_t pid, VmaSourceKind kind,
                                                 const VmaSourceOptions& options = {});

// The per-address Reason for an Error from a VMA source or a /proc file (process gone,
// permission denied, other I/O).
Reason ReasonForError(const Error& error);

// /proc/PID/map_files/START-END: opens the mapped file even when deleted or in another mount
// namespace (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE).
std::string MapFilesPath(pid_t pid, uint64_t vma_start, uint64_t vma_end);
// /proc/PID/root/PATH: the path in the process's own mount namespace.
std::string ProcRootPath(pid_t pid, std::string_view path);

// A file descriptor closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Opens /proc/PID/maps; errors carry kNotFound for a missing process.
Result<UniqueFd> OpenProcMaps(pid_t pid);

// One ioctl per lookup; the fd stays open for the object's life (the kernel pins the process's
// mm, so a reused pid is never confused with the original: the ioctl returns ESRCH).
class IoctlVmaSource final : public VmaSource {
 public:
  IoctlVmaSource(pid_t pid, UniqueFd fd, const VmaSourceOptions& options);
  VmaSourceKind kind() const override { return VmaSourceKind::kIoctl; }
  Result<bool> FindCoveringOrNext(uint64_t addr, Vma* out) override;
  uint64_t lookups() const override { return lookups_; }
  // The same query, asking the kernel only for what is needed: without the name (d_path) and
  // build ID it is the cheapest form, for checking a VMA the caller already knows.
  Result<bool> Query(uint64_t addr, bool want_name, bool want_build_id, Vma* out);

 private:
  pid_t pid_;
  UniqueFd fd_;
  VmaSourceOptions options_;
  uint64_t lookups_ = 0;
  std::vector<char> name_;
  uint8_t build_id_[64];
};

// Reads /proc/PID/maps lazily, in chunks, only as far as the queried addresses need (the
// kernel formats text only for what is read), parsing complete lines as they arrive.
class TextVmaSource final : public VmaSource {
 public:
  TextVmaSource(pid_t pid, UniqueFd fd, const VmaSourceOptions& options);
  VmaSourceKind kind() const override { return VmaSourceKind::kText; }
  Result<bool> FindCoveringOrNext(uint64_t addr, Vma* out) override;
  uint64_t lookups() const override { return reads_; }
  // Forget what was read; the next lookup reads the file again from the start.
  void Rewind();
  size_t malformed_lines() const { return stats_.malformed; }

 private:
  Result<void> ReadMore();

  pid_t pid_;
  UniqueFd fd_;
  normalize::MapsParseOptions parse_options_;
  std::vector<char> buf_;
  size_t filled_ = 0;
  size_t parsed_ = 0;
  uint64_t file_pos_ = 0;
  bool eof_ = false;
  uint64_t reads_ = 0;
  std::vector<normalize::MapsEntry> entries_;
  normalize::MapsParseStats stats_;
};

// Whether /proc/PID still belongs to a live (non-zombie) process.
bool ProcessAlive(pid_t pid);

}  // namespace stacksym::normalize
