#include "cache/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "base/hex.h"
#include "base/write_all.h"

namespace stacksym::cache {
namespace {

Result<void> WriteAllAt(int fd, uint64_t offset, std::span<const std::span<const uint8_t>> pieces,
                        const std::string& path) {
  if (int err = WriteAll(fd, pieces, offset); err != 0) return ErrnoError(err, "write " + path);
  return {};
}

uint64_t SizeOf(std::span<const std::span<const uint8_t>> pieces) {
  uint64_t size = 0;
  for (std::span<const uint8_t> piece : pieces) size += piece.size();
  return size;
}

}  // namespace

AtomicFile::AtomicFile(std::string dir, std::string path, Durability durability)
    : dir_(std::move(dir)), path_(std::move(path)), durability_(durability) {
  std::random_device random;
  tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." +
         HexU32Padded(static_cast<uint32_t>(random()));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) opened_ = ErrnoError(errno, "create " + tmp_);
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  if (background_.joinable()) background_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (opened_ && !renamed_) ::unlink(tmp_.c_str());
}

void AtomicFile::WriteInBackground(uint64_t offset, std::vector<std::span<const uint8_t>> pieces) {
  if (fd_ < 0 || background_.joinable()) return;
  background_ = std::thread([this, offset, pieces = std::move(pieces)] {
    background_result_ = WriteAllAt(fd_, offset, pieces, tmp_);
    // The device can take the bytes while the rest is produced: Commit's fsync then waits
    // for less.
    if (background_result_) {
      ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(SizeOf(pieces)),
                        SYNC_FILE_RANGE_WRITE);
    }
  });
}

Result<void> AtomicFile::Commit(std::span<const std::span<const uint8_t>> pieces,
                                size_t first_written, size_t end_written) {
  if (!opened_) return opened_;
  if (background_.joinable()) background_.join();
  if (fd_ < 0) return Error(ErrorCode::kIo, "committed twice: " + tmp_);
  Result<void> r = background_result_;
  end_written = std::min(end_written, pieces.size());
  first_written = std::min(first_written, end_written);
  if (r) r = WriteAllAt(fd_, 0, pieces.first(first_written), tmp_);
  if (r) {
    r = WriteAllAt(fd_, SizeOf(pieces.first(end_written)), pieces.subspan(end_written), tmp_);
  }
  const bool sync = durability_ == Durability::kSynced;
  if (r && sync && ::fsync(fd_) != 0) r = ErrnoError(errno, "fsync " + tmp_);
  if (::close(fd_) != 0 && r) r = ErrnoError(errno, "close " + tmp_);
  fd_ = -1;
  if (r && ::rename(tmp_.c_str(), path_.c_str()) != 0) r = ErrnoError(errno, "rename " + tmp_);
  if (!r) return r;  // the destructor removes the temporary
  renamed_ = true;
  if (!sync) return {};
  int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return {};
}

}  // namespace stacksym::cache
