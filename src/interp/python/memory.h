// Reading another process's memory: the interface the Python readers take, its production
// implementation over /proc/PID/mem, and a stand-in over byte buffers (tests, the fuzzer).
//
//   auto memory = ProcessMemory::Open(pid);
//   uint64_t value = 0;
//   if (!ReadValue(**memory, address, &value)) ...   // unmapped, or the process is gone
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::interp::python {

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Reads out.size() bytes at `address`: false when any of them cannot be read.
  virtual bool Read(uint64_t address, std::span<uint8_t> out) = 0;
  // The last failed Read failed because the process is gone (not for a bad address).
  virtual bool gone() const { return false; }
};

template <class T>
bool ReadValue(MemoryReader& memory, uint64_t address, T* out) {
  uint8_t bytes[sizeof(T)];
  if (!memory.Read(address, bytes)) return false;
  std::memcpy(out, bytes, sizeof(T));
  return true;
}

// /proc/PID/mem, opened once: the bytes as the process has them when read.
class ProcessMemory : public MemoryReader {
 public:
  static Result<std::unique_ptr<ProcessMemory>> Open(uint32_t pid);
  ~ProcessMemory() override;
  bool Read(uint64_t address, std::span<uint8_t> out) override;
  bool gone() const override { return gone_; }
  uint32_t pid() const { return pid_; }

 private:
  ProcessMemory(uint32_t pid, int fd) : pid_(pid), fd_(fd) {}
  uint32_t pid_;
  int fd_;
  bool gone_ = false;
};

// Regions of bytes at addresses; a read must lie within one region.
class BufferMemory : public MemoryReader {
 public:
  // A region that overlaps an earlier one replaces it where they meet: later regions win.
  void Add(uint64_t address, std::vector<uint8_t> bytes);
  bool Read(uint64_t address, std::span<uint8_t> out) override;

 private:
  std::map<uint64_t, std::vector<uint8_t>> regions_;  // by start address
};

}  // namespace stacksym::interp::python
