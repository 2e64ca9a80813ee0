#include "stacksym/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace stacksym {

FileIdentity FileIdentityOf(const struct ::stat& st) {
  FileIdentity id;
  id.dev = st.st_dev;
  id.inode = st.st_ino;
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open").WithFile(path);
  Result<MappedFile> result = FromFd(fd, path);
  ::close(fd);
  return result;
}

Result<MappedFile> MappedFile::FromFd(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(errno, "cannot stat").WithFile(path);
  if (S_ISDIR(st.st_mode))
    return Error(ErrorCode::kInvalidArgument, "is a directory").WithFile(path);
  MappedFile file;
  file.path_ = path;
  file.identity_ = FileIdentityOf(st);
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      file.data_ = static_cast<const uint8_t*>(p);
      file.size_ = static_cast<size_t>(st.st_size);
      file.mapped_ = true;
      return file;
    }
  }
  // Not mappable, or procfs (size 0 but has content), or empty: read it, bounded to keep a hostile
  // source finite.
  constexpr size_t kMaxRead = size_t{1} << 32;
  uint8_t buf[65536];
  while (file.owned_.size() < kMaxRead) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "cannot read").WithFile(path);
    }
    if (n == 0) break;
    file.owned_.insert(file.owned_.end(), buf, buf + n);
  }
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  return file;
}

MappedFile MappedFile::FromOwned(std::vector<uint8_t> bytes, std::string name) {
  MappedFile file;
  file.owned_ = std::move(bytes);
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  file.path_ = std::move(name);
  file.identity_.size = file.size_;
  return file;
}

MappedFile MappedFile::FromBytes(std::span<const uint8_t> bytes, std::string name) {
  MappedFile file;
  file.owned_.assign(bytes.begin(), bytes.end());
  file.data_ = file.owned_.data();
  file.size_ = file.owned_.size();
  file.path_ = std::move(name);
  file.identity_.size = file.size_;
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this == &other) return *this;
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  mapped_ = std::exchange(other.mapped_, false);
  owned_ = std::move(other.owned_);
  size_ = std::exchange(other.size_, 0);
  data_ = std::exchange(other.data_, nullptr);
  if (!mapped_) data_ = owned_.data();
  path_ = std::move(other.path_);
  identity_ = other.identity_;
  return *this;
}

void MappedFile::ReleasePages() const {
  if (mapped_ && size_ > 0) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace stacksym
