#include "interp/python/memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace stacksym::interp::python {

Result<std::unique_ptr<ProcessMemory>> ProcessMemory::Open(uint32_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/mem";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  return std::unique_ptr<ProcessMemory>(new ProcessMemory(pid, fd));
}

ProcessMemory::~ProcessMemory() { ::close(fd_); }

bool ProcessMemory::Read(uint64_t address, std::span<uint8_t> out) {
  if (out.empty()) return true;
  // Addresses at or above 2^63 are kernel addresses (and negative file offsets to pread).
  if (address >> 63 != 0 || out.size() > (uint64_t{1} << 62)) return false;
  ssize_t n = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(address));
  if (n == static_cast<ssize_t>(out.size())) return true;
  // A process that has exited (or lost its address space) reads as end of file, or ESRCH.
  if (n == 0 || (n < 0 && errno == ESRCH)) gone_ = true;
  return false;
}

void BufferMemory::Add(uint64_t address, std::vector<uint8_t> bytes) {
  if (bytes.empty()) return;
  uint64_t end = address + bytes.size();
  if (end < address) return;  // wraps around
  // Cut the regions the new one overlaps down to what it leaves of them.
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> kept;
  for (auto it = regions_.begin(); it != regions_.end();) {
    uint64_t start = it->first, stop = it->first + it->second.size();
    if (stop <= address || start >= end) {
      ++it;
      continue;
    }
    if (start < address)
      kept.emplace_back(
          start,
          std::vector<uint8_t>(it->second.begin(),
                               it->second.begin() + static_cast<std::ptrdiff_t>(address - start)));
    if (stop > end)
      kept.emplace_back(
          end, std::vector<uint8_t>(it->second.begin() + static_cast<std::ptrdiff_t>(end - start),
                                    it->second.end()));
    it = regions_.erase(it);
  }
  for (auto& [start, b] : kept) regions_[start] = std::move(b);
  regions_[address] = std::move(bytes);
}

bool BufferMemory::Read(uint64_t address, std::span<uint8_t> out) {
  if (out.empty()) return true;
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return false;
  --it;
  uint64_t offset = address - it->first;
  if (offset >= it->second.size() || out.size() > it->second.size() - offset) return false;
  std::memcpy(out.data(), it->second.data() + offset, out.size());
  return true;
}

}  // namespace stacksym::interp::python
