// The two VmaSource implementations: PROCMAP_QUERY ioctls and the text of /proc/PID/maps.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "normalize/maps_text.h"
#include "normalize/procmap_query.h"
#include "stacksym/normalize.h"

namespace stacksym {

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
  maps_text::ParseOptions parse_options_;
  std::vector<char> buf_;
  size_t filled_ = 0;
  size_t parsed_ = 0;
  uint64_t file_pos_ = 0;
  bool eof_ = false;
  uint64_t reads_ = 0;
  std::vector<maps_text::Entry> entries_;
  maps_text::ParseStats stats_;
};

// Whether /proc/PID still belongs to a live (non-zombie) process.
bool ProcessAlive(pid_t pid);

}  // namespace stacksym
