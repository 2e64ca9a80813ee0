// Code objects read once per process: the recorder meets the same few hundred code objects in
// thousands of samples, and reads each from the process's memory the first time only. A failure
// is kept too, so that a bad pointer is not read again on every sample.
//
// Entries are keyed by (pid, code object address). An address can come to hold another code
// object when the first is freed (functions made at run time: lambdas, exec): an entry is read
// again when a sample's frame stands at an instruction past the cached object's code, or when
// the caller knows the object's first line and it differs. A process's entries are dropped when it
// execs or its pid is reused (ForgetProcess), and when it holds more than its bound (they are read
// again as needed).
//
//   CodeCache cache;
//   const CodeCache::Entry& e = cache.Get(pid, address, memory, layout, types, first_line);
//   if (e.code) ... e.code->qualname ...
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

#include "interp/python/code_object.h"

namespace stacksym::interp::python {

class CodeCache {
 public:
  struct Entry {
    std::shared_ptr<const CodeObject> code;  // null when it could not be read
    CodeError error = CodeError::kNone;
  };
  struct Stats {
    uint64_t lookups = 0;
    uint64_t reads = 0;    // code objects read from memory (misses, and rereads)
    uint64_t rereads = 0;  // of those, because the address held another code object
    std::array<uint64_t, kCodeErrorCount> failures{};  // reads that failed, by CodeError
  };

  explicit CodeCache(size_t max_per_process = 1 << 16) : max_per_process_(max_per_process) {}

  // The code object at `address` in process `pid`, from the cache or read through `memory`.
  // `instruction`: the code unit a frame stands at (-1: none); `first_line`, when known, the
  // co_firstlineno the sample saw at that address.
  const Entry& Get(uint32_t pid, uint64_t address, MemoryReader& memory, const Layout& layout,
                   const TypeAddresses& types, int64_t instruction = -1,
                   std::optional<int32_t> first_line = std::nullopt);
  void ForgetProcess(uint32_t pid) { processes_.erase(pid); }
  const Stats& stats() const { return stats_; }
  size_t size() const;  // entries held

 private:
  size_t max_per_process_;
  std::unordered_map<uint32_t, std::unordered_map<uint64_t, Entry>> processes_;
  Stats stats_;
};

}  // namespace stacksym::interp::python
