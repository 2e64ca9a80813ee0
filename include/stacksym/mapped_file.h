// MappedFile — a read-only, private mmap of a whole file, plus its identity.
//
// Parsers read the mapping zero-copy through ByteCursor. Identity (dev, inode, size, mtime)
// is the key caches use to tell whether a path still names the same file. Move-only; the
// mapping lives until the object dies. Files that cannot be mmapped (procfs, pipes) are read
// into an owned buffer instead, transparently.
//
//   Result<MappedFile> f = MappedFile::Open("/usr/lib/x86_64-linux-gnu/libc.so.6");
//   std::span<const uint8_t> bytes = f->bytes();
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stacksym/result.h"

struct stat;

namespace stacksym {

struct FileIdentity {
  uint64_t dev = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of a file from its stat(2) result.
FileIdentity FileIdentityOf(const struct ::stat& st);

class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);
  // Maps an already open descriptor (not closed by this call).
  static Result<MappedFile> FromFd(int fd, const std::string& path_for_errors);
  // Owns a copy of `bytes` (for in-memory images such as a process's vDSO, and fuzzing).
  static MappedFile FromBytes(std::span<const uint8_t> bytes, std::string name);
  // Takes `bytes` over without a copy (an image decoded in memory, such as MiniDebugInfo's).
  static MappedFile FromOwned(std::vector<uint8_t> bytes, std::string name);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  const FileIdentity& identity() const { return identity_; }
  // A read-only mapping of the file, whose pages may be dropped (MADV_DONTNEED) and are read
  // again from the page cache on next use; false for the owned copy.
  bool is_mapping() const { return mapped_; }
  // Drops the mapping's pages from this process's resident set (MADV_DONTNEED); they stay in
  // the page cache and are read again on next use. A long-lived process (the agent) that
  // keeps files open calls it between uses. Nothing for an owned copy.
  void ReleasePages() const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;         // true: munmap on destruction
  std::vector<uint8_t> owned_;  // fallback storage when not mapped
  std::string path_;
  FileIdentity identity_;
};

}  // namespace stacksym
